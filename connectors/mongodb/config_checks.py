"""Checks that involve several properties (required, exclusive, ordered or dependent ones).

They run on the parsed values with defaults filled in. A check whose input already failed on its
own is skipped: a second message about the same mistake would only mislead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connectors.config.types import (
    SNAPSHOT_FILTER_PREFIX,
    CaptureScope,
    EventFormat,
    Problem,
    StartupMode,
)
from connectors.mongodb import config_values as mongo_values


@dataclass(frozen=True)
class CheckInput:
    settings: Mapping[str, Any]  # attribute name → value, defaults filled in
    explicit: frozenset[str]  # attributes the properties set
    given: Mapping[str, str]  # canonical property name → the key as written (an alias, maybe)
    failed: frozenset[str]  # keys that already have a problem

    def ok(self, *properties: str) -> bool:
        return not any(self.given.get(prop, prop) in self.failed for prop in properties)

    def key(self, prop: str) -> str:
        return self.given.get(prop, prop)


def cross_checks(data: CheckInput) -> list[Problem]:
    problems: list[Problem] = []
    for check in _CHECKS:
        problems.extend(check(data))
    return problems


def _required(data: CheckInput) -> list[Problem]:
    problems = []
    if "name" not in data.explicit and data.ok("name"):
        problems.append(Problem("name", "name is required: set it to a short unique name such as 'inventory-cdc'"))
    if "topic_prefix" not in data.explicit and data.ok("topic.prefix"):
        problems.append(
            Problem(
                "topic.prefix",
                "topic.prefix is required (or its old name mongodb.name): set it to a short name such as 'inventory'",
            )
        )
    return problems


def _connection(data: CheckInput) -> list[Problem]:
    problems = []
    has_uri, has_hosts = "connection_string" in data.explicit, "hosts" in data.explicit
    if not has_uri and not has_hosts and data.ok("mongodb.connection.string", "mongodb.hosts"):
        problems.append(
            Problem(
                "mongodb.connection.string",
                "mongodb.connection.string is required: set it to a URI such as "
                "mongodb://host1:27017,host2:27017/?replicaSet=rs0 (or give mongodb.hosts)",
            )
        )
    if has_uri and has_hosts:
        problems.append(Problem("mongodb.hosts", "mongodb.hosts and mongodb.connection.string are both set; keep one"))

    has_user = "user" in data.explicit
    node_count = 0
    uri_user = None
    if has_uri:
        uri = mongo_values.parse_connection_string(data.settings["connection_string"].reveal())
        uri_user, node_count = uri.username, len(uri.hosts)
        if uri_user and has_user:
            problems.append(
                Problem("mongodb.user", "mongodb.user is set and the connection string names a user too; keep one")
            )
    elif has_hosts:
        node_count = len(data.settings["hosts"].hosts)
    if node_count > mongo_values.MAX_SEEDS:
        problems.append(
            Problem(
                "mongodb.connection.string" if has_uri else "mongodb.hosts",
                f"the connection string names {node_count} hosts; a replica set has at most "
                f"{mongo_values.MAX_SEEDS} members, so give at most {mongo_values.MAX_SEEDS} seed hosts (a few are "
                "enough: the others are discovered)",
            )
        )
    if "password" in data.explicit and not has_user and not uri_user:
        problems.append(Problem("mongodb.password", "mongodb.password is set without mongodb.user; set the user"))
    if not data.settings["members_auto_discover"] and node_count > 1:
        problems.append(
            Problem(
                "mongodb.members.auto.discover",
                "mongodb.members.auto.discover=false connects to the one server given; "
                "list a single host or set it to true",
            )
        )
    return problems


def _exclusive_lists(data: CheckInput) -> list[Problem]:
    problems = []
    for kind in ("database", "collection"):
        if data.settings[f"{kind}_include_list"] and data.settings[f"{kind}_exclude_list"]:
            problems.append(
                Problem(
                    data.key(f"{kind}.exclude.list"),
                    f"{kind}.include.list and {kind}.exclude.list are both set; use only one of them",
                )
            )
    return problems


def _capture_target(data: CheckInput) -> list[Problem]:
    if not data.ok("capture.scope", "capture.target"):
        return []
    scope, target = data.settings["capture_scope"], data.settings["capture_target"]
    if scope is CaptureScope.DATABASE:
        if not target:
            return [Problem("capture.target", "capture.scope=database needs capture.target: the database name")]
        if "." in target:
            return [
                Problem(
                    "capture.target",
                    f"capture.target {target!r} must be a database name (no '.') with capture.scope=database",
                )
            ]
    elif scope is CaptureScope.COLLECTION:
        if not target:
            return [Problem("capture.target", "capture.scope=collection needs capture.target: <database>.<collection>")]
        try:
            mongo_values.check_namespace(target)
        except ValueError as error:
            return [Problem("capture.target", f"capture.target: {error} (capture.scope=collection)")]
    elif target:
        return [
            Problem(
                "capture.target",
                "capture.target is only used with capture.scope=database or collection; set the scope or remove it",
            )
        ]
    return _signal_inside_scope(data)


def _signal_inside_scope(data: CheckInput) -> list[Problem]:
    """A narrowed change stream must still see the signal collection (as Debezium requires)."""
    scope, target, signal = (
        data.settings["capture_scope"],
        data.settings["capture_target"],
        data.settings["signal_data_collection"],
    )
    if not signal or not data.ok("signal.data.collection"):
        return []
    if scope is CaptureScope.DATABASE and signal.partition(".")[0] != target:
        return [
            Problem(
                "signal.data.collection",
                f"signal.data.collection {signal!r} is outside capture.target {target!r}; "
                "put the signal collection in that database",
            )
        ]
    if scope is CaptureScope.COLLECTION and signal != target:
        return [
            Problem(
                "signal.data.collection",
                "capture.scope=collection watches only capture.target, so signals cannot be read; "
                "use capture.scope=database or remove signal.data.collection",
            )
        ]
    return []


def _ordered_numbers(data: CheckInput) -> list[Problem]:
    problems = []
    initial, maximum = data.settings["connect_backoff_initial_delay_ms"], data.settings["connect_backoff_max_delay_ms"]
    if maximum < initial and data.ok("connect.backoff.initial.delay.ms", "connect.backoff.max.delay.ms"):
        problems.append(
            Problem(
                data.key("connect.backoff.max.delay.ms"),
                f"connect.backoff.max.delay.ms ({maximum}) is below connect.backoff.initial.delay.ms ({initial}); "
                "raise it",
            )
        )
    queue, batch = data.settings["max_queue_size"], data.settings["max_batch_size"]
    if queue <= batch and data.ok("max.queue.size", "max.batch.size"):
        problems.append(
            Problem(
                data.key("max.queue.size"),
                f"max.queue.size ({queue}) must be larger than max.batch.size ({batch}); raise it",
            )
        )
    return problems


def _startup(data: CheckInput) -> list[Problem]:
    if not data.ok("startup.mode", "startup.timestamp", "snapshot.mode"):
        return []
    problems = []
    startup, snapshot_mode = data.settings["startup_mode"], data.settings["snapshot_mode"]
    has_timestamp = "startup_timestamp_ms" in data.explicit
    if startup is StartupMode.TIMESTAMP and not has_timestamp:
        problems.append(
            Problem(
                "startup.timestamp", "startup.mode=timestamp needs startup.timestamp (ms since the epoch or ISO-8601)"
            )
        )
    if startup is not StartupMode.TIMESTAMP and has_timestamp:
        problems.append(
            Problem(
                "startup.timestamp",
                "startup.timestamp is only used with startup.mode=timestamp; set the mode or remove it",
            )
        )
    if startup is not StartupMode.INITIAL and snapshot_mode.takes_snapshot:
        problems.append(
            Problem(
                "startup.mode",
                f"startup.mode={startup.value} streams without a snapshot but snapshot.mode is "
                f"{snapshot_mode.value}; set snapshot.mode=no_data",
            )
        )
    return problems


def _snapshot_filters(data: CheckInput) -> list[Problem]:
    problems = []
    listed = set(data.settings["snapshot_collection_filter_overrides"])
    queries = set(data.settings["snapshot_collection_filters"])
    for namespace in sorted(listed - queries):
        problems.append(
            Problem(
                SNAPSHOT_FILTER_PREFIX + namespace,
                f"{namespace} is listed in snapshot.collection.filter.overrides but "
                f"{SNAPSHOT_FILTER_PREFIX}{namespace} is missing; give its query",
            )
        )
    for namespace in sorted(queries - listed):
        problems.append(
            Problem(
                SNAPSHOT_FILTER_PREFIX + namespace,
                f"{SNAPSHOT_FILTER_PREFIX}{namespace} is set but {namespace} is not listed in "
                "snapshot.collection.filter.overrides; add it there",
            )
        )
    return problems


def _flattened_schemas(data: CheckInput) -> list[Problem]:
    if data.settings["event_format"] is not EventFormat.FLATTENED:
        return []
    explicit_value = data.settings["value_schemas_enable"]
    prop = "value.converter.schemas.enable" if explicit_value is not None else "schemas.enable"
    enabled = explicit_value if explicit_value is not None else data.settings["schemas_enable"]
    if enabled:
        return [Problem(prop, f"event.format=flattened writes schemaless JSON documents; set {prop}=false")]
    return []


_CHECKS: tuple[Callable[[CheckInput], list[Problem]], ...] = (
    _required,
    _connection,
    _exclusive_lists,
    _capture_target,
    _ordered_numbers,
    _startup,
    _snapshot_filters,
    _flattened_schemas,
)
