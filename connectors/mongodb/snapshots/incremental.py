"""MongoDB's side of incremental snapshots (the DBLog algorithm is the core's: connectors.core.snapshot.incremental).

Watermarks and Debezium's signals live in `signal.data.collection`, which the change stream must see:

```js
db.signals.insertOne({type: "execute-snapshot",
                      data: {"data-collections": ["shop.orders"], "type": "incremental",
                             "additional-conditions": [{"data-collection": "shop.orders", "filter": {"status": "A"}}]}})
db.signals.insertOne({type: "stop-snapshot", data: {"data-collections": ["shop.orders"], "type": "incremental"}})
```

A window's low watermark is a document inserted there, its high watermark the same document deleted; the chunk
is read between the two in the same causally consistent session, so the read sees everything before the low
watermark. Chunks are `_id` ranges (chunks.py); rows are keyed by namespace and BSON-encoded `_id`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import bson
from bson import json_util
from bson.raw_bson import RawBSONDocument
from pymongo.errors import PyMongoError

from connectors import ConnectorError
from connectors.config.types import CaptureScope
from connectors.core.snapshot.chunks import Chunk, Plan
from connectors.core.snapshot.incremental import (
    ROW,
    SIGNAL,
    WATERMARK_CLOSE,
    WATERMARK_OPEN,
    WATERMARK_PREFIX,
    StreamEvent,
)
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.filters import NamespaceFilter, watch_target
from connectors.mongodb.rawjson import RawChangeEvent, decoded, document_key, raw_snapshot_options
from connectors.mongodb.records import ChangeRecord, Namespace, SnapshotMarker
from connectors.mongodb.snapshots.chunks import Chunk as MongoChunk
from connectors.mongodb.snapshots.chunks import document_bytes, plan_collection

log = logging.getLogger(__name__)

WINDOW_OPEN = "snapshot-window-open"  # the `type` of a low watermark document


def parse_filter(value: Any) -> dict | None:
    """A MongoDB query given as a document or as (extended) JSON text; None when empty."""
    if value is None or value == "" or value == {}:
        return None
    if isinstance(value, str):
        try:
            value = json_util.loads(value)
        except ValueError as error:
            raise ValueError(f"filter {value!r} is not a JSON document: {error}") from None
    if not isinstance(value, dict):
        raise ValueError(f"filter {value!r} is not a document")
    return value


def row_key(namespace: str, document_id: Any) -> bytes:
    return namespace.encode() + b"\x00" + bson.encode({"_id": document_id})


class MongoWatermarks:
    """connectors.core.snapshot.incremental.WatermarkSource for one replica set (`source`: its ReplicaSetSource)."""

    transient_errors = (PyMongoError,)
    chunk_type = MongoChunk

    def __init__(self, config: ConnectorConfig, source):
        self.config = config
        self.source = source
        self.namespaces = NamespaceFilter.from_config(config)
        signal = config.signal_data_collection
        self.signal = Namespace.parse(signal) if signal else None
        self.has_signals = self.signal is not None

    @property
    def client(self):
        return self.source.client

    def require_signals(self) -> None:
        if self.signal is None:
            raise ConnectorError(
                "incremental snapshots need signal.data.collection: the connector writes its watermarks there "
                "(set it to a <database>.<collection> the connector may write to)"
            )
        target = watch_target(self.config)
        if (target.scope is CaptureScope.DATABASE and target.database != self.signal.db) or (
            target.scope is CaptureScope.COLLECTION
            and (target.database, target.collection) != (self.signal.db, self.signal.collection)
        ):
            raise ConnectorError(
                f"incremental snapshots need the change stream to see {self.signal} (its watermarks come back "
                f"through it), but capture.scope watches only {target.database}"
                + (f".{target.collection}" if target.collection else "")
            )

    parse_filter = staticmethod(parse_filter)
    row_key = staticmethod(row_key)

    def classify(self, change: Any) -> StreamEvent | None:
        if type(change) is RawChangeEvent:
            change = change.event
        if type(change) is not dict:
            return None  # a marker of the reader (a skipped oversized event)
        ns = change.get("ns") or {}
        db, coll = ns.get("db"), ns.get("coll")
        if db is None or coll is None:
            return None
        key = (change.get("documentKey") or {}).get("_id")
        signal = self.signal
        if signal is not None and db == signal.db and coll == signal.collection:
            operation = change.get("operationType")
            if operation == "insert":
                if isinstance(key, str) and key.startswith(WATERMARK_PREFIX):
                    return StreamEvent(WATERMARK_OPEN, key)
                document = decoded(change.get("fullDocument")) or {}
                return StreamEvent(SIGNAL, key, signal={"id": document.get("_id", key), "type": document.get("type"),
                                                        "data": document.get("data")})
            if operation == "delete":
                return StreamEvent(WATERMARK_CLOSE, key)
            return None
        return StreamEvent(ROW, key, f"{db}.{coll}")

    def matching(self, patterns: list[re.Pattern]) -> list[str]:
        client = self.client
        found: list[str] = []
        if client is None:
            return found
        for db in sorted(client.list_database_names()):
            if not self.namespaces.includes_database(db):
                continue
            for name in sorted(client[db].list_collection_names(filter={"type": "collection"})):
                namespace = Namespace(db, name)
                if name.startswith("system.") or self.namespaces.is_signal(namespace):
                    continue
                if self.namespaces.includes(namespace) and any(c.fullmatch(namespace.full_name) for c in patterns):
                    found.append(namespace.full_name)
        return found

    def estimated_rows(self, collection: str) -> int | None:
        try:
            db, _, coll = collection.partition(".")
            return self.client[db][coll].estimated_document_count()
        except (PyMongoError, AttributeError, TypeError):
            return None

    def row_bytes(self, collection: str) -> int:
        return document_bytes(self.client, collection)

    def plan(self, collection: str, chunk_size: int, max_chunks: int) -> Plan:
        return plan_collection(self.client, collection, chunk_size, max_chunks)

    def read_window(self, window_id: str, chunk: Chunk, filter: Any, snapshot_id: str,  # noqa: A002
                    read: Callable[[dict], None]) -> None:
        assert self.signal is not None
        client = self.client
        signals = client[self.signal.db][self.signal.collection]
        namespace = Namespace.parse(chunk.namespace)
        collection = client[namespace.db][namespace.collection]
        raw = raw_snapshot_options(client.codec_options)  # documents kept raw, written without decoding (rawjson)
        if raw is not None:
            collection = collection.with_options(codec_options=raw)
        rows: dict[bytes, Any] = {}
        with client.start_session(causal_consistency=True) as session:
            signals.insert_one({"_id": window_id, "type": WINDOW_OPEN,
                                "data": {"snapshot": snapshot_id, "collection": chunk.namespace,
                                         "chunk": chunk.index}}, session=session)
            cursor = collection.find(chunk.query(filter), session=session, batch_size=self.config.snapshot_fetch_size)
            with cursor:
                for document in cursor:
                    # keyed by the _id decoded as the stream's keys are, whichever way the document was read
                    rows[row_key(chunk.namespace, document_key(document)["_id"])] = document
            read(rows)
            signals.delete_one({"_id": window_id}, session=session)

    def emit(self, chunk: Chunk, rows: list, builder) -> list:
        namespace = Namespace.parse(chunk.namespace)
        transform = builder.transform
        write = builder.raw_writer.read_messages if builder.raw_writer is not None else None
        messages: list = []
        for document in rows:
            if write is not None and type(document) is RawBSONDocument:
                written = write(namespace, document, SnapshotMarker.INCREMENTAL)
                if written is not None:
                    messages.extend(written)
                    continue
            record = ChangeRecord.snapshot_read(namespace, document, cluster_time=None,
                                                marker=SnapshotMarker.INCREMENTAL)
            messages.extend(transform(record))
        return messages

    def delete_stale_watermarks(self, prefix: str) -> None:
        assert self.signal is not None
        try:
            self.client[self.signal.db][self.signal.collection].delete_many(
                {"_id": {"$regex": "^" + re.escape(prefix)}})
        except PyMongoError as error:
            log.warning("could not delete stale watermarks from %s: %s", self.signal, error)

    def describe_bound(self, value: Any) -> str:
        return json_util.dumps(value)
