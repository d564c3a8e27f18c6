"""Who reads a snapshot chunk: threads of the pipeline's process, or separate workers (processes, Celery tasks).

The coordinator (`coordinator.InitialSnapshot`) hands out `ChunkTask`s through a `ChunkExecutor`:

- `ThreadPoolChunkExecutor` (default, `snapshot.max.threads` threads) reads chunks in parallel through the
  source's `SnapshotReader` and returns their messages; the coordinator commits each chunk with its progress
  through the pipeline's one transactional producer, in the coordinator's thread (reads are parallel, commits are
  serial): one transaction holds the chunks read while the previous one committed (one or more).
- Executors with `commits_itself = True` have the chunk read somewhere else, by a task that commits the chunk's
  events and a chunk marker in one transaction of its own transactional id `<connector>.<partition>.chunk-<n>`,
  after fencing any earlier attempt at the same chunk and checking that none committed (markers.py). The
  coordinator only records the chunk as done. `PolledChunkExecutor` adapts any task queue to that (a source
  provides the task body around the core's `self_committing.commit_chunk_once`: MongoDB's is
  `connectors.mongodb.snapshots.executors.run_chunk_task`, PostgreSQL's `connectors.postgres.chunk_tasks`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from connectors import ConnectorError
from connectors.core.snapshot.chunks import Chunk
from connectors.core.snapshot.metrics import SnapshotMetrics
from connectors.core.source import EventBuilder, SnapshotReader

log = logging.getLogger(__name__)

SNAPSHOT_TRUE = "true"  # source.snapshot of every snapshot event but the last one


class ChunkInterrupted(Exception):  # noqa: N818 - a signal, not an error: the pipeline is stopping
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
    """One chunk to read: everything a worker needs besides the connector's configuration.

    A source whose boundaries are not plain JSON subclasses it with its own `dumps`/`loads` (and `chunk_type`).
    """

    connector: str
    partition: str
    snapshot_id: str
    chunk: Chunk
    read_at: Any  # the source's time stamp of the snapshot's events (SnapshotProgress.read_at)
    filter: Any = None  # the source's filter override for this collection (snapshot.collection.filter.overrides)
    mark_last: bool = False  # the snapshot's final chunk: its last row is marked as the snapshot's last
    marker: str = SNAPSHOT_TRUE

    chunk_type: ClassVar[type[Chunk]] = Chunk
    dumps: ClassVar[Callable[[Any], str]] = staticmethod(json.dumps)
    loads: ClassVar[Callable[[str], Any]] = staticmethod(json.loads)
    READ_AT: ClassVar[str] = "read_at"  # the JSON field of `read_at`

    @property
    def transactional_id(self) -> str:
        """The transactional id a worker that commits this chunk itself uses (fences earlier attempts)."""
        return f"{self.connector}.{self.partition}.chunk-{self.chunk.number}"

    def to_json(self) -> str:
        """Fit for a task queue's JSON payload (the source's codec keeps its boundary types)."""
        chunk = self.chunk
        return self.dumps({
            "connector": self.connector, "replica_set": self.partition, "snapshot_id": self.snapshot_id,
            "chunk": {"ns": chunk.namespace, "index": chunk.index, "number": chunk.number, "lower": chunk.lower,
                      "upper": chunk.upper, "upper_inclusive": chunk.upper_inclusive, "count": chunk.count},
            self.READ_AT: self.read_at, "filter": self.filter, "mark_last": self.mark_last, "marker": self.marker,
        })

    @classmethod
    def from_json(cls, text: str) -> ChunkTask:
        value = cls.loads(text)
        c = value["chunk"]
        chunk = cls.chunk_type(c["ns"], c["index"], c["number"], c["lower"], c["upper"], c["upper_inclusive"],
                               c["count"])
        return cls(value["connector"], value["replica_set"], value["snapshot_id"], chunk, value.get(cls.READ_AT),
                   value.get("filter"), bool(value.get("mark_last")), value.get("marker") or SNAPSHOT_TRUE)


@dataclass
class ChunkResult:
    task: ChunkTask
    rows: int
    messages: list | None = None  # None when the executor committed the chunk itself
    committed: bool = False  # events (and chunk marker) already committed by the executor
    already_committed: bool = False  # an earlier attempt had committed it; nothing was read or written again
    seconds: float = 0.0
    read: dict | None = None  # where the chunk was read, as the source's stream needs it (source-defined)


@dataclass
class SnapshotContext:
    """What an executor gets from the pipeline."""

    config: Any  # the connector's configuration
    partition: Any  # the source's partition (its `.name` names the pipeline)
    bootstrap_servers: str
    reader: SnapshotReader | None  # reads chunks in this process (threads share it)
    stop: threading.Event
    metrics: SnapshotMetrics = field(default=None)  # type: ignore[assignment]
    new_builder: Callable[[], EventBuilder] | None = None  # an EventBuilder for one reading thread
    # how the source narrows an executor of other workers' tasks to the chunks it may hand them (MySQL: chunks
    # whose key its stream can compare; the others stay in the pipeline's read view); None: every chunk
    adapt_remote: Callable[[SnapshotContext, ChunkExecutor], ChunkExecutor] | None = None


class ChunkExecutor(Protocol):
    """What the coordinator needs from an executor. `submit` must not block for long."""

    commits_itself: bool  # True: results come back committed (own transactional ids + chunk markers)
    capacity: int  # chunks the coordinator keeps in flight

    def submit(self, task: ChunkTask) -> Future[ChunkResult]: ...

    def shutdown(self, cancel_pending: bool = True) -> None: ...


ChunkExecutorFactory = Callable[[SnapshotContext], ChunkExecutor]


def log_read(task: ChunkTask, rows: int, seconds: float, where: str) -> None:
    log.info("snapshot %s: read chunk %d (%s): %d rows in %.2fs%s", task.snapshot_id, task.chunk.number,
             task.chunk.label, rows, seconds, where)


class ThreadPoolChunkExecutor:
    """`threads` readers sharing the pipeline's source connection; the coordinator commits what they return."""

    commits_itself = False

    def __init__(self, context: SnapshotContext, threads: int | None = None):
        self.context = context
        self.capacity = max(1, threads or context.config.snapshot_max_threads)
        self._pool = ThreadPoolExecutor(self.capacity, thread_name_prefix=f"snapshot-{context.partition.name}")
        self._local = threading.local()

    def builder(self) -> EventBuilder:
        """This thread's EventBuilder (builders keep per-thread state)."""
        builder = getattr(self._local, "builder", None)
        if builder is None:
            assert self.context.new_builder is not None, "the pipeline gives thread executors a builder factory"
            builder = self._local.builder = self.context.new_builder()
        return builder

    def _run(self, task: ChunkTask) -> ChunkResult:
        started = time.monotonic()
        if self.context.stop.is_set():
            raise ChunkInterrupted(task.chunk.label)
        assert self.context.reader is not None
        messages, rows = self.context.reader.read_chunk(self.builder(), task.chunk, task.read_at, task.filter,
                                                        task.mark_last, self.context.stop)
        seconds = time.monotonic() - started
        if self.context.metrics is not None:
            self.context.metrics.record_chunk_read()
        log_read(task, rows, seconds, "")
        return ChunkResult(task, rows, messages, seconds=seconds, read=self.context.reader.where_read(task.chunk))

    def submit(self, task: ChunkTask) -> Future[ChunkResult]:
        return self._pool.submit(self._run, task)

    def shutdown(self, cancel_pending: bool = True) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel_pending)


def result_from_json(task: ChunkTask, value: dict) -> ChunkResult:
    return ChunkResult(task, int(value["rows"]), None, committed=True,
                       already_committed=bool(value.get("already_committed")), seconds=float(value.get("seconds", 0)),
                       read=value.get("read"))


class PolledChunkExecutor:
    """Adapts a task queue to `ChunkExecutor`: `send(task_json)` enqueues a chunk task (which runs the source's
    self-committing chunk task, e.g. MongoDB's `run_chunk_task_json`) and returns a handle with `ready() -> bool`
    and `get() -> dict` (raising the task's error), as Celery's `AsyncResult` has; a thread polls the handles and
    completes the coordinator's futures.

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
