"""Kafka messages (topic, key bytes, value bytes) for change records, transaction boundaries and heartbeats.

Topics: ``<topic.prefix>.<db>.<collection>`` for changes, ``<topic.prefix>.<topic.transaction>`` for
transaction metadata, ``<heartbeat.topics.prefix>.<topic.prefix>`` for heartbeats. Names keep
``[A-Za-z0-9_.-]``; every other character becomes ``_``.

Keys are ``{"id": "<_id as relaxed Extended JSON>"}`` for every format; a delete is followed by a
tombstone (same key, null value) unless ``tombstones.on.delete=false``. With ``schemas.enable``
keys and values use Kafka Connect's ``{"schema": …, "payload": …}`` form; tombstones stay null.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from connectors.core.transactions import TransactionBoundary
from connectors.events.json_converter import jackson_text
from connectors.kafka.topics import sanitize_topic
from connectors.mongodb import connect_schemas as schemas
from connectors.mongodb import envelopes, extjson
from connectors.mongodb.config import (
    ConnectorConfig,
    DebeziumCompatibility,
    DeleteHandling,
    EventFormat,
    NonFiniteDoubles,
)
from connectors.mongodb.records import ChangeRecord, Namespace, Operation

CHANGE = "change"
TOMBSTONE = "tombstone"
TRANSACTION = "transaction"
HEARTBEAT = "heartbeat"


# Not frozen=True, as OutMessage: one is built per event, and a frozen dataclass costs four times as much to build.
@dataclass(slots=True, unsafe_hash=True)
class KafkaMessage:
    """One record to produce; field for field what `connectors.kafka.sink.OutMessage` carries."""

    topic: str
    key: bytes | None
    value: bytes | None  # None: a tombstone
    headers: tuple[tuple[str, bytes], ...] = ()
    kind: str = CHANGE


def topic_name(prefix: str, namespace: Namespace) -> str:
    return sanitize_topic(f"{prefix}.{namespace.db}.{namespace.collection}")


# One encoder for every message: json.dumps with options would build a new one per call.
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def encode_json(payload: Any) -> bytes:
    """Compact UTF-8 JSON, as Kafka Connect's JsonConverter writes it."""
    return jackson_text(_COMPACT(payload).encode())


def encode_envelope(payload: Any) -> bytes:
    """`encode_json` for keys and envelopes, which hold only str, int, bool, None, lists and str-keyed dicts (their
    documents are already JSON text): for those orjson writes the same bytes, several times faster. Floats, whose
    exponent notation differs, must not reach it; anything orjson refuses (an int over 64 bits) goes to json."""
    try:
        return jackson_text(orjson.dumps(payload))
    except TypeError:
        return encode_json(payload)


def encode_flattened(document: Any) -> bytes:
    """A flattened document (from `extjson.to_relaxed_fragments`: numbers already Java's text) as compact JSON."""
    return orjson.dumps(document)


class EventBuilder:
    def __init__(
        self,
        config: ConnectorConfig,
        replica_set: str,
        *,
        clock: Callable[[], float] = time.time,
        version: str = envelopes.CONNECTOR_VERSION,
    ) -> None:
        self.config = config
        self.context = envelopes.SourceContext(
            config.topic_prefix,
            replica_set,
            version,
            debezium_2x=config.debezium_compatibility is DebeziumCompatibility.V2,
            bare_non_finite=config.json_non_finite_doubles is NonFiniteDoubles.BARE,
        )
        self._clock = clock
        self._topics: dict[Namespace, str] = {}
        self._value_schemas: dict[str, dict[str, Any]] = {}

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def topic_for(self, namespace: Namespace) -> str:
        topic = self._topics.get(namespace)
        if topic is None:
            topic = self._topics[namespace] = topic_name(self.config.topic_prefix, namespace)
        return topic

    def data_collection(self, record: ChangeRecord) -> str:
        return self.data_collection_of(record.namespace)

    def data_collection_of(self, namespace: Namespace) -> str:
        """A collection as transaction metadata names it: ``<db>.<collection>`` (Debezium 2.7+), or
        ``<replica set>.<db>.<collection>`` with debezium.compatibility=2."""
        if self.context.debezium_2x:
            return f"{self.context.replica_set}.{namespace.full_name}"
        return namespace.full_name

    def key(self, record: ChangeRecord) -> bytes:
        payload = {"id": extjson.key_json(record.document_id)}
        if self.config.key_schemas:
            return encode_envelope(schemas.wrap(schemas.key_schema(self.topic_for(record.namespace)), payload))
        return encode_envelope(payload)

    def value_schema(self, topic: str) -> dict[str, Any]:
        schema = self._value_schemas.get(topic)
        if schema is None:
            if self.config.event_format is EventFormat.LEGACY:
                schema = schemas.legacy_envelope_schema(topic)
            else:
                schema = schemas.envelope_schema(topic, self.context.debezium_2x)
            self._value_schemas[topic] = schema
        return schema

    def change_messages(
        self,
        record: ChangeRecord,
        transaction: Mapping[str, Any] | None = None,
        *,
        document_filter: Mapping[str, Any] | None = None,
        ts_ms: int | None = None,
    ) -> list[KafkaMessage]:
        """The change event of ``record`` and the tombstone that follows a delete.

        ``document_filter`` is the legacy format's ``filter`` (the document key after field rules);
        it defaults to the document key.
        """
        topic = self.topic_for(record.namespace)
        key = self.key(record)
        ts_ms = self.now_ms() if ts_ms is None else ts_ms
        fmt = self.config.event_format
        is_delete = record.operation is Operation.DELETE
        if fmt is EventFormat.FLATTENED:
            return self._flattened_messages(record, topic, key, ts_ms)
        if fmt is EventFormat.LEGACY:
            payload = envelopes.legacy_value(
                record,
                self.context,
                ts_ms,
                transaction,
                document_filter=document_filter if document_filter is not None else record.document_key,
            )
            if self.config.value_schemas:
                payload = schemas.wrap(self.value_schema(topic), payload)
        else:
            payload = envelopes.debezium_value(record, self.context, ts_ms, transaction)
            if self.config.value_schemas:
                payload = schemas.wrap(self.value_schema(topic), payload)
        value = encode_envelope(payload)
        messages = [KafkaMessage(topic, key, value)]
        if is_delete and self.config.tombstones_on_delete:
            messages.append(KafkaMessage(topic, key, None, kind=TOMBSTONE))
        return messages

    def _flattened_messages(self, record: ChangeRecord, topic: str, key: bytes, ts_ms: int) -> list[KafkaMessage]:
        mode = self.config.flattened_delete_handling
        rewrite = mode in (DeleteHandling.REWRITE, DeleteHandling.REWRITE_WITH_TOMBSTONE)
        tombstone = KafkaMessage(topic, key, None, kind=TOMBSTONE)
        if record.operation is Operation.DELETE:
            if mode is DeleteHandling.DROP:
                return []
            if mode is DeleteHandling.TOMBSTONE:
                return [tombstone]
        value = envelopes.flattened_value(
            record,
            self.context,
            ts_ms,
            add_fields=self.config.flattened_add_fields,
            prefix=self.config.flattened_add_fields_prefix,
            rewrite=rewrite,
        )
        messages = [KafkaMessage(topic, key, encode_flattened(value))]
        if record.operation is Operation.DELETE and mode is DeleteHandling.REWRITE_WITH_TOMBSTONE:
            messages.append(tombstone)
        return messages

    def transaction_message(self, boundary: TransactionBoundary) -> KafkaMessage:
        key_payload = {"id": boundary.id}
        value_payload = boundary.payload()
        if self.config.key_schemas:
            key_payload = schemas.wrap(schemas.transaction_key_schema(), key_payload)
        if self.config.value_schemas:
            value_payload = schemas.wrap(schemas.transaction_value_schema(), value_payload)
        return KafkaMessage(
            sanitize_topic(self.config.transaction_topic_name),
            encode_json(key_payload),
            encode_json(value_payload),
            kind=TRANSACTION,
        )

    def heartbeat_message(self, ts_ms: int | None = None) -> KafkaMessage:
        key_payload: dict[str, Any] = {"serverName": self.config.topic_prefix}
        value_payload: dict[str, Any] = {"ts_ms": self.now_ms() if ts_ms is None else ts_ms}
        if self.config.key_schemas:
            key_payload = schemas.wrap(schemas.heartbeat_key_schema(), key_payload)
        if self.config.value_schemas:
            value_payload = schemas.wrap(schemas.heartbeat_value_schema(), value_payload)
        return KafkaMessage(
            sanitize_topic(self.config.heartbeat_topic_name),
            encode_json(key_payload),
            encode_json(value_payload),
            kind=HEARTBEAT,
        )
