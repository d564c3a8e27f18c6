"""Debezium's column rules of the relational sources: `column.include.list` / `column.exclude.list`,
`column.mask.with.<N>.chars`, `column.truncate.to.<N>.chars` and `message.key.columns`.

Regexes match a whole qualified name, case-insensitively (as Debezium's): column regexes `<schema>.<table>.<column>`
(PostgreSQL) or `<database>.<table>.<column>` (MySQL/MariaDB); `message.key.columns` is
`<table regex>:<column>,<column>;…`, the table part matched against `<schema>.<table>` (`<database>.<table>`). A
masked column's every value becomes N `*` under a plain string schema; a truncated one keeps at most N characters.
Which columns a source masks or truncates is its own call (string-valued ones; PostgreSQL truncates only the
character types, as Debezium does).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connectors.core.errors import ConnectorError

MASK_PROPERTY = re.compile(r"^column\.mask\.with\.(\d+)\.chars$")
TRUNCATE_PROPERTY = re.compile(r"^column\.truncate\.to\.(\d+)\.chars$")


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
class ColumnRules:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    masks: Mapping[str, int] = field(default_factory=dict)  # column regex -> number of '*'
    truncates: Mapping[str, int] = field(default_factory=dict)  # column regex -> length
    key_columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # table regex -> columns

    def captures(self, qualified_column: str) -> bool:
        if self.include:
            return any(_matches(p, qualified_column) for p in self.include)
        return not any(_matches(p, qualified_column) for p in self.exclude)

    def mask_length(self, qualified_column: str) -> int | None:
        return _last_match(self.masks, qualified_column)

    def truncate_length(self, qualified_column: str) -> int | None:
        return _last_match(self.truncates, qualified_column)

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

    def string_converter(self, qualified_column: str, convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """`convert` with the column's mask or truncation applied (a string column's converter)."""
        masked = self.mask_length(qualified_column)
        if masked is not None:
            return masker(masked)
        length = self.truncate_length(qualified_column)
        if length is not None:
            return truncater(convert, length)
        return convert


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
