"""Kafka messages of change stream events read raw (`rawjson.RawChangeEvent`), written by the compiled module without
decoding the event or building a ChangeRecord.

It serves the configurations where an event's message is Debezium 3.x's envelope of one document change:
``event.format=debezium`` with the 3.x source block and no field rules on the collection; for change stream events
(`build`) and for snapshot reads of raw documents (`read_messages`). With ``provide.transaction.metadata`` it writes
the events outside transactions while none is open (their ``transaction`` is null and they add no boundary).
Everything else, and any event the compiled module leaves to Python (another operation, a value type it does not
write), goes through the Transformer. Both give the same bytes (tests/unit/test_raw_events.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import bson
import orjson
from bson.raw_bson import RawBSONDocument

from connectors.config import DebeziumCompatibility, EventFormat
from connectors.mongodb import connect_schemas, envelopes, extjson, rawjson
from connectors.mongodb.events import TOMBSTONE, KafkaMessage, encode_envelope
from connectors.mongodb.records import Namespace, Operation, SnapshotMarker, UpdateDescription, shared_namespace
from connectors.mongodb.transformer import Transformer

_OPERATIONS = {"insert": Operation.CREATE, "update": Operation.UPDATE, "replace": Operation.UPDATE,
               "delete": Operation.DELETE}

NOT_WRITTEN = object()  # `RawEventWriter.build`'s answer for an event the Transformer must build

# An event of a transaction has `lsid` and `txnNumber` at its top level. Finding neither name anywhere in its bytes
# proves it is outside one; a document field of that name only sends the event to the Transformer.
_TRANSACTION_FIELDS = (b"txnNumber\x00", b"lsid\x00")


@dataclass(frozen=True, slots=True)
class _Collection:
    """What the writer needs to know of one collection, decided once."""

    captured: bool
    plain: bool  # no field rules: the documents are written as they are
    topic: str
    key_schema: bytes | None  # `{"schema":<key schema>,"payload":` with key schemas on
    value_schema: bytes | None


class RawEventWriter:
    def __init__(self, transformer: Transformer) -> None:
        config = transformer.config
        self._transformer = transformer
        self._events = transformer.events
        self._skipped = transformer.filter.skipped
        self._bare = transformer.events.context.bare_non_finite
        self._tombstones = config.tombstones_on_delete
        self._key_schemas = config.key_schemas
        self._value_schemas = config.value_schemas
        context = transformer.events.context
        head = {"version": context.version, "connector": envelopes.CONNECTOR_TYPE, "name": context.name}
        self._source_prefix = orjson.dumps(head)[:-1] + b',"ts_ms":'  # the rest of the block is the event's
        self._collections: dict[tuple[str, str], _Collection] = {}
        self._transactions = transformer.transactions  # None without provide.transaction.metadata

    @classmethod
    def for_transformer(cls, transformer: Transformer) -> RawEventWriter | None:
        """A writer when the configuration's messages are ones it writes (and the compiled module is built)."""
        config = transformer.config
        if (
            rawjson.compiled is None
            or config.event_format is not EventFormat.DEBEZIUM
            or config.debezium_compatibility is DebeziumCompatibility.V2
        ):
            return None
        return cls(transformer)

    def _collection(self, db: str, coll: str) -> _Collection:
        collection = self._collections.get((db, coll))
        if collection is None:
            namespace = shared_namespace(db, coll)
            topic = self._events.topic_for(namespace)
            key_schema = value_schema = None
            if self._key_schemas:
                key_schema = b'{"schema":' + orjson.dumps(connect_schemas.key_schema(topic)) + b',"payload":'
            if self._value_schemas:
                value_schema = b'{"schema":' + orjson.dumps(self._events.value_schema(topic)) + b',"payload":'
            collection = self._collections[(db, coll)] = _Collection(
                self._transformer.filter.namespaces.includes(namespace),
                self._transformer.field_rules.for_namespace(namespace).is_identity,
                topic, key_schema, value_schema,
            )
        return collection

    def build(self, event: rawjson.RawChangeEvent) -> tuple[str, list[KafkaMessage]] | None | object:
        """What `MongoEventBuilder.build` returns for ``event`` (None: filtered out), or NOT_WRITTEN."""
        head = event.head
        if head is None:
            return NOT_WRITTEN
        operation_type, db, coll, _token, _time, description = head
        operation = _OPERATIONS.get(operation_type)
        if operation is None or db is None or coll is None:
            return NOT_WRITTEN
        collection = self._collection(db, coll)
        if not collection.captured or operation in self._skipped:
            return None
        if not collection.plain or self._transactions is not None and self._in_transaction(event.raw):
            return NOT_WRITTEN
        description_json = None
        if description is not None and operation is Operation.UPDATE:
            update = UpdateDescription.from_event(bson.decode(description, rawjson.DECODE_OPTIONS))
            description_json = encode_envelope(envelopes.update_description_block(update))
        written = rawjson.compiled.change_value(event.raw, self._source_prefix, self._bare, self._events.now_ms(),
                                                description_json)
        if written is None:
            return NOT_WRITTEN
        message = _message(collection, written, lambda: event["documentKey"]["_id"])
        messages = [message]
        if operation is Operation.DELETE and self._tombstones:
            messages.append(KafkaMessage(collection.topic, message.key, None, kind=TOMBSTONE))
        return operation.value, messages

    def _in_transaction(self, raw: bytes) -> bool:
        """Whether the Transformer must see the event for its transaction metadata: a transaction is open (this
        event continues or ends it) or the event may belong to one."""
        return self._transactions.open_transaction_id is not None or any(name in raw for name in _TRANSACTION_FIELDS)

    def read_messages(self, namespace: Namespace, document: RawBSONDocument,
                      marker: SnapshotMarker) -> list[KafkaMessage] | None:
        """The messages of a snapshot read of ``document`` (what the Transformer gives for
        `ChangeRecord.snapshot_read`), or None when the Transformer must build them."""
        collection = self._collection(namespace.db, namespace.collection)
        if not collection.captured or not collection.plain:
            return None
        written = rawjson.compiled.snapshot_value(document.raw, self._source_prefix, self._bare,
                                                  self._events.now_ms(), marker.value, namespace.db,
                                                  namespace.collection)
        if written is None:
            return None
        return [_message(collection, written, lambda: rawjson.document_key(document)["_id"])]


def _message(collection: _Collection, written: tuple[bytes, bytes | None],
             document_id: Callable[[], Any]) -> KafkaMessage:
    """The message of a (value, key) the compiled module wrote: the key written by `extjson` when the module left it
    to Python (an _id of another type than int, string and ObjectId), both wrapped with their schemas if on."""
    value, key = written
    if key is None:
        key = encode_envelope({"id": extjson.key_json(document_id())})
    if collection.key_schema is not None:
        key = collection.key_schema + key + b"}"
    if collection.value_schema is not None:
        value = collection.value_schema + value + b"}"
    return KafkaMessage(collection.topic, key, value)
