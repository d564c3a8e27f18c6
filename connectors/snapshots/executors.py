"""Who reads a snapshot chunk: threads of the pipeline's process, or separate workers (processes, Celery tasks).

The coordinator (`initial.InitialSnapshot`) hands out `ChunkTask`s through a `ChunkExecutor`:

- `ThreadPoolChunkExecutor` (default, `snapshot.max.threads` threads) reads chunks in parallel and returns their
  messages; the coordinator commits each chunk with its progress through the pipeline's one transactional
  producer, one chunk per transaction, in the coordinator's thread (reads are parallel, commits are serial).
- Executors with `commits_itself = True` run `run_chunk_task` somewhere else. It commits the chunk's events and a
  chunk marker in one transaction of its own transactional id `<connector>.<rs>.chunk-<n>`, after fencing any
  earlier attempt at the same chunk and checking that none committed (markers.py). The coordinator only records
  the chunk as done. `ProcessPoolChunkExecutor` does this with local processes; a Celery executor does the same
  with tasks (docs/snapshots.md shows how).
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from bson import Timestamp, json_util
from bson.json_util import CANONICAL_JSON_OPTIONS

from connectors.config import ConnectorConfig
from connectors.errors import ConnectorError
from connectors.kafka.sink import TransactionalSink
from connectors.kafka.topics import TopicAdmin, TopicSpec, offsets_topic_spec
from connectors.mongodb.client import open_client
from connectors.mongodb.topology import ReplicaSet
from connectors.records import ChangeRecord, Namespace, SnapshotMarker
from connectors.snapshots.chunks import Chunk
from connectors.snapshots.markers import COMPLETED, ChunkMarkers
from connectors.snapshots.metrics import SnapshotMetrics
from connectors.transformer import Transformer

log = logging.getLogger(__name__)

_JSON = CANONICAL_JSON_OPTIONS


class ChunkInterrupted(Exception):
    """The pipeline is stopping: the chunk was abandoned before it was complete (nothing was committed)."""


class ChunkTaskLost(ConnectorError):
    """A chunk task sent to another worker will not report back (its worker died): the coordinator sends it again;
    the chunk's own transactional id and marker make a late or duplicate attempt harmless."""

    retriable = True


class ChunkTaskFailed(ConnectorError):
    """A chunk task on another worker failed; `retriable` as the worker classified the error."""

    def __init__(self, message: str, retriable: bool):
        super().__init__(message)
        self.retriable = retriable


@dataclass(frozen=True)
class ChunkTask:
    """One chunk to read: everything a worker needs besides the connector's configuration."""

    connector: str
    replica_set: str
    snapshot_id: str
    chunk: Chunk
    cluster_time: Timestamp | None
    filter: dict | None = None
    mark_last: bool = False  # the snapshot's final chunk: its last document gets source.snapshot "last"
    marker: str = SnapshotMarker.TRUE.value

    @property
    def transactional_id(self) -> str:
        """The transactional id a worker that commits this chunk itself uses (fences earlier attempts)."""
        return f"{self.connector}.{self.replica_set}.chunk-{self.chunk.number}"

    def to_json(self) -> str:
        """Canonical extended JSON (BSON types of the bounds survive), fit for a Celery JSON payload."""
        chunk = self.chunk
        return json_util.dumps({
            "connector": self.connector, "replica_set": self.replica_set, "snapshot_id": self.snapshot_id,
            "chunk": {"ns": chunk.namespace, "index": chunk.index, "number": chunk.number, "lower": chunk.lower,
                      "upper": chunk.upper, "upper_inclusive": chunk.upper_inclusive, "count": chunk.count},
            "cluster_time": self.cluster_time, "filter": self.filter, "mark_last": self.mark_last,
            "marker": self.marker,
        }, json_options=_JSON)

    @classmethod
    def from_json(cls, text: str) -> ChunkTask:
        value = json_util.loads(text, json_options=_JSON)
        c = value["chunk"]
        chunk = Chunk(c["ns"], c["index"], c["number"], c["lower"], c["upper"], c["upper_inclusive"], c["count"])
        return cls(value["connector"], value["replica_set"], value["snapshot_id"], chunk, value.get("cluster_time"),
                   value.get("filter"), bool(value.get("mark_last")), value.get("marker") or "true")


@dataclass
class ChunkResult:
    task: ChunkTask
    rows: int
    messages: list | None = None  # None when the executor committed the chunk itself
    committed: bool = False  # events (and chunk marker) already committed by the executor
    already_committed: bool = False  # an earlier attempt had committed it; nothing was read or written again
    seconds: float = 0.0


@dataclass
class SnapshotContext:
    """What an executor gets from the pipeline."""

    config: ConnectorConfig
    replica_set: ReplicaSet
    bootstrap_servers: str
    client: Any  # the pipeline's pymongo client (threads read through it)
    stop: threading.Event
    metrics: SnapshotMetrics = field(default=None)  # type: ignore[assignment]


class ChunkExecutor(Protocol):
    """What the coordinator needs from an executor. `submit` must not block for long."""

    commits_itself: bool  # True: results come back committed (own transactional ids + chunk markers)
    capacity: int  # chunks the coordinator keeps in flight

    def submit(self, task: ChunkTask) -> Future[ChunkResult]: ...

    def shutdown(self, cancel_pending: bool = True) -> None: ...


ChunkExecutorFactory = Callable[[SnapshotContext], ChunkExecutor]


# -- reading one chunk ---------------------------------------------------------------------------------------


def read_chunk(client, transformer: Transformer, task: ChunkTask, *, fetch_size: int = 0,
               stop: threading.Event | None = None) -> tuple[list, int]:
    """The chunk's Kafka messages and document count. Raises ChunkInterrupted when `stop` is set meanwhile."""
    chunk = task.chunk
    namespace = Namespace.parse(chunk.namespace)
    marker = SnapshotMarker(task.marker)
    collection = client[namespace.db][namespace.collection]
    cursor = collection.find(chunk.query(task.filter), batch_size=fetch_size)
    messages: list = []
    rows = 0
    held = None
    transform = transformer.transform
    snapshot_read = ChangeRecord.snapshot_read
    cluster_time = task.cluster_time
    with cursor:
        for document in cursor:
            if held is not None:
                messages.extend(transform(snapshot_read(namespace, held, cluster_time=cluster_time, marker=marker)))
            held = document
            rows += 1
            if stop is not None and rows % 512 == 0 and stop.is_set():
                raise ChunkInterrupted(chunk.label)
    if held is not None:
        last = SnapshotMarker.LAST if task.mark_last else marker
        messages.extend(transform(snapshot_read(namespace, held, cluster_time=cluster_time, marker=last)))
    return messages, rows


def _log_read(task: ChunkTask, rows: int, seconds: float, where: str) -> None:
    log.info("snapshot %s: read chunk %d (%s): %d documents in %.2fs%s", task.snapshot_id, task.chunk.number,
             task.chunk.label, rows, seconds, where)


# -- in the pipeline's process ---------------------------------------------------------------------------------


class ThreadPoolChunkExecutor:
    """`threads` readers sharing the pipeline's client; the coordinator commits what they return."""

    commits_itself = False

    def __init__(self, context: SnapshotContext, threads: int | None = None):
        self.context = context
        self.capacity = max(1, threads or context.config.snapshot_max_threads)
        self._pool = ThreadPoolExecutor(self.capacity, thread_name_prefix=f"snapshot-{context.replica_set.name}")
        self._local = threading.local()

    def _transformer(self) -> Transformer:
        transformer = getattr(self._local, "transformer", None)
        if transformer is None:
            transformer = self._local.transformer = Transformer(self.context.config, self.context.replica_set.name)
        return transformer

    def _run(self, task: ChunkTask) -> ChunkResult:
        started = time.monotonic()
        if self.context.stop.is_set():
            raise ChunkInterrupted(task.chunk.label)
        messages, rows = read_chunk(self.context.client, self._transformer(), task,
                                    fetch_size=self.context.config.snapshot_fetch_size, stop=self.context.stop)
        seconds = time.monotonic() - started
        if self.context.metrics is not None:
            self.context.metrics.record_chunk_read()
        _log_read(task, rows, seconds, "")
        return ChunkResult(task, rows, messages, seconds=seconds)

    def submit(self, task: ChunkTask) -> Future[ChunkResult]:
        return self._pool.submit(self._run, task)

    def shutdown(self, cancel_pending: bool = True) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel_pending)


class SelfCommittingThreadExecutor(ThreadPoolChunkExecutor):
    """Threads of the pipeline's process that commit like remote workers (own transactional id + chunk marker).

    Used when resuming a snapshot whose earlier run dispatched chunks to other workers: a task of that run may
    still be alive, and only a chunk's own transactional id fences it.
    """

    commits_itself = True

    def __init__(self, context: SnapshotContext, threads: int | None = None):
        super().__init__(context, threads)
        self._topic_admin = TopicAdmin(context.bootstrap_servers)

    def _run(self, task: ChunkTask) -> ChunkResult:
        if self.context.stop.is_set():
            raise ChunkInterrupted(task.chunk.label)
        result = run_chunk_task(self.context.config, self.context.replica_set, self.context.bootstrap_servers, task,
                                client=self.context.client, transformer=self._transformer(), stop=self.context.stop,
                                topic_admin=self._topic_admin)
        if self.context.metrics is not None and not result.already_committed:
            self.context.metrics.record_chunk_read()
        return result


# -- as a separate task ------------------------------------------------------------------------------------------


def topic_spec_for(config: ConnectorConfig) -> Callable[[str], TopicSpec]:
    def spec(name: str) -> TopicSpec:
        settings = {"cleanup.policy": config.topic_creation_cleanup_policy.value}
        return TopicSpec(name, config.topic_creation_partitions, config.topic_creation_replication_factor, settings)

    return spec


# A fresh transactional id per chunk means a fresh producer per chunk: with librdkafka's default backoffs its
# init_transactions() often waits ~500 ms for the coordinator; short backoffs bring that to ~20-50 ms.
CHUNK_PRODUCER_CONFIG = {"retry.backoff.ms": 20, "reconnect.backoff.ms": 10}


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
    markers = ChunkMarkers(bootstrap_servers, config.offset_storage_topic)
    topic_admin = topic_admin or TopicAdmin(bootstrap_servers)
    topic_admin.ensure([markers.spec])
    own_client = client is None
    client = client or open_client(replica_set.client_options)
    transformer = transformer or Transformer(config, replica_set.name)
    new_topic = topic_spec_for(config)
    sink = TransactionalSink(
        bootstrap_servers, config.name, f"{replica_set.name}.chunk-{task.chunk.number}",
        offsets_topic=offsets_topic_spec(config.offset_storage_topic, config.offset_storage_partitions),
        errors_topic=config.errors_topic_name,
        new_topic=lambda name: markers.spec if name == markers.topic else new_topic(name),
        too_large=config.message_too_large_policy.value,
        producer_config=CHUNK_PRODUCER_CONFIG,
        topic_admin=topic_admin,
    )
    # After a commit with an unknown outcome the sink fences its producer, then the chunk's marker tells.
    sink.commit_check = lambda _batch: task.chunk.number in markers.load(config.name, replica_set.name,
                                                                         task.snapshot_id)
    try:
        with sink:  # open() fences any earlier attempt at this chunk
            found = markers.load(config.name, replica_set.name, task.snapshot_id)
            existing = found.get(task.chunk.number)
            if existing is None and COMPLETED in found:
                existing = {"rows": 0}  # a late duplicate: the snapshot completed long ago
            if existing is not None:
                log.info("snapshot %s: chunk %d (%s) was already committed", task.snapshot_id, task.chunk.number,
                         task.chunk.label)
                return ChunkResult(task, int(existing.get("rows") or 0), None, committed=True, already_committed=True,
                                   seconds=time.monotonic() - started)
            messages, rows = read_chunk(client, transformer, task, fetch_size=config.snapshot_fetch_size, stop=stop)
            _log_read(task, rows, time.monotonic() - started, f" (worker {multiprocessing.current_process().name})")
            messages.append(markers.message(config.name, replica_set.name, task.snapshot_id, task.chunk.number,
                                            rows))
            sink.write_batch(messages)
    finally:
        if own_client:
            client.close()
    return ChunkResult(task, rows, None, committed=True, seconds=time.monotonic() - started)


def run_chunk_task_json(config: ConnectorConfig, replica_set: ReplicaSet, bootstrap_servers: str, task_json: str,
                        **kwargs) -> dict:
    """`run_chunk_task` with JSON in and out: the body of a Celery chunk task."""
    result = run_chunk_task(config, replica_set, bootstrap_servers, ChunkTask.from_json(task_json), **kwargs)
    return {"rows": result.rows, "already_committed": result.already_committed, "seconds": result.seconds}


def result_from_json(task: ChunkTask, value: dict) -> ChunkResult:
    return ChunkResult(task, int(value["rows"]), None, committed=True,
                       already_committed=bool(value.get("already_committed")), seconds=float(value.get("seconds", 0)))


class PolledChunkExecutor:
    """Adapts a task queue to `ChunkExecutor`: `send(task_json)` enqueues a chunk task (which runs
    `run_chunk_task_json`) and returns a handle with `ready() -> bool` and `get() -> dict` (raising the task's
    error), as Celery's `AsyncResult` has; a thread polls the handles and completes the coordinator's futures.

    A queue whose tasks can vanish (a worker killed after taking the message, with early acknowledgement) must
    give handles a `lost() -> bool` too: a lost task's future fails with `ChunkTaskLost` and the coordinator sends
    the chunk again (workers/snapshots.py: heartbeats and a start deadline). Without it a lost task waits forever.

        PolledChunkExecutor(context, lambda task_json: snapshot_chunk.apply_async((connector_id, rs, task_json)),
                            capacity=8)
    """

    commits_itself = True

    def __init__(self, context: SnapshotContext, send: Callable[[str], Any], capacity: int = 4,
                 poll_interval: float = 0.1):
        self.context, self.send, self.capacity, self.poll_interval = context, send, max(1, capacity), poll_interval
        self._pending: list[tuple[Any, ChunkTask, Future]] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="snapshot-chunk-poller", daemon=True)
        self._thread.start()

    def submit(self, task: ChunkTask) -> Future[ChunkResult]:
        future: Future[ChunkResult] = Future()
        future.set_running_or_notify_cancel()
        handle = self.send(task.to_json())
        with self._lock:
            self._pending.append((handle, task, future))
        return future

    def _poll(self) -> None:
        while not self._closed.wait(self.poll_interval):
            with self._lock:
                pending = list(self._pending)
            for entry in pending:
                handle, task, future = entry
                try:
                    if not handle.ready():
                        lost = getattr(handle, "lost", None)
                        if lost is None or not lost():
                            continue
                        raise ChunkTaskLost(f"the task reading chunk {task.chunk.number} ({task.chunk.label}) "
                                            f"was lost with its worker")
                    value = handle.get()
                except Exception as error:  # noqa: BLE001 - handed to the coordinator, which retries or fails
                    future.set_exception(error)
                else:
                    if self.context.metrics is not None and not value.get("already_committed"):
                        self.context.metrics.record_chunk_read()
                    future.set_result(result_from_json(task, value))
                with self._lock:
                    self._pending.remove(entry)

    def shutdown(self, cancel_pending: bool = True) -> None:
        """Stops polling. Tasks already sent may still run and commit; their markers count at the next start."""
        self._closed.set()
        self._thread.join(5)
        with self._lock:
            pending, self._pending = self._pending, []
        for _, task, future in pending:
            if not future.done():
                future.set_exception(ChunkInterrupted(task.chunk.label))


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
