"""Composing a connector's Debezium property map from its parts, splitting a map into parts, and masking secrets.

Pure functions over plain data (no models, no database), so the API, the Kafka Connect surface, the admin and the
CLI share one translation:

    flat Debezium properties  ──split──▶  Parts(name, topic_prefix, connection_string, password,
                              ◀──join───        filters=[FilterRow…], properties={every other option})

Filter rows are the items of Debezium's list properties (one row per regex, field, operation or collection);
`join(split(p))` is equivalent to `p` for any valid `p`. The salts of `field.mask.hash.*` (MongoDB) and
`column.mask.hash.*` (PostgreSQL, MySQL/MariaDB) are secrets: they live in their rows (encrypted at rest) and `mask`
shows the property names with `********` instead.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from connectors import UnknownConnectorClass
from connectors.config.types import HASH_MASK_PREFIX, SNAPSHOT_FILTER_PREFIX
from connectors.config.values import join_list, split_list
from connectors.secrets import MASK, redact_connection_string
from connectors.sources import MONGODB, source_kind

NAME = "name"
TOPIC_PREFIX = "topic.prefix"
TOPIC_PREFIX_ALIAS = "mongodb.name"
CONNECTION_STRING = "mongodb.connection.string"
PASSWORD = "mongodb.password"  # noqa: S105 - a property name
DATABASE_PASSWORD = "database.password"  # noqa: S105 - the relational sources' password property
PASSWORDS = (PASSWORD, DATABASE_PASSWORD)
CONNECTOR_CLASS = "connector.class"
SNAPSHOT_OVERRIDES = "snapshot.collection.filter.overrides"

# Filter kinds whose rows are the items of one list property, in the order properties are written.
LIST_KINDS = {
    "database_include": "database.include.list",
    "database_exclude": "database.exclude.list",
    "collection_include": "collection.include.list",
    "collection_exclude": "collection.exclude.list",
    "field_exclude": "field.exclude.list",
    "field_rename": "field.renames",
    "field_mask_redact": "field.mask.redact",
    "skipped_operation": "skipped.operations",
    "snapshot_include": "snapshot.include.collection.list",
}
HASH_KIND = "field_mask_hash"
COLUMN_HASH_KIND = "column_mask_hash"
OVERRIDE_KIND = "snapshot_filter_override"
FILTER_KINDS = (*LIST_KINDS, HASH_KIND, COLUMN_HASH_KIND, OVERRIDE_KIND)
FILTER_PROPERTIES = frozenset({*LIST_KINDS.values(), SNAPSHOT_OVERRIDES})
HASH_PROPERTY = re.compile(r"^field\.mask\.hash\.(?P<algorithm>.+?)\.with\.salt\.(?P<salt>.+)$", re.DOTALL)
COLUMN_HASH_PREFIX = "column.mask.hash."
# the algorithm group keeps v2's "v2." (column.mask.hash.v2.<algorithm>.with.salt.<salt>)
COLUMN_HASH_PROPERTY = re.compile(r"^column\.mask\.hash\.(?P<algorithm>(?:v2\.)?[^.]+)\.with\.salt\.(?P<salt>.+)$",
                                  re.DOTALL)
HASH_PREFIXES = {HASH_KIND: HASH_MASK_PREFIX, COLUMN_HASH_KIND: COLUMN_HASH_PREFIX}


@dataclass
class FilterRow:
    kind: str
    value: str
    argument: str = ""
    salt: str = ""


@dataclass
class Parts:
    name: str = ""
    topic_prefix: str = ""
    connection_string: str = ""
    password: str = ""
    filters: list[FilterRow] = field(default_factory=list)
    properties: dict[str, Any] = field(default_factory=dict)


def is_filter_property(key: str) -> bool:
    return key in FILTER_PROPERTIES or key.startswith((HASH_MASK_PREFIX, COLUMN_HASH_PREFIX, SNAPSHOT_FILTER_PREFIX))


def hash_match(key: str) -> tuple[str, re.Match[str]] | None:
    """(hash kind, match with `algorithm` and `salt`) for a `field.mask.hash.*` / `column.mask.hash.*` name."""
    for kind, pattern in ((HASH_KIND, HASH_PROPERTY), (COLUMN_HASH_KIND, COLUMN_HASH_PROPERTY)):
        match = pattern.match(key)
        if match is not None:
            return kind, match
    return None


def hash_property(kind: str, algorithm: str, salt: str) -> str:
    return f"{HASH_PREFIXES[kind]}{algorithm}.with.salt.{salt}"


def property_of(row: FilterRow) -> str:
    """The Debezium property a row contributes to (hash masks: with the salt masked)."""
    if row.kind in HASH_PREFIXES:
        return hash_property(row.kind, row.argument, MASK)
    if row.kind == OVERRIDE_KIND:
        return SNAPSHOT_OVERRIDES
    return LIST_KINDS[row.kind]


def _text(raw: Any) -> str:
    if raw is None:
        return ""
    if isinstance(raw, str):
        return raw.strip()
    return json.dumps(raw, separators=(",", ":"))


def split(flat: dict[str, Any]) -> Parts:
    """Parts of a (validated) property map. Unknown and non-filter properties go to `properties` unchanged."""
    parts = Parts()
    rows: dict[str, list[FilterRow]] = {kind: [] for kind in FILTER_KINDS}
    queries: dict[str, str] = {}
    for key, raw in flat.items():
        if raw is None:
            continue
        if key == NAME:
            parts.name = _text(raw)
        elif key in (TOPIC_PREFIX, TOPIC_PREFIX_ALIAS):
            parts.topic_prefix = _text(raw)
        elif key == CONNECTION_STRING:
            parts.connection_string = _text(raw)
        elif key in PASSWORDS:
            parts.password = raw.strip() if isinstance(raw, str) else _text(raw)
        elif key in FILTER_PROPERTIES and key != SNAPSHOT_OVERRIDES:
            kind = next(kind for kind, prop in LIST_KINDS.items() if prop == key)
            for item in split_list(raw):
                if kind == "field_rename":  # <field path>:<new name> -> value, argument
                    path, _, new_name = item.partition(":")
                    rows[kind].append(FilterRow(kind, path, new_name))
                else:
                    rows[kind].append(FilterRow(kind, item))
        elif key == SNAPSHOT_OVERRIDES:
            rows[OVERRIDE_KIND].extend(FilterRow(OVERRIDE_KIND, item) for item in split_list(raw))
        elif key.startswith(SNAPSHOT_FILTER_PREFIX):
            queries[key[len(SNAPSHOT_FILTER_PREFIX):]] = _text(raw)
        elif (hashed := hash_match(key)) is not None:
            kind, match = hashed
            rows[kind].extend(
                FilterRow(kind, item, match.group("algorithm"), match.group("salt")) for item in split_list(raw)
            )
        else:
            parts.properties[key] = raw
    for row in rows[OVERRIDE_KIND]:
        row.argument = queries.pop(row.value, "")
    for namespace, query in queries.items():  # a query without its list entry: kept as given
        parts.properties[SNAPSHOT_FILTER_PREFIX + namespace] = query
    parts.filters = [row for kind in FILTER_KINDS for row in rows[kind]]
    return parts


def join(parts: Parts) -> dict[str, Any]:
    """The Debezium property map of these parts (secrets in clear: for the engine and validation only)."""
    flat: dict[str, Any] = {}
    if parts.name:
        flat[NAME] = parts.name
    if parts.topic_prefix:
        flat[TOPIC_PREFIX] = parts.topic_prefix
    if parts.connection_string:
        flat[CONNECTION_STRING] = parts.connection_string
    if parts.password:
        flat[password_property(parts.properties)] = parts.password
    flat.update(parts.properties)
    flat.update(filter_properties(parts.filters))
    return flat


def source_of(properties: dict[str, Any]) -> str:
    """The source kind the properties' connector.class names (mongodb when absent or unknown: the validator
    reports an unknown class)."""
    try:
        return source_kind(properties)
    except UnknownConnectorClass:
        return MONGODB


def password_property(properties: dict[str, Any]) -> str:
    return PASSWORD if source_of(properties) == MONGODB else DATABASE_PASSWORD


def filter_properties(rows: list[FilterRow]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    by_kind: dict[str, list[FilterRow]] = {}
    for row in rows:
        by_kind.setdefault(row.kind, []).append(row)
    for kind, prop in LIST_KINDS.items():
        if by_kind.get(kind):
            items = [f"{r.value}:{r.argument}" if kind == "field_rename" else r.value for r in by_kind[kind]]
            flat[prop] = join_list(items)
    hashes: dict[tuple[str, str, str], list[str]] = {}
    for kind in HASH_PREFIXES:
        for row in by_kind.get(kind, []):
            hashes.setdefault((kind, row.argument, row.salt), []).append(row.value)
    for (kind, algorithm, salt), items in hashes.items():
        flat[hash_property(kind, algorithm, salt)] = join_list(items)
    overrides = by_kind.get(OVERRIDE_KIND, [])
    if overrides:
        flat[SNAPSHOT_OVERRIDES] = join_list(row.value for row in overrides)
        for row in overrides:
            if row.argument:
                flat[SNAPSHOT_FILTER_PREFIX + row.value] = row.argument
    return flat


def mask(flat: dict[str, Any]) -> dict[str, Any]:
    """The map with every secret masked: safe to return, log or audit."""
    shown: dict[str, Any] = {}
    for key, value in flat.items():
        if key == CONNECTION_STRING and value:
            shown[key] = redact_connection_string(str(value))
        elif key in PASSWORDS and value:
            shown[key] = MASK
        elif (hashed := hash_match(key)) is not None:
            masked = hash_property(hashed[0], hashed[1].group("algorithm"), MASK)
            shown[masked] = f"{shown[masked]},{value}" if masked in shown else value
        elif key.startswith(COLUMN_HASH_PREFIX):  # malformed (refused by validation): its tail may hold a salt
            shown[COLUMN_HASH_PREFIX + MASK] = value
        else:
            shown[key] = value
    return shown


def unmask(given: dict[str, Any], current: Parts | None) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """`given` with masked secrets (as GET returned them) replaced by the stored ones.

    A client may GET a configuration, change one option and PUT it back: the masked connection string, password
    and hashing salts then mean "keep what is stored". Returns the map and (property, message) problems.
    """
    result: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    current = current or Parts()
    for key, value in given.items():
        if key == CONNECTION_STRING and isinstance(value, str) and MASK in value:
            if current.connection_string and value.strip() == redact_connection_string(current.connection_string):
                result[key] = current.connection_string
            else:
                problems.append((key, f"{key} contains the mask {MASK}; give the full connection string"))
        elif key in PASSWORDS and value == MASK:
            if current.password:
                result[key] = current.password
            else:
                problems.append((key, f"{key} is the mask {MASK} but no password is stored; give the password"))
        elif (hashed := hash_match(key)) is not None and hashed[1].group("salt") == MASK:
            _unmask_hash(key, hashed[0], hashed[1].group("algorithm"), value, current, result, problems)
        else:
            result[key] = value
    return result, problems


def _unmask_hash(key, kind, algorithm, value, current: Parts, result: dict, problems: list) -> None:
    stored = [row for row in current.filters if row.kind == kind and row.argument == algorithm]
    salts = {row.salt for row in stored}
    try:
        fields = split_list(value)
    except ValueError as error:
        problems.append((key, f"{key}: {error}"))
        return
    for item in fields:
        salt = next((row.salt for row in stored if row.value == item), None)
        if salt is None and len(salts) == 1:
            salt = next(iter(salts))
        if salt is None:
            problems.append((key, f"{key}: no stored salt for {algorithm} and {item!r}; give the salt"))
            continue
        real = hash_property(kind, algorithm, salt)
        result[real] = join_list([*split_list(result[real]), item]) if real in result else item


_USERINFO = re.compile(r"^mongodb(?:\+srv)?://(?P<userinfo>[^@/?]*)@")


def uri_has_password(uri: str) -> bool:
    match = _USERINFO.match(uri.strip()) if uri else None
    return bool(match and ":" in match.group("userinfo"))
