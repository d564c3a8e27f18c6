"""MongoDB's `SnapshotReader` (connectors.core.source): the snapshot's stream position, the collections it reads,
their `_id`-range plans, chunk reads and which chunk errors are worth reading the chunk again for."""

from __future__ import annotations

import threading

from pymongo.errors import OperationFailure

from connectors import ConnectorError
from connectors.core.snapshot.chunks import Plan
from connectors.core.snapshot.progress import SnapshotStart
from connectors.kafka.errors import SinkFencedError
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.filters import NamespaceFilter, change_stream_pipeline, watch_target
from connectors.mongodb.position import MongoPosition
from connectors.mongodb.records import Namespace
from connectors.mongodb.snapshots.chunks import Chunk, document_bytes, plan_collection
from connectors.mongodb.snapshots.executors import read_range

# Server errors after which reading a chunk again can succeed (elections, shutdowns, timeouts, lost cursors).
TRANSIENT_CODES = frozenset({6, 7, 43, 89, 91, 175, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436})


def chunk_error_retriable(error: BaseException, remote: bool) -> bool:
    """Whether reading a chunk again after `error` can succeed (`remote`: chunks commit themselves)."""
    if isinstance(error, SinkFencedError):
        return remote  # another attempt at the same chunk took over; the next one checks its marker
    if isinstance(error, ConnectorError):
        return error.retriable
    if isinstance(error, OperationFailure):  # a refused query (bad filter override, …) will not get better
        return error.code in TRANSIENT_CODES or error.has_error_label("RetryableReadError")
    return True  # network errors, a worker that died: reading a chunk again is harmless


class MongoSnapshotReader:
    # The client is thread-safe: chunks may be read while later collections are planned (coordinator._plan).
    plans_beside_reads = True

    def __init__(self, config: ConnectorConfig, client):
        self.config = config
        self.client = client
        self.namespaces = NamespaceFilter.from_config(config)

    def capture_start(self) -> SnapshotStart:
        target = watch_target(self.config)
        source = self.client
        if target.database:
            source = source[target.database]
            if target.collection:
                source = source[target.collection]
        with source.watch(change_stream_pipeline(self.config, target)) as stream:
            token = stream.resume_token
        if token is None:
            raise ConnectorError("MongoDB returned no resume token for the snapshot's start position")
        cluster_time = self.client.admin.command("ping").get("operationTime")
        return SnapshotStart(MongoPosition(token, cluster_time), cluster_time)

    def collections(self) -> list[str]:
        found = []
        for db in sorted(self.client.list_database_names()):
            if not self.namespaces.includes_database(db):
                continue
            for info in self.client[db].list_collections(filter={"type": "collection"}):
                name = info["name"]
                if name.startswith("system."):
                    continue
                if self.namespaces.includes_in_snapshot(Namespace(db, name)):
                    found.append(f"{db}.{name}")
        return sorted(found)

    def row_bytes(self, collection: str) -> int:
        return document_bytes(self.client, collection)

    def plan(self, collection: str, chunk_size: int) -> Plan:
        return plan_collection(self.client, collection, chunk_size)

    def read_chunk(self, builder, chunk: Chunk, read_at, filter, mark_last: bool,  # noqa: A002
                   stop: threading.Event | None) -> tuple[list, int]:
        return read_range(self.client, builder.transformer, chunk, read_at, filter, mark_last,
                          fetch_size=self.config.snapshot_fetch_size, stop=stop)

    def resume(self, progress) -> None:
        """A resumed snapshot reads its chunks left as any others: the change stream brings what changed since."""

    def where_read(self, chunk: Chunk) -> None:
        """The change stream keeps no per-chunk filter."""
        return None

    def chunk_failure(self, error: BaseException, chunk: Chunk, remote: bool) -> BaseException | None:
        if chunk_error_retriable(error, remote):
            return None
        if isinstance(error, OperationFailure):
            return ConnectorError(f"MongoDB refused the snapshot query of chunk {chunk.label}: {error}")
        return error
