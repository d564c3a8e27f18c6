"""MongoDB's chunk reading and self-committing chunk tasks (the core's executors: connectors.core.snapshot.executors).

- `read_chunk` reads one `_id` range with the connector's client and turns the documents into Kafka messages.
- `run_chunk_task` is the body of a chunk task run somewhere else (a Celery task, another process): it commits the
  chunk's events and a chunk marker in one transaction of its own transactional id `<connector>.<rs>.chunk-<n>`,
  after fencing any earlier attempt at the same chunk and checking that none committed (core/snapshot/markers.py).
  `ProcessPoolChunkExecutor` runs it in local processes; a Celery executor does the same with tasks
  (docs/snapshots.md shows how); `SelfCommittingThreadExecutor` in threads of the pipeline's process.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from bson import json_util
from bson.json_util import CANONICAL_JSON_OPTIONS

from connectors.core.snapshot.executors import ChunkInterrupted, ChunkResult, result_from_json
from connectors.core.snapshot.executors import ChunkTask as CoreChunkTask
from connectors.core.snapshot.executors import SnapshotContext as CoreContext
from connectors.core.snapshot.self_committing import SelfCommittingThreadExecutor as CoreSelfCommittingThreadExecutor
from connectors.core.snapshot.self_committing import commit_chunk_once, result_json
from connectors.kafka.topics import TopicAdmin
from connectors.mongodb.client import open_client
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.raw_events import RawEventWriter
from connectors.mongodb.rawjson import raw_snapshot_options
from connectors.mongodb.records import ChangeRecord, Namespace, SnapshotMarker
from connectors.mongodb.snapshots.chunks import Chunk
from connectors.mongodb.topology import ReplicaSet
from connectors.mongodb.transformer import Transformer

log = logging.getLogger(__name__)


def _dumps(value: Any) -> str:
    return json_util.dumps(value, json_options=CANONICAL_JSON_OPTIONS)


def _loads(text: str) -> Any:
    return json_util.loads(text, json_options=CANONICAL_JSON_OPTIONS)


@dataclass(frozen=True)
class ChunkTask(CoreChunkTask):
    """A chunk of a MongoDB snapshot; `read_at` is the snapshot's cluster time. Its JSON is canonical extended
    JSON, so the BSON types of the bounds survive a Celery JSON payload."""

    chunk_type = Chunk
    dumps = staticmethod(_dumps)
    loads = staticmethod(_loads)
    READ_AT = "cluster_time"

    @property
    def replica_set(self) -> str:
        return self.partition

    @property
    def cluster_time(self):
        return self.read_at


@dataclass
class SnapshotContext(CoreContext):
    """The core's context with MongoDB's names: the partition is a replica set, the reader has the client."""

    @property
    def replica_set(self) -> ReplicaSet:
        return self.partition

    @property
    def client(self):
        return getattr(self.reader, "client", None)


def read_chunk(client, transformer: Transformer, task: ChunkTask, *, fetch_size: int = 0,
               stop: threading.Event | None = None) -> tuple[list, int]:
    """The chunk's Kafka messages and document count. Raises ChunkInterrupted when `stop` is set meanwhile."""
    return read_range(client, transformer, task.chunk, task.read_at, task.filter, task.mark_last,
                      fetch_size=fetch_size, stop=stop, marker=task.marker)


def read_range(client, transformer: Transformer, chunk: Chunk, cluster_time, filter: dict | None,  # noqa: A002
               mark_last: bool, *, fetch_size: int = 0, stop: threading.Event | None = None,
               marker: str = SnapshotMarker.TRUE.value) -> tuple[list, int]:
    """One `_id` range's Kafka messages and document count (`mark_last`: its last document ends the snapshot)."""
    namespace = Namespace.parse(chunk.namespace)
    marker = SnapshotMarker(marker)
    collection = client[namespace.db][namespace.collection]
    raw = raw_snapshot_options(client.codec_options)  # documents kept raw, written without decoding (rawjson)
    if raw is not None:
        collection = collection.with_options(codec_options=raw)
    cursor = collection.find(chunk.query(filter), batch_size=fetch_size)
    messages: list = []
    rows = 0
    held = None
    transform = transformer.transform
    snapshot_read = ChangeRecord.snapshot_read
    # Raw documents are written whole in C where the configuration allows (raw_events), else transformed.
    writer = RawEventWriter.for_transformer(transformer) if raw is not None else None
    write = writer.read_messages if writer is not None else None

    def read(document, marker: SnapshotMarker) -> list:
        if write is not None:
            written = write(namespace, document, marker)
            if written is not None:
                return written
        return transform(snapshot_read(namespace, document, cluster_time=cluster_time, marker=marker))

    with cursor:
        for document in cursor:
            if held is not None:
                messages.extend(read(held, marker))
            held = document
            rows += 1
            if stop is not None and rows % 512 == 0 and stop.is_set():
                raise ChunkInterrupted(chunk.label)
    if held is not None:
        messages.extend(read(held, SnapshotMarker.LAST if mark_last else marker))
    return messages, rows


def log_read(task: ChunkTask, rows: int, seconds: float, where: str) -> None:
    log.info("snapshot %s: read chunk %d (%s): %d documents in %.2fs%s", task.snapshot_id, task.chunk.number,
             task.chunk.label, rows, seconds, where)


class SelfCommittingThreadExecutor(CoreSelfCommittingThreadExecutor):
    """The core's self-committing threads running MongoDB's chunk task on the pipeline's client."""

    def __init__(self, context: SnapshotContext, threads: int | None = None):
        topic_admin = TopicAdmin(context.bootstrap_servers)

        def run(task: ChunkTask, builder) -> ChunkResult:
            return run_chunk_task(context.config, context.replica_set, context.bootstrap_servers, task,
                                  client=context.client, transformer=builder.transformer, stop=context.stop,
                                  topic_admin=topic_admin)

        super().__init__(context, run, threads)


# -- as a separate task ------------------------------------------------------------------------------------------


def run_chunk_task(config: ConnectorConfig, replica_set: ReplicaSet, bootstrap_servers: str, task: ChunkTask, *,
                   client=None, transformer: Transformer | None = None, stop: threading.Event | None = None,
                   topic_admin: TopicAdmin | None = None) -> ChunkResult:
    """Reads one chunk and commits its events with its chunk marker under `task.transactional_id`.

    The body of a remote chunk task (a Celery task calls it with the connector's configuration). Safe to run
    again, concurrently or after a crash: opening the producer fences earlier attempts at this chunk, and a
    committed marker makes later attempts return without writing, so read_committed consumers see the chunk's
    events exactly once.
    """
    started = time.monotonic()
    own_client = client is None
    client = client or open_client(replica_set.client_options)
    transformer = transformer or Transformer(config, replica_set.name)

    def read() -> tuple[list, int]:
        messages, rows = read_chunk(client, transformer, task, fetch_size=config.snapshot_fetch_size, stop=stop)
        log_read(task, rows, time.monotonic() - started, f" (worker {multiprocessing.current_process().name})")
        return messages, rows

    try:
        return commit_chunk_once(config, replica_set.name, bootstrap_servers, task, read, topic_admin=topic_admin)
    finally:
        if own_client:
            client.close()


def run_chunk_task_json(config: ConnectorConfig, replica_set: ReplicaSet, bootstrap_servers: str, task_json: str,
                        **kwargs) -> dict:
    """`run_chunk_task` with JSON in and out: the body of a Celery chunk task."""
    return result_json(run_chunk_task(config, replica_set, bootstrap_servers, ChunkTask.from_json(task_json), **kwargs))


@dataclass
class _Worker:
    config: ConnectorConfig
    replica_set: ReplicaSet
    bootstrap_servers: str
    client: Any
    transformer: Transformer
    topic_admin: TopicAdmin


_WORKER: _Worker | None = None


def _init_worker(properties: dict, replica_set: tuple, bootstrap_servers: str, log_level: int) -> None:
    global _WORKER
    logging.basicConfig(level=log_level, format="%(asctime)s %(levelname)s %(processName)s %(name)s: %(message)s")
    config = ConnectorConfig.from_properties(properties)
    rs = ReplicaSet(replica_set[0], tuple(replica_set[1]), dict(replica_set[2]))
    _WORKER = _Worker(config, rs, bootstrap_servers, open_client(rs.client_options),
                      Transformer(config, rs.name), TopicAdmin(bootstrap_servers))


def _ready() -> bool:
    return _WORKER is not None


def _run_in_worker(task_json: str) -> dict:
    assert _WORKER is not None, "worker not initialised"
    return run_chunk_task_json(_WORKER.config, _WORKER.replica_set, _WORKER.bootstrap_servers, task_json,
                               client=_WORKER.client, transformer=_WORKER.transformer,
                               topic_admin=_WORKER.topic_admin)


class ProcessPoolChunkExecutor:
    """Chunks as separate tasks in `processes` worker processes, each committing through its own producer.

    The local stand-in for Celery workers (and the benchmark's "two worker processes"): same protocol, same
    `run_chunk_task`, same exactly-once argument.
    """

    commits_itself = True

    def __init__(self, context: SnapshotContext, processes: int = 2):
        self.context = context
        self.capacity = max(1, processes)
        rs = context.replica_set
        self._pool = ProcessPoolExecutor(
            self.capacity,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(context.config.to_properties(), (rs.name, list(rs.hosts), dict(rs.client_options)),
                      context.bootstrap_servers, logging.getLogger().getEffectiveLevel()),
        )

    def warm_up(self) -> None:
        """Starts every worker process now (as long-running Celery workers would be) instead of on first use."""
        for future in [self._pool.submit(_ready) for _ in range(self.capacity)]:
            future.result()

    def submit(self, task: ChunkTask) -> Future[ChunkResult]:
        outer: Future[ChunkResult] = Future()
        inner = self._pool.submit(_run_in_worker, task.to_json())

        def _done(future):
            if future.cancelled():
                outer.set_exception(ChunkInterrupted(task.chunk.label))
                return
            error = future.exception()
            if error is not None:
                outer.set_exception(error)
                return
            value = future.result()
            if self.context.metrics is not None and not value["already_committed"]:
                self.context.metrics.record_chunk_read()
            outer.set_result(result_from_json(task, value))

        outer.set_running_or_notify_cancel()
        inner.add_done_callback(_done)
        return outer

    def shutdown(self, cancel_pending: bool = True) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel_pending)
