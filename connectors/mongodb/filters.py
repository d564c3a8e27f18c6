"""Which changes are captured: database and collection lists, skipped operations, the signal
collection, and how the same choice is pushed to the server (watch scope and ``$match``).

Semantics follow Debezium: each list entry is a regular expression matched against the whole name,
ignoring case; collection lists match ``<database>.<collection>``; an include list admits only what
it matches, an exclude list admits everything else; ``admin``, ``config`` and ``local`` are never
captured; the signal collection is always watched (its events reach the source) but only emitted
when the lists admit it.

The server-side filter is an optimisation that must never drop a change the client-side filter
would keep: it uses the same anchored, case-insensitive expressions, and the transformer checks
every record again with `EventFilter`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bson.regex import Regex

from connectors.mongodb.config import CaptureScope, ConnectorConfig, CursorPipelineOrder
from connectors.mongodb.records import ChangeRecord, Namespace, Operation

BUILT_IN_DATABASES = frozenset({"admin", "config", "local"})
# Events the source needs to follow the stream's life even when no data change is captured.
LIFECYCLE_OPERATION_TYPES = ("drop", "rename", "dropDatabase", "invalidate")
_OPERATION_TYPES = {"c": ("insert",), "u": ("update", "replace"), "d": ("delete",)}
_LITERAL_DATABASE = re.compile(r"[A-Za-z0-9_-]+")
_LITERAL_NAME_PART = r"[A-Za-z0-9_-]+"


class NamePatterns:
    """A list of regular expressions, each matched against a whole name, ignoring case."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)
        self._compiled = tuple(re.compile(pattern, re.IGNORECASE) for pattern in self.patterns)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, name: str) -> bool:
        return any(pattern.fullmatch(name) for pattern in self._compiled)

    def server_regex(self) -> str:
        """One PCRE expression equivalent to the list, anchored like ``fullmatch``."""
        return "^(?:" + "|".join(f"(?:{pattern})" for pattern in self.patterns) + ")$"


@dataclass(frozen=True)
class WatchTarget:
    """Where ``watch()`` is opened: the whole deployment, one database or one collection."""

    scope: CaptureScope
    database: str | None = None
    collection: str | None = None

    def __post_init__(self) -> None:
        if self.scope is not CaptureScope.DEPLOYMENT and not self.database:
            raise ValueError(f"a {self.scope.value} watch needs a database")
        if self.scope is CaptureScope.COLLECTION and not self.collection:
            raise ValueError("a collection watch needs a collection")


class NamespaceFilter:
    def __init__(
        self,
        database_include: Sequence[str] = (),
        database_exclude: Sequence[str] = (),
        collection_include: Sequence[str] = (),
        collection_exclude: Sequence[str] = (),
        signal_collection: str | None = None,
        snapshot_include: Sequence[str] = (),
    ) -> None:
        self.database_include = NamePatterns(database_include)
        self.database_exclude = NamePatterns(database_exclude)
        self.collection_include = NamePatterns(collection_include)
        self.collection_exclude = NamePatterns(collection_exclude)
        self.snapshot_include = NamePatterns(snapshot_include)
        self.signal_collection = Namespace.parse(signal_collection) if signal_collection else None
        self._included: dict[Namespace, bool] = {}  # a pipeline sees few namespaces, each many times

    @classmethod
    def from_config(cls, config: ConnectorConfig) -> NamespaceFilter:
        return cls(
            config.database_include_list,
            config.database_exclude_list,
            config.collection_include_list,
            config.collection_exclude_list,
            config.signal_data_collection,
            config.snapshot_include_collection_list,
        )

    def includes_database(self, db: str) -> bool:
        if db in BUILT_IN_DATABASES:
            return False
        if self.database_include:
            return self.database_include.matches(db)
        return not self.database_exclude.matches(db)

    def includes(self, namespace: Namespace) -> bool:
        """Whether changes of this collection are emitted."""
        included = self._included.get(namespace)
        if included is None:
            included = self._included[namespace] = self._decide(namespace)
        return included

    def _decide(self, namespace: Namespace) -> bool:
        if not self.includes_database(namespace.db):
            return False
        if self.collection_include:
            return self.collection_include.matches(namespace.full_name)
        return not self.collection_exclude.matches(namespace.full_name)

    def is_signal(self, namespace: Namespace) -> bool:
        return self.signal_collection is not None and namespace == self.signal_collection

    def watches(self, namespace: Namespace) -> bool:
        """Whether the source must see changes of this collection (emitted ones and signals)."""
        return self.includes(namespace) or self.is_signal(namespace)

    def includes_in_snapshot(self, namespace: Namespace) -> bool:
        if not self.includes(namespace):
            return False
        return not self.snapshot_include or self.snapshot_include.matches(namespace.full_name)


class EventFilter:
    """The client-side decision for one record: right collection, operation not skipped."""

    def __init__(self, namespaces: NamespaceFilter, skipped_operations: Sequence[str] = ()) -> None:
        self.namespaces = namespaces
        self.skipped = frozenset(Operation(op) for op in skipped_operations if op in _OPERATION_TYPES)

    @classmethod
    def from_config(cls, config: ConnectorConfig) -> EventFilter:
        return cls(NamespaceFilter.from_config(config), config.skipped_operations)

    def accepts(self, record: ChangeRecord) -> bool:
        # Snapshot reads cannot be skipped (Debezium's skipped.operations has no 'r').
        if record.operation in self.skipped:
            return False
        return self.namespaces.includes(record.namespace)


# --- server side ------------------------------------------------------------------------------


def watch_target(config: ConnectorConfig) -> WatchTarget:
    """The narrowest watch() that still sees every captured collection and the signal collection.

    An explicit ``capture.scope`` wins. Otherwise the scope narrows to one database or collection
    when the include lists name it literally (names as written: a watch is case-sensitive).
    """
    if config.capture_scope is CaptureScope.DATABASE:
        return WatchTarget(CaptureScope.DATABASE, config.capture_target)
    if config.capture_scope is CaptureScope.COLLECTION:
        namespace = Namespace.parse(config.capture_target or "")
        return WatchTarget(CaptureScope.COLLECTION, namespace.db, namespace.collection)

    databases = _literal_databases(config.database_include_list)
    namespaces = _literal_namespaces(config.collection_include_list)
    if namespaces is not None:
        in_databases = {ns.db for ns in namespaces}
        databases = in_databases if databases is None else databases & in_databases
        namespaces = {ns for ns in namespaces if ns.db in databases}
    if databases is None:
        return WatchTarget(CaptureScope.DEPLOYMENT)
    signal = Namespace.parse(config.signal_data_collection) if config.signal_data_collection else None
    if signal is not None:
        databases = databases | {signal.db}
        if namespaces is not None:
            namespaces = namespaces | {signal}
    if len(databases) != 1:
        return WatchTarget(CaptureScope.DEPLOYMENT)
    (database,) = databases
    if namespaces is not None and len(namespaces) == 1:
        (namespace,) = namespaces
        return WatchTarget(CaptureScope.COLLECTION, namespace.db, namespace.collection)
    return WatchTarget(CaptureScope.DATABASE, database)


def change_stream_pipeline(config: ConnectorConfig, target: WatchTarget | None = None) -> list[dict[str, Any]]:
    """The aggregation pipeline for watch(): the connector's ``$match`` and ``cursor.pipeline``."""
    target = target or watch_target(config)
    match = change_stream_match(config, target)
    internal = [{"$match": match}] if match else []
    user = config.cursor_pipeline_stages()
    if config.cursor_pipeline_order is CursorPipelineOrder.USER_FIRST:
        return user + internal
    if config.cursor_pipeline_order is CursorPipelineOrder.USER_ONLY:
        return user
    return internal + user


def change_stream_match(config: ConnectorConfig, target: WatchTarget) -> dict[str, Any] | None:
    """The ``$match`` filter equivalent to the namespace lists and skipped operations; None if it would admit all."""
    emitted_types = [
        operation_type
        for code, operation_types in _OPERATION_TYPES.items()
        if code not in config.skipped_operations
        for operation_type in operation_types
    ]
    data_conditions: list[dict[str, Any]] = []
    if len(emitted_types) < sum(len(types) for types in _OPERATION_TYPES.values()):
        data_conditions.append({"operationType": {"$in": emitted_types}})
    if target.scope is CaptureScope.DEPLOYMENT:
        data_conditions.extend(_database_conditions(config))
    if target.scope is not CaptureScope.COLLECTION:
        data_conditions.extend(_collection_conditions(config))

    if not data_conditions:
        return None
    alternatives: list[dict[str, Any]] = [
        {"operationType": {"$in": list(LIFECYCLE_OPERATION_TYPES)}},
        _all_of(data_conditions),
    ]
    if config.signal_data_collection and target.scope is not CaptureScope.COLLECTION:
        signal = Namespace.parse(config.signal_data_collection)
        alternatives.append({"ns.db": signal.db, "ns.coll": signal.collection})
    return {"$or": alternatives}


def _database_conditions(config: ConnectorConfig) -> list[dict[str, Any]]:
    if config.database_include_list:
        return [{"ns.db": Regex(NamePatterns(config.database_include_list).server_regex(), "i")}]
    if config.database_exclude_list:
        return [{"ns.db": {"$not": Regex(NamePatterns(config.database_exclude_list).server_regex(), "i")}}]
    return []


def _collection_conditions(config: ConnectorConfig) -> list[dict[str, Any]]:
    if config.collection_include_list:
        return [{"$expr": _namespace_regex_match(config.collection_include_list)}]
    if config.collection_exclude_list:
        return [{"$expr": {"$eq": [_namespace_regex_match(config.collection_exclude_list), False]}}]
    return []


def _namespace_regex_match(patterns: Sequence[str]) -> dict[str, Any]:
    # $ifNull keeps the input a string for events without a collection (dropDatabase, invalidate).
    namespace = {"$concat": [{"$ifNull": ["$ns.db", ""]}, ".", {"$ifNull": ["$ns.coll", ""]}]}
    return {"$regexMatch": {"input": namespace, "regex": NamePatterns(patterns).server_regex(), "options": "i"}}


def _all_of(conditions: list[dict[str, Any]]) -> dict[str, Any]:
    return conditions[0] if len(conditions) == 1 else {"$and": conditions}


def _literal_databases(patterns: Sequence[str]) -> set[str] | None:
    """The database names the list matches, when every entry is a plain name; None otherwise."""
    if not patterns or not all(_LITERAL_DATABASE.fullmatch(pattern) for pattern in patterns):
        return None
    return set(patterns)


def _literal_namespaces(patterns: Sequence[str]) -> set[Namespace] | None:
    if not patterns:
        return None
    namespaces = set()
    for pattern in patterns:
        namespace = _literal_namespace(pattern)
        if namespace is None:
            return None
        namespaces.add(namespace)
    return namespaces


def _literal_namespace(pattern: str) -> Namespace | None:
    r"""``db\.coll`` or ``db.coll`` as a plain namespace, when the pattern can match nothing else.

    An unescaped ``.`` matches any character, yet a namespace's first dot always separates the
    database (which has no dots) from the collection: ``inventory.orders`` can only match
    ``inventory.orders``. With more dots, every one must be escaped to be unambiguous.
    """
    escaped_parts = pattern.split(r"\.")
    if all(re.fullmatch(_LITERAL_NAME_PART, part) for part in escaped_parts) and len(escaped_parts) >= 2:
        return Namespace(escaped_parts[0], ".".join(escaped_parts[1:]))
    match = re.fullmatch(rf"({_LITERAL_NAME_PART})\.({_LITERAL_NAME_PART})", pattern)
    if match:
        return Namespace(match.group(1), match.group(2))
    return None
