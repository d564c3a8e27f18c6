"""Kafka messages of change stream events read raw (`rawjson.RawChangeEvent`), written by the compiled module without
decoding the event or building a ChangeRecord.

It serves the configurations where an event's message is Debezium's envelope of one document change:
``event.format=debezium`` and no field rules on the collection; for change stream events (`build_into`, with the 3.x or
the 2.x source block) and for snapshot reads of raw documents (`read_messages`, 3.x only). With
``provide.transaction.metadata`` an event that belongs to a transaction, or comes while one is open, also goes to
the Transformer's transaction tracker: the boundaries it returns come first, and its ``transaction`` block replaces
the module's ``null``.
Everything else, and any event the compiled module leaves to Python (another operation, a value type it does not
write), goes through the Transformer. Both give the same bytes (tests/unit/test_raw_events.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import bson
import orjson
from bson.raw_bson import RawBSONDocument

from connectors.config.types import EventFormat
from connectors.core.source import BuiltChanges
from connectors.mongodb import connect_schemas, envelopes, extjson, rawjson
from connectors.mongodb.events import CHANGE, TOMBSTONE, KafkaMessage, encode_envelope
from connectors.mongodb.rawjson import RawChangeEvent
from connectors.mongodb.records import (
    Namespace,
    Operation,
    SnapshotMarker,
    UpdateDescription,
    shared_namespace,
    transaction_id_of_json,
)
from connectors.mongodb.transformer import Transformer

# An event's operationType -> its Debezium operation (Operation's values: plain strings cost less per event)
_OPERATION_VALUES = {"insert": Operation.CREATE.value, "update": Operation.UPDATE.value,
                     "replace": Operation.UPDATE.value, "delete": Operation.DELETE.value}

NOT_WRITTEN = object()  # `RawEventWriter.build_into`'s answer for an event the Transformer must build

# How every value the compiled module writes ends (connectors/mongodb/csrc/change_event.c): an event's block goes
# in place of its null.
_NO_TRANSACTION = b'"transaction":null}'
# The end of the source block the compiled module writes: `…,"lsid":<lsid as a JSON string, or null>,"txnNumber":
# <digits or null>,"wallTime":…}`. The documents before it are JSON strings, so an unescaped `,"lsid":` is the
# source block's; its lsid string holds no unescaped quote either. Reading the transaction from there (searched
# from the end, where it is) costs ~0.5 µs; decoding the event's lsid and writing it as JSON again cost ~20, and
# looking for `lsid` and `txnNumber` in the event's bytes ~5 (a scan of every byte).
_LSID = b',"lsid":'
_TXN_NUMBER = b',"txnNumber":'
_WALL_TIME = b',"wallTime":'


@dataclass(frozen=True, slots=True)
class _Collection:
    """What the writer needs to know of one collection, decided once."""

    captured: bool
    plain: bool  # no field rules: the documents are written as they are
    topic: str
    data_collection: str  # its name in transaction metadata
    key_schema: bytes | None  # `{"schema":<key schema>,"payload":` with key schemas on
    value_schema: bytes | None


class RawEventWriter:
    def __init__(self, transformer: Transformer) -> None:
        config = transformer.config
        self._transformer = transformer
        self._events = transformer.events
        self._now_ms = transformer.events.now_ms
        self._skipped_values = frozenset(operation.value for operation in transformer.filter.skipped)
        self._bare = transformer.events.context.bare_non_finite
        self._tombstones = config.tombstones_on_delete
        self._key_schemas = config.key_schemas
        self._value_schemas = config.value_schemas
        context = transformer.events.context
        head = {"version": context.version, "connector": envelopes.CONNECTOR_TYPE, "name": context.name}
        self._source_prefix = orjson.dumps(head)[:-1] + b',"ts_ms":'  # the rest of the block is the event's
        # Debezium 2.x's source block (change events only: its snapshot reads go to the Transformer)
        self._replica_set = orjson.dumps(context.replica_set) if context.debezium_2x else None
        self._collections: dict[tuple[str, str], _Collection] = {}
        self._transactions = transformer.transactions  # None without provide.transaction.metadata
        self._lsids: dict[bytes, str] = {}  # an lsid as the source block writes it -> its JSON text
        # {db: {coll: topic}} of the captured collections written as they are: what `write_run` hands the compiled
        # module, which writes runs of their changes without a Python call per change. Runs are not written with
        # schemas (they wrap each message) or transaction metadata (the tracker sees each event).
        self._plain_topics: dict[str, dict[str, str]] = {}
        self.writes_runs = self._transactions is None and not self._key_schemas and not self._value_schemas
        # `change_messages`' writing tuple, around the run's ts_ms: (event class, message class, topics, skipped
        # operations, source prefix, bare non-finite, ts_ms, rs, tombstones, a message's headers, its kind, a
        # tombstone's kind)
        self._run_writing = (RawChangeEvent, KafkaMessage, self._plain_topics, "".join(sorted(self._skipped_values)),
                             self._source_prefix, self._bare)
        self._run_writing_tail = (self._replica_set, self._tombstones, (), CHANGE, TOMBSTONE)

    @classmethod
    def for_transformer(cls, transformer: Transformer) -> RawEventWriter | None:
        """A writer when the configuration's messages are ones it writes (and the compiled module is built)."""
        config = transformer.config
        if rawjson.compiled is None or config.event_format is not EventFormat.DEBEZIUM:
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
                topic, self._events.data_collection_of(namespace), key_schema, value_schema,
            )
            if collection.captured and collection.plain:
                self._plain_topics.setdefault(db, {})[coll] = topic
        return collection

    def write_run(self, changes: list, start: int, messages: list, built: BuiltChanges) -> int:
        """Appends the messages of changes[start:] while the compiled module writes each whole (an insert, update,
        replace or delete of a collection seen before, captured and written as it is;
        `change_messages`), counted in `built`. Returns the index of the first change it left (len(changes) when
        none): `build_into` or the Transformer builds that one. One ts_ms serves the run (a few milliseconds)."""
        writing = (*self._run_writing, self._now_ms(), *self._run_writing_tail)
        index, counts, first, last = rawjson.compiled.change_messages(changes, start, writing, messages)
        if first >= 0:
            built.captured_run(counts, changes[first], changes[last])
        return index

    def build_into(self, event: rawjson.RawChangeEvent, messages: list) -> str | None | object:
        """Appends the messages of ``event`` to ``messages``; returns its operation ("c", "u", "d"), None when it is
        filtered out, or NOT_WRITTEN (then ``messages`` is left as it was)."""
        head = event.head
        if head is None:
            return NOT_WRITTEN
        operation_type, db, coll, _token, cluster_time, description = head
        operation = _OPERATION_VALUES.get(operation_type)
        if operation is None or db is None or coll is None:
            return NOT_WRITTEN
        collection = self._collections.get((db, coll)) or self._collection(db, coll)
        if not collection.captured or operation in self._skipped_values:
            return None
        if not collection.plain:
            return NOT_WRITTEN
        description_json = None
        if description is not None and operation == "u":
            description_json = rawjson.compiled.update_description(description)
            if description_json is None:  # a value relaxed mode writes differently: decoded
                update = UpdateDescription.from_event(bson.decode(description, rawjson.DECODE_OPTIONS))
                description_json = encode_envelope(envelopes.update_description_block(update))
        ts_ms = self._now_ms()
        written = rawjson.compiled.change_value(event.raw, self._source_prefix, self._bare, ts_ms, description_json,
                                                self._replica_set)
        if written is None:
            return NOT_WRITTEN
        transactions = self._transactions
        if transactions is not None and ((txn := self._transaction_id(written[0])) is not None
                                         or transactions.open_transaction_id is not None):
            # as Transformer.transform does (an event outside a transaction while none is open changes nothing),
            # once the event is sure to be written here: the tracker counts it
            boundaries, block = transactions.on_event(txn, collection.data_collection,
                                                      self._event_ms(written[0], cluster_time, ts_ms))
            messages.extend(self._events.transaction_message(boundary) for boundary in boundaries)
            if block is not None:
                value, key = written
                written = value[:-len(_NO_TRANSACTION)] + b'"transaction":' + encode_envelope(block) + b"}", key
        message = _message(collection, written, event)
        messages.append(message)
        if operation == "d" and self._tombstones:
            messages.append(KafkaMessage(collection.topic, message.key, None, kind=TOMBSTONE))
        return operation

    def _event_ms(self, value: bytes, cluster_time, ts_ms: int) -> int:
        """The ``source.ts_ms`` of the event whose value the compiled module wrote (envelopes.event_ms): its
        wallTime, else its cluster time's seconds."""
        if self._replica_set is None:
            start = value.rindex(_WALL_TIME) + len(_WALL_TIME)
            wall = value[start:value.index(b"}", start)]
            if wall != b"null":
                return int(wall)
        return cluster_time[0] * 1000 if cluster_time is not None else ts_ms

    def _transaction_id(self, value: bytes) -> str | None:
        """The transaction id of the event whose value the compiled module wrote, from its source block."""
        start = value.rfind(_LSID) + len(_LSID)
        middle = value.index(_TXN_NUMBER, start)
        lsid, txn_number = value[start:middle], value[middle + len(_TXN_NUMBER):value.index(_WALL_TIME, middle)]
        lsid_json = self._lsids.get(lsid)
        if lsid_json is None and lsid != b"null":
            if len(self._lsids) >= 1024:
                self._lsids.clear()
            lsid_json = self._lsids[lsid] = orjson.loads(lsid)
        return transaction_id_of_json(lsid_json, None if txn_number == b"null" else int(txn_number))

    def read_messages(self, namespace: Namespace, document: RawBSONDocument,
                      marker: SnapshotMarker) -> list[KafkaMessage] | None:
        """The messages of a snapshot read of ``document`` (what the Transformer gives for
        `ChangeRecord.snapshot_read`), or None when the Transformer must build them."""
        collection = self._collection(namespace.db, namespace.collection)
        if not collection.captured or not collection.plain or self._replica_set is not None:
            return None
        written = rawjson.compiled.snapshot_value(document.raw, self._source_prefix, self._bare,
                                                  self._events.now_ms(), marker.value, namespace.db,
                                                  namespace.collection)
        if written is None:
            return None
        return [_message(collection, written, document)]


def _message(collection: _Collection, written: tuple[bytes, bytes | None],
             document: rawjson.RawChangeEvent | RawBSONDocument) -> KafkaMessage:
    """The message of a (value, key) the compiled module wrote for ``document`` (a change event or a snapshot read):
    the key written by `extjson` when the module left it to Python (an _id of another type than int, string and
    ObjectId), both wrapped with their schemas if on."""
    value, key = written
    if key is None:
        document_id = (document["documentKey"]["_id"] if type(document) is rawjson.RawChangeEvent
                       else rawjson.document_key(document)["_id"])
        key = encode_envelope({"id": extjson.key_json(document_id)})
    if collection.key_schema is not None:
        key = collection.key_schema + key + b"}"
    if collection.value_schema is not None:
        value = collection.value_schema + value + b"}"
    return KafkaMessage(collection.topic, key, value)
