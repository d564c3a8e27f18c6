"""The snapshot phase: every captured collection read in `_id` order, committed batch by batch with progress.

The stream position is taken *before* the first read; streaming resumes there after the snapshot, so a change
made while the snapshot runs is never lost (it arrives through the stream, after the snapshot's copy of the
document). Each batch's `op: "r"` events and the snapshot progress go into one Kafka transaction, so a crash
resumes after the last committed document instead of starting over.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bson import Timestamp

from connectors.errors import ConnectorError
from connectors.filters import NamespaceFilter, change_stream_pipeline, watch_target
from connectors.records import ChangeRecord, Namespace, SnapshotMarker

if TYPE_CHECKING:
    from connectors.pipeline import ReplicaSetPipeline


@dataclass
class SnapshotProgress:
    resume_token: dict | None = None
    cluster_time: Timestamp | None = None
    collections: list[str] = field(default_factory=list)
    index: int = 0  # the collection being read
    last_id: Any = None  # last committed _id in that collection (None: none yet)
    has_last_id: bool = False
    rows: dict[str, int] = field(default_factory=dict)
    started_ms: int = 0
    completed: bool = False

    def to_json(self) -> dict:
        return {
            "resume_token": self.resume_token,
            "cluster_time": {"t": self.cluster_time.time, "i": self.cluster_time.inc} if self.cluster_time else None,
            "collections": self.collections,
            "index": self.index,
            "last_id": self.last_id,
            "has_last_id": self.has_last_id,
            "rows": self.rows,
            "started_ms": self.started_ms,
            "completed": self.completed,
        }

    @classmethod
    def from_json(cls, value: dict) -> SnapshotProgress:
        ct = value.get("cluster_time")
        return cls(
            resume_token=value.get("resume_token"),
            cluster_time=Timestamp(ct["t"], ct["i"]) if ct else None,
            collections=list(value.get("collections") or []),
            index=int(value.get("index", 0)),
            last_id=value.get("last_id"),
            has_last_id=bool(value.get("has_last_id")),
            rows=dict(value.get("rows") or {}),
            started_ms=int(value.get("started_ms") or 0),
            completed=bool(value.get("completed")),
        )


class InitialSnapshot:
    def __init__(self, pipeline: ReplicaSetPipeline, client, progress: SnapshotProgress):
        self.pipeline = pipeline
        self.config = pipeline.config
        self.client = client
        self.progress = progress
        self.namespaces = NamespaceFilter.from_config(self.config)

    def run(self) -> bool:
        """Reads what is left; True when the snapshot completed, False when stopped part-way."""
        if self.config.snapshot_delay_ms and self.pipeline.stop.wait(self.config.snapshot_delay_ms / 1000):
            return False
        if self.progress.resume_token is None:
            self._capture_start()
        held: ChangeRecord | None = None
        batch: list[ChangeRecord] = []
        for index in range(self.progress.index, len(self.progress.collections)):
            namespace = Namespace.parse(self.progress.collections[index])
            resume_after = self.progress.last_id if index == self.progress.index and self.progress.has_last_id else None
            for document in self._read(
                namespace, resume_after, index == self.progress.index and self.progress.has_last_id
            ):
                if self.pipeline.stop.is_set():
                    return False
                record = ChangeRecord.snapshot_read(namespace, document, cluster_time=self.progress.cluster_time)
                if held is not None:
                    batch.append(held)
                held = record
                if len(batch) >= self.config.max_batch_size:
                    self._commit(batch)
                    batch = []
        if held is not None:
            batch.append(
                ChangeRecord.snapshot_read(
                    held.namespace,
                    held.full_document,
                    cluster_time=self.progress.cluster_time,
                    marker=SnapshotMarker.LAST,
                )
            )
        self.progress.completed = True
        self._commit(batch, final=True)
        return True

    def _capture_start(self) -> None:
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
        reply = self.client.admin.command("ping")
        self.progress.resume_token = token
        self.progress.cluster_time = reply.get("operationTime")
        self.progress.collections = self._collections()
        self.progress.started_ms = int(time.time() * 1000)

    def _collections(self) -> list[str]:
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

    def _read(self, namespace: Namespace, after: Any, use_after: bool):
        query: dict = {}
        override = self.config.snapshot_filter(namespace.full_name)
        if use_after:
            query = {"_id": {"$gt": after}}
        if override:
            query = {"$and": [override, query]} if query else override
        cursor = self.client[namespace.db][namespace.collection].find(
            query, sort=[("_id", 1)], batch_size=self.config.snapshot_fetch_size
        )
        with cursor:
            yield from cursor

    def _commit(self, records: list[ChangeRecord], final: bool = False) -> None:
        messages = []
        for record in records:
            messages.extend(self.pipeline.transformer.transform(record))
            name = record.namespace.full_name
            self.progress.rows[name] = self.progress.rows.get(name, 0) + 1
            self.progress.index = self.progress.collections.index(name)
            self.progress.last_id = record.document_id
            self.progress.has_last_id = True
            self.pipeline.metrics.record_event("r", None, {"snapshot": name}, {"op": "r", "ns": name})
        token = self.progress.resume_token if final else None
        offset = self.pipeline._offset_record(token, self.progress.cluster_time, snapshot=self.progress.to_json())
        self.pipeline._with_sink_retries(lambda: self.pipeline.sink.write_batch(messages, offset))
        self.pipeline.metrics.record_commit()
