"""The connector configuration: one validated dataclass keyed by Debezium's property names.

* `validate(props)` returns every problem at once, so the API can show them together;
* `ConnectorConfig.from_properties(props)` returns the typed configuration or raises `ConfigError`;
* `to_properties()` gives back properties that rebuild an equal configuration;
* `redacted()`, ``repr()`` and ``str()`` never show a password, a credential inside a connection
  string or a hashing salt.

Each dataclass field carries its property name, default, parser and meaning in its metadata;
docs/configuration.md lists the same properties and a unit test keeps the two in step.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bson import json_util

from connectors.config import values
from connectors.config.types import (
    DEBEZIUM_CONNECTOR_CLASS,
    HASH_MASK_PREFIX,
    SNAPSHOT_FILTER_PREFIX,
    CaptureMode,
    CaptureScope,
    CleanupPolicy,
    ConfigError,
    ConnectionMode,
    CursorPipelineOrder,
    DebeziumCompatibility,
    DeleteHandling,
    EventFormat,
    FullUpdateType,
    HashMask,
    MessageTooLargePolicy,
    NonFiniteDoubles,
    Problem,
    SnapshotMode,
    StartupMode,
    hashlib_name,
)
from connectors.core.config import CHUNK_MAX_BYTES, MAX_QUEUE_BYTES, DerivedTopicNames
from connectors.mongodb import config_values as mongo_values
from connectors.mongodb.config_checks import CheckInput, cross_checks
from connectors.secrets import MASK, Secret, redact_connection_string

__all__ = [
    "CaptureMode",
    "CaptureScope",
    "CleanupPolicy",
    "ConfigError",
    "ConnectionMode",
    "ConnectorConfig",
    "CursorPipelineOrder",
    "DebeziumCompatibility",
    "DeleteHandling",
    "EventFormat",
    "FullUpdateType",
    "HashMask",
    "KNOWN_PROPERTIES",
    "MessageTooLargePolicy",
    "NonFiniteDoubles",
    "Problem",
    "SnapshotMode",
    "StartupMode",
    "property_docs",
    "validate",
]

_HASH_MASK_PROPERTY = re.compile(r"^field\.mask\.hash\.(?P<algorithm>.+?)\.with\.salt\.(?P<salt>.+)$", re.DOTALL)
_NON_NEGATIVE = values.int_at_least(0)
_POSITIVE = values.int_at_least(1)


def _prop(
    name: str,
    default: Any,
    parse: Callable[[Any], Any],
    doc: str,
    *,
    aliases: tuple[str, ...] = (),
    render: Callable[[Any], Any] | None = None,
    empty_is_unset: bool = False,
) -> Any:
    """A dataclass field that knows its property name, parser, meaning and rendering."""
    metadata = {
        "property": name,
        "parse": parse,
        "doc": doc,
        "aliases": aliases,
        "render": render,
        "empty_is_unset": empty_is_unset,
    }
    if isinstance(default, dict):
        return field(default_factory=dict, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True, repr=False)
class ConnectorConfig(DerivedTopicNames):
    # Identity and connection
    name: str | None = _prop(
        "name",
        None,
        values.parse_identifier,
        "Unique name of the connector; keys its offsets and its Kafka transactional ids.",
    )
    topic_prefix: str | None = _prop(
        "topic.prefix",
        None,
        values.parse_identifier,
        "Logical name of the MongoDB source; prefix of every topic the connector writes.",
        aliases=("mongodb.name",),
    )
    connection_string: Secret | None = _prop(
        "mongodb.connection.string",
        None,
        mongo_values.parse_connection_string_secret,
        "MongoDB URI (mongodb:// or mongodb+srv://). Give this or mongodb.hosts.",
        empty_is_unset=True,
    )
    hosts: mongo_values.HostList | None = _prop(
        "mongodb.hosts",
        None,
        mongo_values.parse_hosts,
        "Debezium 1.x seed list: [<replica set>/]host[:port],… . Give this or mongodb.connection.string.",
        render=mongo_values.HostList.render,
        empty_is_unset=True,
    )
    user: str | None = _prop(
        "mongodb.user", None, values.parse_str, "Database user, if not in the connection string.", empty_is_unset=True
    )
    password: Secret | None = _prop(
        "mongodb.password", None, values.parse_secret, "Password of mongodb.user.", empty_is_unset=True
    )
    auth_source: str = _prop(
        "mongodb.authsource", "admin", values.parse_identifier, "Database holding the credentials of mongodb.user."
    )
    ssl_enabled: bool = _prop("mongodb.ssl.enabled", False, values.parse_bool, "Connect with TLS.")
    ssl_invalid_hostname_allowed: bool = _prop(
        "mongodb.ssl.invalid.hostname.allowed",
        False,
        values.parse_bool,
        "Accept TLS certificates whose host name does not match.",
    )
    connection_mode: ConnectionMode = _prop(
        "mongodb.connection.mode",
        ConnectionMode.SHARDED,
        values.enum_parser(ConnectionMode),
        "For a sharded cluster: sharded (one change stream through mongos, in cluster-time order) or replica_set "
        "(Debezium 2.x: one pipeline per shard reading it directly; needs network access to every shard).",
    )
    members_auto_discover: bool = _prop(
        "mongodb.members.auto.discover",
        True,
        values.parse_bool,
        "Use the hosts as seeds to discover the replica set (true) or connect to the single host as given (false).",
    )
    connect_timeout_ms: int = _prop(
        "mongodb.connect.timeout.ms", 10_000, _NON_NEGATIVE, "Connection timeout (0 = none)."
    )
    server_selection_timeout_ms: int = _prop(
        "mongodb.server.selection.timeout.ms",
        30_000,
        _NON_NEGATIVE,
        "How long the driver waits for a suitable server.",
    )
    socket_timeout_ms: int = _prop("mongodb.socket.timeout.ms", 0, _NON_NEGATIVE, "Socket read timeout (0 = none).")
    heartbeat_frequency_ms: int = _prop(
        "mongodb.heartbeat.frequency.ms",
        10_000,
        values.int_at_least(500),
        "How often the driver checks each server.",
    )
    membership_poll_interval_ms: int = _prop(
        "mongodb.poll.interval.ms",
        30_000,
        _POSITIVE,
        "How often the replica set membership and primary are re-read.",
    )
    connect_backoff_initial_delay_ms: int = _prop(
        "connect.backoff.initial.delay.ms",
        1_000,
        _POSITIVE,
        "First delay before reconnecting after a failure.",
    )
    connect_backoff_max_delay_ms: int = _prop(
        "connect.backoff.max.delay.ms",
        120_000,
        _POSITIVE,
        "Longest delay between reconnection attempts.",
    )
    connect_max_attempts: int = _prop(
        "connect.max.attempts",
        16,
        _POSITIVE,
        "Failed connection attempts in a row before the pipeline fails.",
    )

    # What to capture
    database_include_list: tuple[str, ...] = _prop(
        "database.include.list",
        (),
        values.parse_regex_list,
        "Regexes (whole name, case-insensitive) of databases to capture.",
        render=values.render_list,
    )
    database_exclude_list: tuple[str, ...] = _prop(
        "database.exclude.list",
        (),
        values.parse_regex_list,
        "Regexes of databases not to capture.",
        render=values.render_list,
    )
    collection_include_list: tuple[str, ...] = _prop(
        "collection.include.list",
        (),
        values.parse_regex_list,
        "Regexes matching <database>.<collection> of collections to capture.",
        render=values.render_list,
    )
    collection_exclude_list: tuple[str, ...] = _prop(
        "collection.exclude.list",
        (),
        values.parse_regex_list,
        "Regexes matching <database>.<collection> not to capture.",
        render=values.render_list,
    )
    field_exclude_list: tuple[str, ...] = _prop(
        "field.exclude.list",
        (),
        values.parse_field_list,
        "Fields removed from events: <db>.<collection>.<field>[.<nested>…].",
        render=values.render_list,
    )
    field_renames: tuple[str, ...] = _prop(
        "field.renames",
        (),
        values.parse_field_renames,
        "Fields renamed in events: <db>.<collection>.<field>[.<nested>…]:<new name>.",
        render=values.render_list,
    )
    field_mask_redact: tuple[str, ...] = _prop(
        "field.mask.redact",
        (),
        values.parse_field_list,
        "Fields whose values are replaced by field.mask.redact.replacement.",
        render=values.render_list,
    )
    field_mask_redact_replacement: str = _prop(
        "field.mask.redact.replacement",
        "********",
        values.parse_str,
        "Replacement value of redacted fields.",
    )
    skipped_operations: tuple[str, ...] = _prop(
        "skipped.operations",
        ("t",),
        values.parse_skipped_operations,
        "Operations not emitted: c, u, d, t (truncate), or none.",
        render=values.render_skipped_operations,
    )
    signal_data_collection: str | None = _prop(
        "signal.data.collection",
        None,
        mongo_values.parse_namespace,
        "<database>.<collection> read for signals; always captured.",
        empty_is_unset=True,
    )
    capture_mode: CaptureMode = _prop(
        "capture.mode",
        CaptureMode.CHANGE_STREAMS_UPDATE_FULL,
        values.enum_parser(CaptureMode),
        "Whether updates carry the full document (update_full) and/or the document before the change (with_pre_image).",
    )
    capture_mode_full_update_type: FullUpdateType = _prop(
        "capture.mode.full.update.type",
        FullUpdateType.LOOKUP,
        values.enum_parser(FullUpdateType),
        "How full documents of updates are obtained: lookup (updateLookup) or post_image (MongoDB 6.0+).",
    )
    capture_scope: CaptureScope = _prop(
        "capture.scope",
        CaptureScope.DEPLOYMENT,
        values.enum_parser(CaptureScope),
        "Scope of the change stream: deployment, database or collection (then capture.target is required).",
    )
    capture_target: str | None = _prop(
        "capture.target",
        None,
        values.parse_str,
        "Database (scope database) or <database>.<collection> (scope collection).",
        empty_is_unset=True,
    )
    cursor_pipeline: str | None = _prop(
        "cursor.pipeline",
        None,
        mongo_values.parse_cursor_pipeline,
        "Extra aggregation stages (JSON array) for the change stream.",
        empty_is_unset=True,
    )
    cursor_pipeline_order: CursorPipelineOrder = _prop(
        "cursor.pipeline.order",
        CursorPipelineOrder.INTERNAL_FIRST,
        values.enum_parser(CursorPipelineOrder),
        "Where cursor.pipeline goes: after (internal_first) or before (user_first) the connector's stages, or alone.",
    )
    cursor_max_await_time_ms: int = _prop(
        "cursor.max.await.time.ms",
        0,
        _NON_NEGATIVE,
        "maxAwaitTimeMS of the change stream's getMore (0 = server default).",
    )

    # Events
    event_format: EventFormat = _prop(
        "event.format",
        EventFormat.DEBEZIUM,
        values.enum_parser(EventFormat),
        "debezium (change-stream envelope), legacy (Debezium 1.x patch/filter) or flattened (new document state).",
    )
    schemas_enable: bool = _prop(
        "schemas.enable", False, values.parse_bool, 'Wrap keys and values as {"schema": …, "payload": …}.'
    )
    key_schemas_enable: bool | None = _prop(
        "key.converter.schemas.enable",
        None,
        values.parse_bool,
        "Overrides schemas.enable for keys.",
    )
    value_schemas_enable: bool | None = _prop(
        "value.converter.schemas.enable",
        None,
        values.parse_bool,
        "Overrides schemas.enable for values.",
    )
    tombstones_on_delete: bool = _prop(
        "tombstones.on.delete",
        True,
        values.parse_bool,
        "Follow each delete event with a tombstone (same key, null value).",
    )
    provide_transaction_metadata: bool = _prop(
        "provide.transaction.metadata",
        False,
        values.parse_bool,
        "Emit BEGIN/END events to <topic.prefix>.<topic.transaction> and a transaction block in change events.",
    )
    topic_transaction: str = _prop(
        "topic.transaction",
        "transaction",
        values.parse_topic,
        "Suffix of the transaction metadata topic.",
    )
    heartbeat_interval_ms: int = _prop(
        "heartbeat.interval.ms",
        0,
        _NON_NEGATIVE,
        "Idle time after which a heartbeat moves the offset (0 = off).",
    )
    heartbeat_topics_prefix: str = _prop(
        "heartbeat.topics.prefix",
        "__debezium-heartbeat",
        values.parse_topic,
        "Heartbeats go to <prefix>.<topic.prefix>.",
    )
    flattened_delete_handling: DeleteHandling = _prop(
        "flattened.delete.tombstone.handling.mode",
        DeleteHandling.TOMBSTONE,
        values.enum_parser(DeleteHandling),
        "Flattened format only: tombstone, drop, rewrite (adds __deleted) or rewrite-with-tombstone.",
    )
    flattened_add_fields: tuple[str, ...] = _prop(
        "flattened.add.fields",
        (),
        values.parse_added_fields,
        "Flattened format only: envelope fields added to the document (op, ts_ms, source.<field> or a source field).",
        render=values.render_list,
    )
    flattened_add_fields_prefix: str = _prop(
        "flattened.add.fields.prefix",
        "__",
        values.parse_str,
        "Flattened format only: prefix of the added fields.",
    )
    debezium_compatibility: DebeziumCompatibility = _prop(
        "debezium.compatibility",
        DebeziumCompatibility.V3,
        values.enum_parser(DebeziumCompatibility),
        "3: events as Debezium 2.7+/3.x writes them (source ts_us/ts_ns, ts_ms = the change's wall time, no rs; "
        "transaction data collections <db>.<collection>); 2: the Debezium 2.0-2.5 shape (source rs, ts_ms from the "
        "cluster time, data collections <rs>.<db>.<collection>), for consumers pinned to it.",
    )
    json_non_finite_doubles: NonFiniteDoubles = _prop(
        "json.non.finite.doubles",
        NonFiniteDoubles.BARE,
        values.enum_parser(NonFiniteDoubles),
        "NaN and Infinity inside documents: bare (NaN, -Infinity, as Debezium writes them; Python's json, Jackson "
        "and Spark read them) or extended ({\"$numberDouble\": \"NaN\"}, strict JSON).",
    )
    message_too_large_policy: MessageTooLargePolicy = _prop(
        "message.too.large.policy",
        MessageTooLargePolicy.FAIL,
        values.enum_parser(MessageTooLargePolicy),
        "fail: stop the pipeline; skip: drop the event and write a warning to errors.topic.",
    )
    errors_topic: str | None = _prop(
        "errors.topic",
        None,
        values.parse_topic,
        "Topic of skipped-message warnings (default <topic.prefix>.errors).",
        empty_is_unset=True,
    )

    # Kafka batching and topics
    max_batch_size: int = _prop("max.batch.size", 2048, _POSITIVE, "Most events in one Kafka transaction.")
    max_queue_size: int = _prop(
        "max.queue.size", 8192, _POSITIVE, "Capacity (events) of the queue between source and sink."
    )
    max_queue_size_in_bytes: int = _prop(
        "max.queue.size.in.bytes",
        MAX_QUEUE_BYTES,
        _NON_NEGATIVE,
        "Capacity of that queue in bytes (0 = unbounded).",
    )
    poll_interval_ms: int = _prop(
        "poll.interval.ms", 500, _POSITIVE, "Longest wait before a partial batch is committed."
    )
    topic_creation_enable: bool = _prop(
        "topic.creation.enable", True, values.parse_bool, "Create missing topics through AdminClient."
    )
    topic_creation_partitions: int = _prop(
        "topic.creation.default.partitions",
        -1,
        values.parse_broker_count,
        "Partitions of created topics (-1 = broker default).",
    )
    topic_creation_replication_factor: int = _prop(
        "topic.creation.default.replication.factor",
        -1,
        values.parse_broker_count,
        "Replication factor of created topics (-1 = broker default).",
    )
    topic_creation_cleanup_policy: CleanupPolicy = _prop(
        "topic.creation.default.cleanup.policy",
        CleanupPolicy.DELETE,
        values.enum_parser(CleanupPolicy),
        "cleanup.policy of created change topics: delete, compact or compact,delete.",
    )
    topic_creation_max_message_bytes: int = _prop(
        "topic.creation.default.max.message.bytes", -1, values.parse_max_message_bytes, values.MAX_MESSAGE_BYTES_DOC
    )
    producer_max_request_size: int = _prop(
        "producer.override.max.request.size", 1_000_000, values.parse_max_request_size, values.MAX_REQUEST_SIZE_DOC
    )
    offset_storage_topic: str = _prop(
        "offset.storage.topic", "cdc.offsets", values.parse_topic, "Compacted topic holding the offsets."
    )
    offset_storage_partitions: int = _prop(
        "offset.storage.partitions", 25, _POSITIVE,
        "Partitions of the offsets topic when it is created (Kafka Connect's default). A pipeline reads only the "
        "partition its key hashes to, so other connectors' open transactions do not hold up its start.",
    )
    offset_storage_replication_factor: int = _prop(
        "offset.storage.replication.factor",
        -1,
        values.parse_broker_count,
        "Replication factor of the offsets topic (-1 = broker default).",
    )

    # Snapshots and start position
    snapshot_mode: SnapshotMode = _prop(
        "snapshot.mode",
        SnapshotMode.INITIAL,
        values.enum_parser(SnapshotMode),
        "initial, initial_only, never, no_data, when_needed or always.",
    )
    snapshot_include_collection_list: tuple[str, ...] = _prop(
        "snapshot.include.collection.list",
        (),
        values.parse_regex_list,
        "Regexes of <database>.<collection> to snapshot (default: every captured collection).",
        render=values.render_list,
    )
    snapshot_collection_filter_overrides: tuple[str, ...] = _prop(
        "snapshot.collection.filter.overrides",
        (),
        mongo_values.parse_namespace_list,
        "Collections snapshotted through a filter given in snapshot.collection.filter.overrides.<db>.<collection>.",
        render=values.render_list,
    )
    snapshot_collection_filters: dict[str, str] = _prop(
        SNAPSHOT_FILTER_PREFIX + "<database>.<collection>",
        {},
        mongo_values.parse_json_query,
        "MongoDB query (JSON) selecting the documents a snapshot reads from that collection.",
    )
    snapshot_delay_ms: int = _prop("snapshot.delay.ms", 0, _NON_NEGATIVE, "Wait before a snapshot starts.")
    snapshot_fetch_size: int = _prop(
        "snapshot.fetch.size", 0, _NON_NEGATIVE, "Snapshot cursor batch size (0 = driver default)."
    )
    snapshot_max_threads: int = _prop("snapshot.max.threads", 1, _POSITIVE, "Chunks read in parallel per worker.")
    snapshot_chunk_size: int = _prop(
        "snapshot.chunk.size",
        8192,
        _POSITIVE,
        "Documents per chunk of a snapshot: the unit read by one thread or worker and committed in one transaction.",
    )
    snapshot_chunk_max_bytes: int = _prop(
        "snapshot.chunk.max.bytes",
        CHUNK_MAX_BYTES,
        _NON_NEGATIVE,
        "About this many bytes of documents per chunk, initial and incremental: a collection of large documents gets "
        "fewer documents per chunk (0: documents only).",
    )
    incremental_snapshot_chunk_size: int = _prop(
        "incremental.snapshot.chunk.size",
        1024,
        _POSITIVE,
        "Documents per chunk (one watermark window) of an incremental snapshot.",
    )
    startup_mode: StartupMode = _prop(
        "startup.mode",
        StartupMode.INITIAL,
        values.enum_parser(StartupMode),
        "Where streaming starts without an offset: initial (per snapshot.mode), latest, or timestamp.",
    )
    startup_timestamp_ms: int | None = _prop(
        "startup.timestamp",
        None,
        values.parse_timestamp_ms,
        "With startup.mode=timestamp: ms since the epoch, or ISO-8601, of the first change to capture.",
        empty_is_unset=True,
    )

    # Masks whose property names carry the algorithm and salt
    field_mask_hash: tuple[HashMask, ...] = _prop(
        HASH_MASK_PREFIX + "<algorithm>.with.salt.<salt>",
        (),
        values.parse_field_list,
        "Fields replaced by hex(<algorithm>(salt + value)); the salt is never shown.",
    )

    # Accepted for compatibility with Kafka Connect configurations
    connector_class: str | None = _prop(
        "connector.class",
        None,
        mongo_values.parse_connector_class,
        f"Accepted when it is {DEBEZIUM_CONNECTOR_CLASS}.",
    )
    tasks_max: int = _prop("tasks.max", 1, _POSITIVE, "Accepted and ignored: each replica set is one pipeline.")

    # --- building ---------------------------------------------------------------------------

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> ConnectorConfig:
        parsed, problems = _parse(props)
        if problems:
            raise ConfigError(problems)
        return cls(**parsed)

    def to_properties(self, *, include_defaults: bool = False) -> dict[str, Any]:
        """Properties that rebuild this configuration. Secrets appear in clear: store them, never show them."""
        return self._properties(include_defaults=include_defaults, redact=False)

    def redacted(self) -> dict[str, Any]:
        """Every property, with passwords, URI credentials and hashing salts masked: safe to log or serve."""
        return self._properties(include_defaults=True, redact=True)

    def __repr__(self) -> str:
        shown = self._properties(include_defaults=False, redact=True)
        return "ConnectorConfig(" + ", ".join(f"{name}={value!r}" for name, value in shown.items()) + ")"

    __str__ = __repr__

    def _properties(self, *, include_defaults: bool, redact: bool) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for spec in dataclasses.fields(self):
            value = getattr(self, spec.name)
            if spec.name == "field_mask_hash":
                for mask in value:
                    result[mask.property_name(redact=redact)] = values.join_list(mask.fields)
            elif spec.name == "snapshot_collection_filters":
                for namespace, query in value.items():
                    result[SNAPSHOT_FILTER_PREFIX + namespace] = query
            elif include_defaults or value != spec.default:
                result[spec.metadata["property"]] = _render(spec, value, redact=redact)
        return result

    # --- values the engine derives from the properties --------------------------------------

    @property
    def full_document(self) -> str | None:
        """``full_document`` for watch(); None leaves the server default (updates carry no document)."""
        if not self.capture_mode.full_update:
            return None
        return "whenAvailable" if self.capture_mode_full_update_type is FullUpdateType.POST_IMAGE else "updateLookup"

    @property
    def full_document_before_change(self) -> str | None:
        """``full_document_before_change`` for watch(), as Debezium asks for pre-images."""
        return "whenAvailable" if self.capture_mode.pre_image else None

    def snapshot_filter(self, namespace: str) -> dict[str, Any] | None:
        """The query a snapshot uses for this collection, or None to read it whole."""
        query = self.snapshot_collection_filters.get(namespace)
        return json_util.loads(query) if query is not None else None

    def cursor_pipeline_stages(self) -> list[dict[str, Any]]:
        return json_util.loads(self.cursor_pipeline) if self.cursor_pipeline else []

    def mongo_client_options(self) -> dict[str, Any]:
        """Keyword arguments for ``pymongo.MongoClient``: the one place secrets are revealed."""
        options: dict[str, Any] = {
            "connectTimeoutMS": self.connect_timeout_ms or None,
            "serverSelectionTimeoutMS": self.server_selection_timeout_ms,
            "socketTimeoutMS": self.socket_timeout_ms or None,
            "heartbeatFrequencyMS": self.heartbeat_frequency_ms,
            "appname": f"cdcplatform:{self.name}",
        }
        if self.connection_string is not None:
            options["host"] = self.connection_string.reveal()
        elif self.hosts is not None:
            options["host"] = [
                f"[{host}]:{port}" if ":" in host else f"{host}:{port}" for host, port in self.hosts.hosts
            ]
            if self.hosts.replica_set:
                options["replicaSet"] = self.hosts.replica_set
        if not self.members_auto_discover:
            options["directConnection"] = True
        if self.user:
            options["username"] = self.user
            options["authSource"] = self.auth_source
            if self.password is not None:
                options["password"] = self.password.reveal()
        if self.ssl_enabled:
            options["tls"] = True
            if self.ssl_invalid_hostname_allowed:
                options["tlsAllowInvalidHostnames"] = True
        return options


def _render(spec: dataclasses.Field, value: Any, *, redact: bool) -> Any:
    if value is None:
        return None
    if isinstance(value, Secret):
        if not redact:
            return value.reveal()
        return redact_connection_string(value.reveal()) if spec.name == "connection_string" else MASK
    render = spec.metadata["render"]
    if render is not None:
        return render(value)
    if isinstance(value, StrEnum):
        return value.value
    return value


# --- parsing and validation -------------------------------------------------------------------

_FIELDS = {spec.metadata["property"]: spec for spec in dataclasses.fields(ConnectorConfig)}
_DYNAMIC_FIELDS = frozenset({"field_mask_hash", "snapshot_collection_filters"})
_ALIASES = {alias: name for name, spec in _FIELDS.items() for alias in spec.metadata["aliases"]}
KNOWN_PROPERTIES = tuple(name for name, spec in _FIELDS.items() if spec.name not in _DYNAMIC_FIELDS)


def _defaults() -> dict[str, Any]:
    return {
        spec.name: spec.default if spec.default is not dataclasses.MISSING else spec.default_factory()
        for spec in dataclasses.fields(ConnectorConfig)
    }


def property_docs() -> list[tuple[str, Any, str]]:
    """(property, default as a configuration writes it, meaning) for every property, in declaration order."""
    defaults = _defaults()
    rows = []
    for name, spec in _FIELDS.items():
        default = None if spec.name in _DYNAMIC_FIELDS else _render(spec, defaults[spec.name], redact=False)
        rows.append((name, default, spec.metadata["doc"]))
    return rows


def validate(props: Any) -> list[Problem]:
    """Every problem of these properties, in one list (empty when they are valid)."""
    return _parse(props)[1]


def _parse(props: Any) -> tuple[dict[str, Any], list[Problem]]:
    if not isinstance(props, Mapping):
        return {}, [Problem("", f"the configuration must be an object of properties, got {type(props).__name__}")]
    parsed: dict[str, Any] = {}
    given: dict[str, str] = {}
    problems: list[Problem] = []
    hash_masks: list[HashMask] = []
    snapshot_filters: dict[str, str] = {}

    for key, raw in props.items():
        if not isinstance(key, str):
            problems.append(Problem(str(key), f"property names must be strings, got {key!r}"))
        elif raw is None:
            continue
        elif _HASH_MASK_PROPERTY.match(key):
            _parse_hash_mask(key, raw, hash_masks, problems)
        elif key.startswith(SNAPSHOT_FILTER_PREFIX):
            _parse_snapshot_filter(key, raw, snapshot_filters, problems)
        else:
            _parse_property(key, raw, props, parsed, given, problems)

    if hash_masks:
        parsed["field_mask_hash"] = tuple(hash_masks)
    if snapshot_filters:
        parsed["snapshot_collection_filters"] = snapshot_filters
    check_input = CheckInput(
        settings={**_defaults(), **parsed},
        explicit=frozenset(parsed),
        given=given,
        failed=frozenset(problem.property for problem in problems),
    )
    problems.extend(cross_checks(check_input))
    return parsed, problems


def _parse_property(
    key: str,
    raw: Any,
    props: Mapping[str, Any],
    parsed: dict[str, Any],
    given: dict[str, str],
    problems: list[Problem],
) -> None:
    name = _ALIASES.get(key, key)
    spec = _FIELDS.get(name)
    if spec is None or spec.name in _DYNAMIC_FIELDS:
        problems.append(Problem(key, _unknown_property_message(key)))
        return
    if name in given:
        if _comparable(props[given[name]]) != _comparable(raw):
            problems.append(
                Problem(key, f"{key} and {given[name]} name the same property with different values; keep one")
            )
        return
    given[name] = key
    if spec.metadata["empty_is_unset"] and isinstance(raw, str) and not raw.strip():
        return
    try:
        parsed[spec.name] = spec.metadata["parse"](raw)
    except ValueError as error:
        problems.append(Problem(key, f"{key}: {error}"))


def _comparable(raw: Any) -> Any:
    return raw.strip() if isinstance(raw, str) else raw


def _unknown_property_message(key: str) -> str:
    close = difflib.get_close_matches(key, [*KNOWN_PROPERTIES, *_ALIASES], n=1, cutoff=0.75)
    if close:
        return f"unknown property {key!r}; did you mean {close[0]!r}?"
    if key.startswith(HASH_MASK_PREFIX):
        return f"{key!r} is not of the form field.mask.hash.<algorithm>.with.salt.<salt>"
    return f"unknown property {key!r}; remove it or check its spelling against docs/configuration.md"


def _parse_hash_mask(key: str, raw: Any, masks: list[HashMask], problems: list[Problem]) -> None:
    match = _HASH_MASK_PROPERTY.match(key)
    assert match is not None
    algorithm, salt = match.group("algorithm"), match.group("salt")
    shown_key = f"{HASH_MASK_PREFIX}{algorithm}.with.salt.{MASK}"  # the salt is a secret, even in a problem
    name = hashlib_name(algorithm)
    if name not in hashlib.algorithms_available or name.startswith("shake"):
        problems.append(
            Problem(shown_key, f"{shown_key}: unknown hash algorithm {algorithm!r}; use SHA-256 or SHA-512")
        )
        return
    try:
        fields = values.parse_field_list(raw)
    except ValueError as error:
        problems.append(Problem(shown_key, f"{shown_key}: {error}"))
        return
    if not fields:
        problems.append(Problem(shown_key, f"{shown_key}: list at least one field to hash"))
        return
    masks.append(HashMask(algorithm, Secret(salt), fields))


def _parse_snapshot_filter(key: str, raw: Any, filters: dict[str, str], problems: list[Problem]) -> None:
    namespace = key[len(SNAPSHOT_FILTER_PREFIX) :]
    try:
        mongo_values.check_namespace(namespace)
        filters[namespace] = mongo_values.parse_json_query(raw)
    except ValueError as error:
        problems.append(Problem(key, f"{key}: {error}"))
