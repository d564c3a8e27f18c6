"""Debezium's column rules of the relational sources: `column.include.list` / `column.exclude.list`,
`column.mask.with.<N>.chars`, `column.mask.hash.[v2.]<algorithm>.with.salt.<salt>`, `column.truncate.to.<N>.chars`
and `message.key.columns`.

Regexes match a whole qualified name, case-insensitively (as Debezium's): column regexes `<schema>.<table>.<column>`
(PostgreSQL) or `<database>.<table>.<column>` (MySQL/MariaDB); `message.key.columns` is
`<table regex>:<column>,<column>;…`, the table part matched against `<schema>.<table>` (`<database>.<table>`). A
masked column's every value becomes N `*` under a plain string schema; a truncated one keeps at most N characters.
Which columns a source masks or truncates is its own call (string-valued ones; PostgreSQL truncates only the
character types, as Debezium does). A hashed column's value becomes the lowercase hex of digest(salt + value) (v1: the
value as Java serializes a String, v2: its UTF-8; `connectors/core/hashing.py`), cut to the column's declared length
when it has one; only character columns are hashed (CHAR/VARCHAR/TEXT-like, as Debezium's `MaskStrings`), others
pass unchanged. The salt is a `Secret`.

A column several rules name gets one of them, the one that hides most: a `*` mask, else a hash, else a truncation.
(Debezium applies the first rule of the list truncate, mask, hash v1, hash v2 that names the column, so there a
broad truncation rule would leave a column a hash or mask names in clear.) Among hash rules v1's come first, then
in the order given, as Debezium's.

The rule applied also marks the field's schema, as Debezium's column mappers do: parameter `masked` = `true` for a
mask or hash, `truncateLength` = N for a truncation when the column's declared length is unknown or longer than N
(`StringRule.parameters`, added after the schema's own). Only the rule whose value change is applied marks it: a
column a rule names but does not change (a hash rule on a non-character column) has no parameter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connectors import ConnectorError
from connectors.core import hashing
from connectors.secrets import MASK, Secret

MASK_PROPERTY = re.compile(r"^column\.mask\.with\.(\d+)\.chars$")
TRUNCATE_PROPERTY = re.compile(r"^column\.truncate\.to\.(\d+)\.chars$")
HASH_PREFIX = "column.mask.hash."
HASH_PROPERTY = re.compile(
    r"^column\.mask\.hash\.(?P<v2>v2\.)?(?P<algorithm>[^.]+)\.with\.salt\.(?P<salt>.+)$", re.DOTALL)


def parse_key_columns(raw: Any) -> dict[str, tuple[str, ...]]:
    """`message.key.columns`: `<table regex>:<col>,<col>;<table regex>:<col>` → {table regex: columns}."""
    out: dict[str, tuple[str, ...]] = {}
    for part in str(raw).split(";"):
        part = part.strip()
        if not part:
            continue
        table, sep, columns = part.partition(":")
        names = tuple(c.strip() for c in columns.split(",") if c.strip())
        if not sep or not table.strip() or not names:
            raise ValueError(f"expected <table>:<column>,<column>;…, got {part!r}")
        for pattern in (table.strip(), *names):
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"\"{pattern}\" is not a valid regular expression ({error})") from None
        out[table.strip()] = names
    return out


def length_rule(prop: str) -> tuple[str, int] | None:
    """For `column.mask.with.N.chars` / `column.truncate.to.N.chars`: ("mask" | "truncate", N); None for any other
    property (its value is a list of column regexes)."""
    match = MASK_PROPERTY.match(prop) or TRUNCATE_PROPERTY.match(prop)
    if match is None:
        return None
    return ("mask" if prop.startswith("column.mask") else "truncate"), int(match.group(1))


@dataclass(frozen=True)
class ColumnHash:
    """One `column.mask.hash[.v2].<algorithm>.with.salt.<salt>` property: its columns' values are hashed."""

    algorithm: str  # Java's MessageDigest name, as given
    salt: Secret
    version: int  # 1 or 2
    columns: tuple[str, ...]  # column regexes

    def property_name(self, *, redact: bool = True) -> str:
        salt = MASK if redact else self.salt.reveal()
        return f"{HASH_PREFIX}{'v2.' if self.version == 2 else ''}{self.algorithm}.with.salt.{salt}"

    def hasher(self) -> Callable[[str], str]:
        return hashing.string_hasher(self.algorithm, self.salt.reveal(), self.version)


def is_hash_property(prop: str) -> bool:
    return prop.startswith(HASH_PREFIX)


def shown_hash_property(prop: str) -> str:
    """The property's name with its salt masked (a malformed name: masked after the prefix), for problems and logs."""
    match = HASH_PROPERTY.match(prop)
    if match is None:
        return HASH_PREFIX + MASK
    return f"{HASH_PREFIX}{match.group('v2') or ''}{match.group('algorithm')}.with.salt.{MASK}"


def hash_rule(prop: str, patterns: tuple[str, ...]) -> ColumnHash:
    """A `column.mask.hash.*` property (`is_hash_property`) with its column regexes (parsed by the caller); ValueError
    when the name or the algorithm is wrong. Messages never hold the salt: the caller prefixes them with
    `shown_hash_property(prop)`."""
    match = HASH_PROPERTY.match(prop)
    if match is None:
        raise ValueError("expected column.mask.hash.<algorithm>.with.salt.<salt> or "
                         "column.mask.hash.v2.<algorithm>.with.salt.<salt>")
    algorithm = match.group("algorithm")
    if hashing.digest_name(algorithm) is None:
        raise ValueError(f"unknown hash algorithm {algorithm!r}; use a Java MessageDigest name such as SHA-256, "
                         "SHA-512, SHA3-256 or MD5")
    if not patterns:
        raise ValueError("list at least one column regex to hash")
    return ColumnHash(algorithm, Secret(match.group("salt")), 2 if match.group("v2") else 1, tuple(patterns))


MASKED_PARAMETERS = (("masked", "true"),)


@dataclass(frozen=True)
class StringRule:
    """What one column rule does to a string column: its values' converter and the parameters it adds to the field's
    schema (Debezium's `ColumnMapper.alterFieldSchema`: `masked` for a mask or a hash, `truncateLength` for a
    truncation that can cut). A mask also makes the schema a plain string (the source's call)."""

    kind: str  # "mask", "hash" or "truncate"
    convert: Callable[[Any], Any]
    parameters: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ColumnRules:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    masks: Mapping[str, int] = field(default_factory=dict)  # column regex -> number of '*'
    truncates: Mapping[str, int] = field(default_factory=dict)  # column regex -> length
    key_columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # table regex -> columns
    hashes: Sequence[ColumnHash] = ()

    def captures(self, qualified_column: str) -> bool:
        if self.include:
            return any(_matches(p, qualified_column) for p in self.include)
        return not any(_matches(p, qualified_column) for p in self.exclude)

    def mask_length(self, qualified_column: str) -> int | None:
        return _last_match(self.masks, qualified_column)

    def truncate_length(self, qualified_column: str) -> int | None:
        return _last_match(self.truncates, qualified_column)

    def hash_for(self, qualified_column: str) -> ColumnHash | None:
        for rule in sorted(self.hashes, key=lambda rule: rule.version):  # stable: config order within a version
            if any(_matches(p, qualified_column) for p in rule.columns):
                return rule
        return None

    def key_for(self, qualified_table: str) -> tuple[str, ...] | None:
        for pattern, columns in self.key_columns.items():
            if _matches(pattern, qualified_table):
                return columns
        return None

    def key_of(self, qualified_table: str, captured: Sequence[str]) -> tuple[str, ...] | None:
        """The key columns `message.key.columns` gives the table, among its `captured` columns: in the order the
        property names them; a name is also a regex matched whole and case-insensitively (as Debezium's), the
        columns it matches in table order. None when no rule names the table. A named column that matches no captured
        column is a ConnectorError naming it."""
        named = self.key_for(qualified_table)
        if named is None:
            return None
        chosen: list[str] = []
        missing = []
        for name in named:
            found = [c for c in captured if c == name] or [c for c in captured if _matches(name, c)]
            if not found:
                missing.append(name)
            chosen.extend(c for c in found if c not in chosen)
        if missing:
            raise ConnectorError(f"message.key.columns names {', '.join(missing)} for {qualified_table}, which has no "
                                 "such captured column (check the name and column.include/exclude.list)")
        return tuple(chosen)

    def string_rule(self, qualified_column: str, convert: Callable[[Any], Any], *, hashable: bool = False,
                    truncatable: bool = True, length: int | None = None) -> StringRule | None:
        """The rule a string column gets (None: none names it), `convert` being its converter so far. A hash applies
        only to a `hashable` (character) column and is cut to its declared `length` (None: none declared); a
        truncation only to a `truncatable` one, and marks the schema only when it can cut (`length` unknown or
        longer), as Debezium's TruncateStrings."""
        masked = self.mask_length(qualified_column)
        if masked is not None:
            return StringRule("mask", masker(masked), MASKED_PARAMETERS)
        rule = self.hash_for(qualified_column) if hashable else None
        if rule is not None:
            return StringRule("hash", hasher(rule, convert, length), MASKED_PARAMETERS)
        limit = self.truncate_length(qualified_column) if truncatable else None
        if limit is not None:
            can_cut = length is None or length > limit
            return StringRule("truncate", truncater(convert, limit),
                              (("truncateLength", str(limit)),) if can_cut else ())
        return None

    def string_converter(self, qualified_column: str, convert: Callable[[Any], Any], *, character: bool = False,
                         length: int | None = None) -> Callable[[Any], Any]:
        """`convert` with the column's mask, hash or truncation applied (`string_rule`'s converter, any string column
        truncatable)."""
        rule = self.string_rule(qualified_column, convert, hashable=character, length=length)
        return convert if rule is None else rule.convert



def _matches(pattern: str, name: str) -> bool:
    return re.fullmatch(pattern, name, re.IGNORECASE) is not None


def _last_match(patterns: Mapping[str, int], name: str) -> int | None:
    found = None
    for pattern, n in patterns.items():
        if _matches(pattern, name):
            found = n
    return found


def masker(n: int) -> Callable[[Any], Any]:
    stars = "*" * n
    return lambda raw: None if raw is None else stars


def truncater(convert: Callable[[Any], Any], n: int) -> Callable[[Any], Any]:
    def truncate(raw):
        value = convert(raw)
        return value[:n] if isinstance(value, str) else value
    return truncate


def hasher(rule: ColumnHash, convert: Callable[[Any], Any], length: int | None) -> Callable[[Any], Any]:
    """`convert`, then the hash of its (string) value cut to `length` characters (None or 0: the whole hex)."""
    hash_text = rule.hasher()

    def hashed(raw):
        value = convert(raw)
        if not isinstance(value, str):
            return value
        text = hash_text(value)
        return text[:length] if length else text
    return hashed
