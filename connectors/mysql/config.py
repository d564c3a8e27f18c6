"""A MySQL/MariaDB connector's configuration: Debezium's property names, each value checked with its property named.

`MySqlConfig.from_properties(props)` raises `connectors.config.types.ConfigError` listing every invalid property
(`Problem(property, message)`); the engine reads the attributes of `connectors.core.config.EngineConfig`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connectors.config import values
from connectors.config.types import CleanupPolicy, ConfigError, MessageTooLargePolicy, Problem
from connectors.core import columns
from connectors.core.config import CHUNK_MAX_BYTES, MAX_QUEUE_BYTES, DerivedTopicNames
from connectors.mysql.connection import ConnectionSettings
from connectors.mysql.snapshot import LOCKING_MODES
from connectors.mysql.types import MODES, TypeOptions

SNAPSHOT_MODES = ("initial", "initial_only", "when_needed", "no_data", "never", "always")
MARIADB_CLASS = "io.debezium.connector.mariadb.MariaDbConnector"
MYSQL_CLASS = "io.debezium.connector.mysql.MySqlConnector"


def _choice(allowed: tuple[str, ...]) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        value = str(raw).strip().lower()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {raw!r}")
        return value
    return parse


def _port(raw: Any) -> int:
    port = values.parse_int(raw)
    if not 1 <= port <= 65535:
        raise ValueError(f"expected a port between 1 and 65535, got {raw!r}")
    return port


def _server_id(raw: Any) -> int:
    value = values.parse_int(raw)
    if not 1 <= value <= 2**32 - 1:
        raise ValueError(f"expected a replica server id between 1 and 4294967295, got {raw!r}")
    return value


def _database_table(raw: Any) -> str:
    text = values.parse_str(raw).strip()
    database, dot, table = text.partition(".")
    if not dot or not database or not table:
        raise ValueError(f"{text!r} is not <database>.<table>")
    return text


def _ops(raw: Any) -> tuple[str, ...]:
    items = tuple(i.strip().lower() for i in values.split_list(raw))
    if items == ("none",):
        return ()
    bad = [i for i in items if i not in ("c", "u", "d", "t")]
    if bad:
        raise ValueError(f"expected a list of c, u, d, t (or none), got {', '.join(bad)}")
    return items


_POSITIVE = values.int_at_least(1)
_NON_NEGATIVE = values.int_at_least(0)

# property -> (attribute, default, parser)
PROPERTIES: dict[str, tuple[str, Any, Callable[[Any], Any]]] = {
    "name": ("name", None, values.parse_identifier),
    "connector.class": ("connector_class", MARIADB_CLASS, str),
    "database.hostname": ("hostname", None, values.parse_str),
    "database.port": ("port", 3306, _port),
    "database.user": ("user", None, values.parse_str),
    "database.password": ("password", "", str),
    "database.server.id": ("server_id", None, _server_id),
    "topic.prefix": ("topic_prefix", None, values.parse_topic),
    "database.include.list": ("database_include", (), values.parse_regex_list),
    "database.exclude.list": ("database_exclude", (), values.parse_regex_list),
    "table.include.list": ("table_include", (), values.parse_regex_list),
    "table.exclude.list": ("table_exclude", (), values.parse_regex_list),
    "column.include.list": ("column_include", (), values.parse_regex_list),
    "column.exclude.list": ("column_exclude", (), values.parse_regex_list),
    "message.key.columns": ("message_key_columns", {}, columns.parse_key_columns),
    "snapshot.mode": ("snapshot_mode", "initial", _choice(SNAPSHOT_MODES)),
    "snapshot.locking.mode": ("snapshot_locking_mode", "minimal", _choice(LOCKING_MODES)),
    "snapshot.lock.timeout.ms": ("snapshot_lock_timeout_ms", 10_000, _POSITIVE),
    "snapshot.max.threads": ("snapshot_max_threads", 1, _POSITIVE),
    "snapshot.chunk.size": ("snapshot_chunk_size", 8192, _POSITIVE),
    "snapshot.chunk.max.bytes": ("snapshot_chunk_max_bytes", CHUNK_MAX_BYTES, _NON_NEGATIVE),
    "snapshot.fetch.size": ("snapshot_fetch_size", 0, _NON_NEGATIVE),
    "snapshot.delay.ms": ("snapshot_delay_ms", 0, _NON_NEGATIVE),
    "gtid.source.includes": ("gtid_source_includes", (), values.parse_regex_list),
    "gtid.source.excludes": ("gtid_source_excludes", (), values.parse_regex_list),
    "heartbeat.interval.ms": ("heartbeat_interval_ms", 0, _NON_NEGATIVE),
    "heartbeat.action.query": ("heartbeat_action_query", None, values.parse_str),
    "topic.heartbeat.prefix": ("heartbeat_topics_prefix", "__debezium-heartbeat", values.parse_topic),
    "include.schema.changes": ("include_schema_changes", True, values.parse_bool),
    "include.query": ("include_query", False, values.parse_bool),
    "provide.transaction.metadata": ("provide_transaction_metadata", False, values.parse_bool),
    "topic.transaction": ("topic_transaction", "transaction", values.parse_topic),
    "decimal.handling.mode": ("decimal_handling_mode", "precise", _choice(MODES["decimal.handling.mode"])),
    "time.precision.mode": ("time_precision_mode", "adaptive_time_microseconds",
                            _choice(MODES["time.precision.mode"])),
    "bigint.unsigned.handling.mode": ("bigint_unsigned_handling_mode", "long",
                                      _choice(MODES["bigint.unsigned.handling.mode"])),
    "binary.handling.mode": ("binary_handling_mode", "bytes", _choice(MODES["binary.handling.mode"])),
    "signal.data.collection": ("signal_data_collection", None, _database_table),
    "incremental.snapshot.chunk.size": ("incremental_snapshot_chunk_size", 1024, _POSITIVE),
    "skipped.operations": ("skipped_operations", ("t",), _ops),
    "tombstones.on.delete": ("tombstones_on_delete", True, values.parse_bool),
    "schemas.enable": ("schemas_enable", False, values.parse_bool),
    "key.converter.schemas.enable": ("key_schemas_enable", None, values.parse_bool),
    "value.converter.schemas.enable": ("value_schemas_enable", None, values.parse_bool),
    "max.batch.size": ("max_batch_size", 2048, _POSITIVE),
    "max.queue.size": ("max_queue_size", 8192, _POSITIVE),
    "max.queue.size.in.bytes": ("max_queue_size_in_bytes", MAX_QUEUE_BYTES, _NON_NEGATIVE),
    "poll.interval.ms": ("poll_interval_ms", 500, _POSITIVE),
    "connect.backoff.initial.delay.ms": ("connect_backoff_initial_delay_ms", 1000, _POSITIVE),
    "connect.backoff.max.delay.ms": ("connect_backoff_max_delay_ms", 120_000, _POSITIVE),
    "connect.max.attempts": ("connect_max_attempts", 16, _POSITIVE),
    "offset.storage.topic": ("offset_storage_topic", "cdc.offsets", values.parse_topic),
    "offset.storage.partitions": ("offset_storage_partitions", 25, _POSITIVE),
    "errors.topic": ("errors_topic", None, values.parse_topic),
    "message.too.large.policy": ("message_too_large_policy", MessageTooLargePolicy.FAIL,
                                 values.enum_parser(MessageTooLargePolicy)),
    "topic.creation.default.partitions": ("topic_creation_partitions", -1, values.parse_broker_count),
    "topic.creation.default.replication.factor": ("topic_creation_replication_factor", -1,
                                                  values.parse_broker_count),
    "topic.creation.default.cleanup.policy": ("topic_creation_cleanup_policy", CleanupPolicy.DELETE,
                                              values.enum_parser(CleanupPolicy)),
    "topic.creation.default.max.message.bytes": ("topic_creation_max_message_bytes", -1,
                                                 values.parse_max_message_bytes),
    "producer.override.max.request.size": ("producer_max_request_size", 1_000_000, values.parse_max_request_size),
}
# accepted by name, refused when set: what this connector does not do yet
NOT_YET: dict[str, str] = {}
REQUIRED = ("name", "database.hostname", "database.user", "database.server.id", "topic.prefix")
# accepted and passed over: Kafka Connect's own keys
_IGNORED = ("tasks.max", "key.converter", "value.converter", "transforms", "errors.", "producer.", "consumer.")


@dataclass
class MySqlConfig(DerivedTopicNames):
    name: str = ""
    connector_class: str = MARIADB_CLASS
    hostname: str = ""
    port: int = 3306
    user: str = ""
    password: str = field(default="", repr=False)
    server_id: int = 0
    topic_prefix: str = ""
    database_include: tuple[str, ...] = ()
    database_exclude: tuple[str, ...] = ()
    table_include: tuple[str, ...] = ()
    table_exclude: tuple[str, ...] = ()
    column_include: tuple[str, ...] = ()
    column_exclude: tuple[str, ...] = ()
    message_key_columns: dict = field(default_factory=dict)
    column_masks: dict = field(default_factory=dict)  # regex of <db>.<table>.<column> -> number of '*'
    column_truncates: dict = field(default_factory=dict)  # regex -> length
    column_hashes: tuple[columns.ColumnHash, ...] = ()  # column.mask.hash.*: salts are Secrets
    snapshot_mode: str = "initial"
    snapshot_locking_mode: str = "minimal"
    snapshot_lock_timeout_ms: int = 10_000  # MySQL: how long the global read lock is waited for
    snapshot_max_threads: int = 1
    snapshot_chunk_size: int = 8192
    snapshot_chunk_max_bytes: int = CHUNK_MAX_BYTES
    snapshot_fetch_size: int = 0
    snapshot_delay_ms: int = 0
    gtid_source_includes: tuple[str, ...] = ()
    gtid_source_excludes: tuple[str, ...] = ()
    heartbeat_interval_ms: int = 0
    heartbeat_action_query: str | None = None
    heartbeat_topics_prefix: str = "__debezium-heartbeat"
    include_schema_changes: bool = True
    include_query: bool = False
    provide_transaction_metadata: bool = False
    topic_transaction: str = "transaction"
    decimal_handling_mode: str = "precise"
    time_precision_mode: str = "adaptive_time_microseconds"
    bigint_unsigned_handling_mode: str = "long"
    binary_handling_mode: str = "bytes"
    signal_data_collection: str | None = None
    incremental_snapshot_chunk_size: int = 1024
    skipped_operations: tuple[str, ...] = ("t",)
    tombstones_on_delete: bool = True
    schemas_enable: bool = False
    key_schemas_enable: bool | None = None  # None: as schemas.enable (read key_schemas / value_schemas)
    value_schemas_enable: bool | None = None
    max_batch_size: int = 2048
    max_queue_size: int = 8192
    max_queue_size_in_bytes: int = MAX_QUEUE_BYTES
    poll_interval_ms: int = 500
    connect_backoff_initial_delay_ms: int = 1000
    connect_backoff_max_delay_ms: int = 120_000
    connect_max_attempts: int = 16
    offset_storage_topic: str = "cdc.offsets"
    offset_storage_partitions: int = 25
    errors_topic: str | None = None
    message_too_large_policy: MessageTooLargePolicy = MessageTooLargePolicy.FAIL
    topic_creation_partitions: int = -1
    topic_creation_replication_factor: int = -1
    topic_creation_cleanup_policy: CleanupPolicy = CleanupPolicy.DELETE
    topic_creation_max_message_bytes: int = -1
    producer_max_request_size: int = 1_000_000

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> MySqlConfig:
        problems: list[Problem] = []
        kwargs: dict[str, Any] = {}
        masks: dict[str, int] = {}
        truncates: dict[str, int] = {}
        hashes: list[columns.ColumnHash] = []
        for prop, raw in properties.items():
            if prop in PROPERTIES:
                attribute, _, parse = PROPERTIES[prop]
                if raw is None or (isinstance(raw, str) and not raw.strip() and prop != "database.password"):
                    continue
                try:
                    kwargs[attribute] = parse(raw)
                except ValueError as error:
                    shown = "***" if prop == "database.password" else raw
                    problems.append(Problem(prop, f"{prop}={shown!r}: {error}"))
                continue
            if columns.is_hash_property(prop):
                shown = columns.shown_hash_property(prop)  # the salt is a secret, even in a problem
                try:
                    hashes.append(columns.hash_rule(prop, values.parse_regex_list(raw)))
                except ValueError as error:
                    problems.append(Problem(shown, f"{shown}: {error}"))
                continue
            special = columns.length_rule(prop)
            if special:
                try:
                    patterns = values.parse_regex_list(raw)
                except ValueError as error:
                    problems.append(Problem(prop, f"{prop}: {error}"))
                    continue
                kind, length = special
                target = masks if kind == "mask" else truncates
                for pattern in patterns:
                    target[pattern] = length
                continue
            if prop.startswith(_IGNORED):
                continue
            problems.append(Problem(prop, f"{prop} is not a property of the MySQL/MariaDB connector"))
        for prop in REQUIRED:
            if PROPERTIES[prop][0] not in kwargs and not any(p.property == prop for p in problems):
                problems.append(Problem(prop, f"{prop} is required"))
        for include, exclude in (("database.include.list", "database.exclude.list"),
                                 ("table.include.list", "table.exclude.list"),
                                 ("column.include.list", "column.exclude.list"),
                                 ("gtid.source.includes", "gtid.source.excludes")):
            if PROPERTIES[include][0] in kwargs and PROPERTIES[exclude][0] in kwargs:
                problems.append(Problem(exclude, f"{include} and {exclude} cannot both be set; keep one"))
        for prop, attribute in NOT_YET.items():
            if kwargs.get(attribute):
                problems.append(Problem(prop, f"{prop} is not supported by the MySQL/MariaDB connector yet; "
                                              "remove it (docs/mariadb.md lists what is left)"))
        if problems:
            raise ConfigError(problems)
        return cls(**kwargs, column_masks=masks, column_truncates=truncates, column_hashes=tuple(hashes))

    # -- what the engine and the source derive ------------------------------------------------------------------

    @property
    def mariadb(self) -> bool:
        return self.connector_class == MARIADB_CLASS

    @property
    def connection(self) -> ConnectionSettings:
        return ConnectionSettings(host=self.hostname, port=self.port, user=self.user, password=self.password)

    @property
    def type_options(self) -> TypeOptions:
        return TypeOptions(self.decimal_handling_mode, self.time_precision_mode, self.bigint_unsigned_handling_mode,
                           self.binary_handling_mode)

    def snapshot_filter(self, collection: str) -> Any:
        return None

    def captures_database(self, database: str) -> bool:
        if self.database_include:
            return any(re.fullmatch(p, database) for p in self.database_include)
        return not any(re.fullmatch(p, database) for p in self.database_exclude)

    def reads_rows_of(self, database: str, table: str) -> bool:
        """Whether the stream needs this table's rows: a captured table's, or the signal table's."""
        return f"{database}.{table}" == self.signal_data_collection or self.captures_table(database, table)

    def captures_table(self, database: str, table: str) -> bool:
        if not self.captures_database(database):
            return False
        name = f"{database}.{table}"
        if self.signal_data_collection and name == self.signal_data_collection:
            return False
        if self.table_include:
            return any(re.fullmatch(p, name) for p in self.table_include)
        return not any(re.fullmatch(p, name) for p in self.table_exclude)

    @property
    def column_rules(self) -> columns.ColumnRules:
        return columns.ColumnRules(self.column_include, self.column_exclude, self.column_masks, self.column_truncates,
                                   self.message_key_columns, self.column_hashes)

    def captures_column(self, database: str, table: str, column: str) -> bool:
        return self.column_rules.captures(f"{database}.{table}.{column}")

    def captures_gtid(self, gtid: str | None) -> bool:
        """gtid.source.includes/excludes: the GTID's source (MySQL: the server UUID; MariaDB: `domain-server`)."""
        if gtid is None or not (self.gtid_source_includes or self.gtid_source_excludes):
            return True
        source = gtid.rsplit(":", 1)[0] if ":" in gtid else gtid.rsplit("-", 1)[0]
        if self.gtid_source_includes:
            return any(re.fullmatch(p, source) for p in self.gtid_source_includes)
        return not any(re.fullmatch(p, source) for p in self.gtid_source_excludes)

    def key_columns(self, database: str, table: str) -> tuple[str, ...] | None:
        return self.column_rules.key_for(f"{database}.{table}")
