"""A PostgreSQL connector's configuration, by Debezium's property names (docs/postgres.md, "Configuration").

`PostgresConfig.from_properties(props)` returns the typed configuration or raises `ConfigError` listing every
problem at once, each naming its property; `validate(props)` returns those problems. Unknown properties, and
Debezium properties this source does not implement yet, are refused by name (never silently ignored).
The password and the salts of `column.mask.hash.*` are `Secret`s: `repr()` and `redacted()` never show them.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connectors.config import values
from connectors.config.types import CleanupPolicy, ConfigError, MessageTooLargePolicy, Problem, SnapshotMode
from connectors.core import columns
from connectors.core.config import CHUNK_MAX_BYTES, MAX_QUEUE_BYTES, DerivedTopicNames
from connectors.postgres.publication import AUTOCREATE_MODES
from connectors.postgres.rows import DEFAULT_UNAVAILABLE_VALUE
from connectors.postgres.types import TypeMappingError, TypeSettings
from connectors.secrets import MASK, Secret

_NON_NEGATIVE = values.int_at_least(0)
_POSITIVE = values.int_at_least(1)
CONNECTOR_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
TYPE_PROPERTIES = ("decimal.handling.mode", "time.precision.mode", "binary.handling.mode", "interval.handling.mode",
                   "hstore.handling.mode", "money.fraction.digits", "include.unknown.datatypes")
# Debezium PostgreSQL properties this source does not implement yet: refused by name rather than ignored.
NOT_YET = ("snapshot.select.statement.overrides", "snapshot.include.collection.list")


def _choice(*allowed: str) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        text = values.parse_str(raw).strip()
        if text not in allowed:
            raise ValueError(f"{text!r} is not supported; choose one of {', '.join(allowed)}")
        return text
    return parse


def _snapshot_mode(raw: Any) -> SnapshotMode:
    text = values.parse_str(raw).strip()
    try:
        return SnapshotMode(text)
    except ValueError:
        raise ValueError(f"{text!r} is not supported; choose one of "
                         f"{', '.join(m.value for m in SnapshotMode)}") from None


def _schema_table(raw: Any) -> str:
    text = values.parse_str(raw).strip()
    schema, dot, table = text.partition(".")
    if not dot or not schema or not table:
        raise ValueError(f"{text!r} is not <schema>.<table>")
    return text


def _skipped(raw: Any) -> tuple[str, ...]:
    items = tuple(item.strip() for item in values.parse_str(raw).split(",") if item.strip())
    if items == ("none",):
        return ()
    bad = [item for item in items if item not in ("c", "u", "d", "t")]
    if bad:
        raise ValueError(f"unknown operation(s) {', '.join(bad)}; list c, u, d, t (or none)")
    return items


def _p(name: str, default: Any, parse: Callable[[Any], Any], doc: str) -> Any:
    return field(default=default, metadata={"property": name, "parse": parse, "doc": doc})


@dataclass(frozen=True, repr=False)
class PostgresConfig(DerivedTopicNames):
    name: str | None = _p("name", None, values.parse_identifier, "Unique name of the connector.")
    topic_prefix: str | None = _p("topic.prefix", None, values.parse_identifier, "Prefix of every topic.")
    hostname: str | None = _p("database.hostname", None, values.parse_str, "PostgreSQL host.")
    port: int = _p("database.port", 5432, _POSITIVE, "PostgreSQL port.")
    user: str | None = _p("database.user", None, values.parse_str, "User (LOGIN REPLICATION).")
    password: Secret | None = _p("database.password", None, values.parse_secret, "Password of database.user.")
    dbname: str | None = _p("database.dbname", None, values.parse_str, "The database captured.")
    sslmode: str = _p("database.sslmode", "prefer",
                      _choice("disable", "allow", "prefer", "require", "verify-ca", "verify-full"), "libpq sslmode.")
    plugin_name: str = _p("plugin.name", "pgoutput", _choice("pgoutput"), "Logical decoding plugin (pgoutput).")
    slot_name: str = _p("slot.name", "debezium", values.parse_identifier, "Replication slot.")
    slot_drop_on_stop: bool = _p("slot.drop.on.stop", False, values.parse_bool, "Drop the slot on a clean stop.")
    publication_name: str = _p("publication.name", "dbz_publication", values.parse_identifier, "Publication.")
    publication_autocreate_mode: str = _p("publication.autocreate.mode", "all_tables", _choice(*AUTOCREATE_MODES),
                                          "all_tables, filtered or disabled.")
    schema_include_list: tuple[str, ...] = _p("schema.include.list", (), values.parse_regex_list, "Schema regexes.")
    schema_exclude_list: tuple[str, ...] = _p("schema.exclude.list", (), values.parse_regex_list, "Schema regexes.")
    table_include_list: tuple[str, ...] = _p("table.include.list", (), values.parse_regex_list,
                                             "<schema>.<table> regexes.")
    table_exclude_list: tuple[str, ...] = _p("table.exclude.list", (), values.parse_regex_list,
                                             "<schema>.<table> regexes.")
    column_include_list: tuple[str, ...] = _p("column.include.list", (), values.parse_regex_list,
                                              "<schema>.<table>.<column> regexes of the columns captured.")
    column_exclude_list: tuple[str, ...] = _p("column.exclude.list", (), values.parse_regex_list,
                                              "<schema>.<table>.<column> regexes of the columns left out.")
    message_key_columns: dict | None = _p("message.key.columns", None, columns.parse_key_columns,
                                   "<schema>.<table regex>:<column>,…;… the key's columns, instead of the primary key.")
    column_masks: dict = field(default_factory=dict, metadata={"property": None})  # column regex -> '*' count
    column_truncates: dict = field(default_factory=dict, metadata={"property": None})  # column regex -> length
    column_hashes: tuple[columns.ColumnHash, ...] = field(default=(), metadata={"property": None})
    snapshot_mode: SnapshotMode = _p("snapshot.mode", SnapshotMode.INITIAL, _snapshot_mode,
                                     "initial, initial_only, no_data/never, when_needed, always.")
    snapshot_max_threads: int = _p("snapshot.max.threads", 1, _POSITIVE, "Threads reading snapshot chunks.")
    snapshot_fetch_size: int = _p("snapshot.fetch.size", 10_240, _POSITIVE, "Rows fetched per round trip.")
    snapshot_chunk_size: int = _p("snapshot.chunk.size", 8192, _POSITIVE, "Rows per snapshot chunk (PK ranges).")
    snapshot_chunk_max_bytes: int = _p("snapshot.chunk.max.bytes", CHUNK_MAX_BYTES, _NON_NEGATIVE,
                                       "About this many bytes of rows per chunk, initial and incremental: a table of "
                                       "large rows gets fewer rows per chunk (0: rows only).")
    signal_data_collection: str | None = _p("signal.data.collection", None, _schema_table,
                                            "<schema>.<table> of Debezium's signal table (id, type, data); it must "
                                            "be published. Needed by incremental snapshots (their watermarks).")
    incremental_snapshot_chunk_size: int = _p("incremental.snapshot.chunk.size", 1024, _POSITIVE,
                                              "Rows per chunk (one watermark window) of an incremental snapshot.")
    snapshot_delay_ms: int = _p("snapshot.delay.ms", 0, _NON_NEGATIVE, "Wait before the snapshot.")
    heartbeat_interval_ms: int = _p("heartbeat.interval.ms", 0, _NON_NEGATIVE, "Heartbeat interval (0: none).")
    heartbeat_action_query: str | None = _p("heartbeat.action.query", None, values.parse_str,
                                            "SQL run on the source at each heartbeat.")
    heartbeat_topics_prefix: str = _p("heartbeat.topics.prefix", "__debezium-heartbeat", values.parse_topic,
                                      "Heartbeat topic prefix.")
    tombstones_on_delete: bool = _p("tombstones.on.delete", True, values.parse_bool, "Tombstone after a delete.")
    skipped_operations: tuple[str, ...] = _p("skipped.operations", ("t",), _skipped, "Operations not emitted.")
    provide_transaction_metadata: bool = _p("provide.transaction.metadata", False, values.parse_bool,
                                            "BEGIN/END records and a transaction block in change events.")
    topic_transaction: str = _p("topic.transaction", "transaction", values.parse_topic,
                                "Suffix of the transaction metadata topic <topic.prefix>.<topic.transaction>.")
    unavailable_value_placeholder: str = _p("unavailable.value.placeholder", DEFAULT_UNAVAILABLE_VALUE,
                                            values.parse_str, "Unchanged TOASTed values.")
    schemas_enable: bool = _p("schemas.enable", False, values.parse_bool, '{"schema","payload"} form.')
    key_schemas_enable: bool | None = _p("key.converter.schemas.enable", None, values.parse_bool, "Keys.")
    value_schemas_enable: bool | None = _p("value.converter.schemas.enable", None, values.parse_bool, "Values.")
    max_batch_size: int = _p("max.batch.size", 2048, _POSITIVE, "Changes per Kafka transaction.")
    max_queue_size: int = _p("max.queue.size", 8192, _POSITIVE, "Queue between reader and sink.")
    max_queue_size_in_bytes: int = _p("max.queue.size.in.bytes", MAX_QUEUE_BYTES, _NON_NEGATIVE,
                                      "Capacity of that queue in bytes (0 = unbounded).")
    poll_interval_ms: int = _p("poll.interval.ms", 500, _POSITIVE, "Longest wait before a partial batch.")
    status_update_interval_ms: int = _p("status.update.interval.ms", 10_000, _POSITIVE,
                                        "Replication status update interval.")
    connect_backoff_initial_delay_ms: int = _p("connect.backoff.initial.delay.ms", 1000, _POSITIVE, "Backoff.")
    connect_backoff_max_delay_ms: int = _p("connect.backoff.max.delay.ms", 120_000, _POSITIVE, "Backoff.")
    connect_max_attempts: int = _p("connect.max.attempts", 16, _POSITIVE, "Reconnection attempts.")
    offset_storage_topic: str = _p("offset.storage.topic", "cdc.offsets", values.parse_topic, "Offsets topic.")
    offset_storage_partitions: int = _p("offset.storage.partitions", 25, _POSITIVE, "Its partitions.")
    errors_topic: str | None = _p("errors.topic", None, values.parse_topic, "Errors topic.")
    message_too_large_policy: MessageTooLargePolicy = _p(
        "message.too.large.policy", MessageTooLargePolicy.FAIL, values.enum_parser(MessageTooLargePolicy),
        "fail or skip.")
    topic_creation_partitions: int = _p("topic.creation.default.partitions", -1, values.parse_broker_count,
                                        "Partitions of new topics.")
    topic_creation_replication_factor: int = _p("topic.creation.default.replication.factor", -1,
                                                values.parse_broker_count, "Replication of new topics.")
    topic_creation_cleanup_policy: CleanupPolicy = _p("topic.creation.default.cleanup.policy", CleanupPolicy.DELETE,
                                                      values.enum_parser(CleanupPolicy), "delete or compact.")
    topic_creation_max_message_bytes: int = _p("topic.creation.default.max.message.bytes", -1,
                                               values.parse_max_message_bytes, values.MAX_MESSAGE_BYTES_DOC)
    producer_max_request_size: int = _p("producer.override.max.request.size", 1_000_000,
                                        values.parse_max_request_size, values.MAX_REQUEST_SIZE_DOC)
    connector_class: str | None = _p("connector.class", None, _choice(CONNECTOR_CLASS),
                                     f"{CONNECTOR_CLASS} (or postgres).")
    tasks_max: int = _p("tasks.max", 1, _POSITIVE, "Accepted and ignored: one slot is one pipeline.")
    types: TypeSettings = field(default_factory=TypeSettings, metadata={"property": None})

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> PostgresConfig:
        parsed, problems = _parse(props)
        if problems:
            raise ConfigError(problems)
        return cls(**parsed)

    # -- what the engine derives --------------------------------------------------------------------------------

    @property
    def column_rules(self) -> columns.ColumnRules:
        return columns.ColumnRules(self.column_include_list, self.column_exclude_list, self.column_masks,
                                   self.column_truncates, self.message_key_columns or {}, self.column_hashes)

    def snapshot_filter(self, collection: str) -> None:
        return None

    @property
    def application_name(self) -> str:
        """What the connector's sessions show in pg_stat_activity."""
        return f"cdcplatform:{self.name}"

    def dsn(self) -> str:
        """A libpq connection string: the one place the password is revealed."""
        parts = {"host": self.hostname, "port": self.port, "user": self.user, "dbname": self.dbname,
                 "sslmode": self.sslmode, "application_name": self.application_name}
        if self.password is not None:
            parts["password"] = self.password.reveal()
        return " ".join(f"{key}='{_libpq_quote(str(value))}'" for key, value in parts.items() if value is not None)

    def redacted(self) -> dict[str, Any]:
        out = {}
        for spec in dataclasses.fields(self):
            name = spec.metadata.get("property")
            if name is None:
                continue
            value = getattr(self, spec.name)
            out[name] = MASK if isinstance(value, Secret) else getattr(value, "value", value)
        for rule in self.column_hashes:
            out[rule.property_name(redact=True)] = ",".join(rule.columns)
        return out

    def __repr__(self) -> str:
        return f"PostgresConfig({self.redacted()!r})"

    __str__ = __repr__


def _libpq_quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


_FIELDS = {spec.metadata["property"]: spec for spec in dataclasses.fields(PostgresConfig)
           if spec.metadata.get("property")}
KNOWN_PROPERTIES = (*_FIELDS, *TYPE_PROPERTIES)
REQUIRED = ("name", "topic.prefix", "database.hostname", "database.user", "database.dbname")


def validate(props: Any) -> list[Problem]:
    return _parse(props)[1]


def _parse(props: Any) -> tuple[dict[str, Any], list[Problem]]:
    if not isinstance(props, Mapping):
        return {}, [Problem("", f"the configuration must be an object of properties, got {type(props).__name__}")]
    parsed: dict[str, Any] = {}
    problems: list[Problem] = []
    type_props: dict[str, Any] = {}
    for key, raw in props.items():
        if raw is None:
            continue
        if key == "connector.class" and str(raw).strip().lower() in ("postgres", "postgresql"):
            raw = CONNECTOR_CLASS
        if key in TYPE_PROPERTIES:
            type_props[key] = raw
            continue
        if key in NOT_YET:
            problems.append(Problem(key, f"{key}: not supported by this PostgreSQL source yet (docs/postgres.md); "
                                         "remove it"))
            continue
        if columns.is_hash_property(key):
            shown = columns.shown_hash_property(key)  # the salt is a secret, even in a problem
            try:
                rule = columns.hash_rule(key, values.parse_regex_list(raw))
            except ValueError as error:
                problems.append(Problem(shown, f"{shown}: {error}"))
                continue
            parsed["column_hashes"] = (*parsed.get("column_hashes", ()), rule)
            continue
        length_rule = columns.length_rule(key)
        if length_rule is not None:
            kind, length = length_rule
            try:
                patterns = values.parse_regex_list(raw)
            except ValueError as error:
                problems.append(Problem(key, f"{key}: {error}"))
                continue
            target = parsed.setdefault("column_masks" if kind == "mask" else "column_truncates", {})
            target.update(dict.fromkeys(patterns, length))
            continue
        spec = _FIELDS.get(key)
        if spec is None:
            close = difflib.get_close_matches(key, KNOWN_PROPERTIES, n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]!r}?" if close else "; remove it or check docs/postgres.md"
            problems.append(Problem(key, f"unknown property {key!r}{hint}"))
            continue
        try:
            parsed[spec.name] = spec.metadata["parse"](raw)
        except ValueError as error:
            problems.append(Problem(key, f"{key}: {error}"))
    try:
        parsed["types"] = TypeSettings.from_properties(type_props)
    except TypeMappingError as error:
        text = str(error)
        named = next((name for name in TYPE_PROPERTIES if text.startswith(name)), "decimal.handling.mode")
        problems.append(Problem(named, text))
    for name in REQUIRED:
        if _FIELDS[name].name not in parsed:
            problems.append(Problem(name, f"{name} is required"))
    if "column_include_list" in parsed and "column_exclude_list" in parsed:
        problems.append(Problem("column.exclude.list", "column.include.list and column.exclude.list cannot both be "
                                                       "set; keep one"))
    return parsed, problems
