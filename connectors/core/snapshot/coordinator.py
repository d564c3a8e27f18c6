"""The blocking snapshot phase (snapshot.mode initial, initial_only, when_needed, always, resets): chunked,
parallel, resumable.

1. **Position first.** The source's stream position is taken *before* anything is read (MongoDB: a change stream's
   resume token); after the snapshot, streaming resumes there. A change made while the snapshot runs is
   therefore never lost: it arrives through the stream after the snapshot's copy of the row, so the state a
   consumer builds from the topic ends equal to the database's.
2. **Plan.** Each collection the source selects is split into key ranges by the source (MongoDB: `_id` ranges,
   connectors/mongodb/snapshots/chunks.py). The plan (stream position, boundaries, one done-flag per chunk) is committed
   to the offset record before the first chunk commits, so a restart reuses it. (With the default reading threads
   and a source that can plan beside its reads, MongoDB's, the first chunks are read while later collections are
   planned; they commit after the plan.)
3. **Chunks.** Chunks are handed to a `ChunkExecutor` (executors.py): threads by default. Each chunk is committed
   in one Kafka transaction together with the progress that marks it done, so a crash resumes at the first
   unfinished chunk and never emits a committed chunk twice. The chunks read while the previous transaction
   committed go in one transaction (its fixed cost, the last produce round trips and the commit, paid once). The
   snapshot's final chunk is read last, on its own, so that its last event is marked as the snapshot's last
   (`source.snapshot: "last"`) and its transaction also marks the snapshot completed with the stream position to
   resume from.
"""


from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, wait
from typing import Any, Protocol

from connectors import ConnectorError
from connectors.core.collector import batch_collection
from connectors.core.snapshot.chunks import (
    PLAN_BYTES,
    Chunk,
    chunks_of,
    estimated_row_bytes,
    plan_bytes,
    rows_per_chunk,
    thinned,
)
from connectors.core.snapshot.executors import (
    ChunkExecutor,
    ChunkExecutorFactory,
    ChunkInterrupted,
    ChunkResult,
    ChunkTask,
    SnapshotContext,
    ThreadPoolChunkExecutor,
)
from connectors.core.snapshot.markers import ChunkMarkers
from connectors.core.snapshot.metrics import SnapshotMetrics
from connectors.core.snapshot.progress import CollectionProgress, SnapshotProgress
from connectors.core.source import EventBuilder, SnapshotReader
from connectors.core.stream import Backoff

log = logging.getLogger(__name__)


class SnapshotHost(Protocol):
    """What the coordinator needs from its pipeline."""

    config: Any
    stop: threading.Event
    snapshot_metrics: SnapshotMetrics
    bootstrap_servers: str
    backoff: Backoff
    builder: EventBuilder

    def commit_snapshot(self, messages: list, progress: SnapshotProgress, completed: bool) -> None:
        """Commits `messages` with the progress in the offset record (one transaction)."""

    def snapshot_context(self, reader: SnapshotReader) -> SnapshotContext: ...

    def self_committing_executor(self, context: SnapshotContext) -> ChunkExecutor:
        """Threads that commit like remote workers, for a snapshot an earlier run dispatched to other workers."""


class InitialSnapshot:
    def __init__(self, pipeline: SnapshotHost, reader: SnapshotReader, progress: SnapshotProgress,
                 executor_factory: ChunkExecutorFactory | None = None, partition: str = "",
                 task_type: type[ChunkTask] = ChunkTask):
        self.pipeline = pipeline
        self.config = pipeline.config
        self.reader = reader
        self.progress = progress
        self.partition = partition
        self.task_type = task_type
        self.metrics = pipeline.snapshot_metrics
        self.executor_factory: Callable[[SnapshotContext], ChunkExecutor] = executor_factory or ThreadPoolChunkExecutor
        self.markers = ChunkMarkers(pipeline.bootstrap_servers, self.config.offset_storage_topic)
        self._marked: set[int] = set()  # chunks committed with a chunk marker (deleted at the end)

    @property
    def stop(self) -> threading.Event:
        return self.pipeline.stop

    # -- the phase --------------------------------------------------------------------------------------------

    def run(self) -> bool:
        """Reads what is left; True when the snapshot completed, False when stopped part-way."""
        if self.config.snapshot_delay_ms and self.stop.wait(self.config.snapshot_delay_ms / 1000):
            return False
        with batch_collection():
            return self._read()

    def _read(self) -> bool:
        resumed = self.progress.planned
        early = _EarlyReads()
        if resumed:
            self._merge_markers()
            self.reader.resume(self.progress)
        else:
            self._capture_start()
            try:
                self._plan(early)
                if self.stop.is_set():
                    early.shutdown()
                    return False
                self._commit(self._opening_messages())  # the plan and the stream position, before any chunk
            except BaseException:
                early.shutdown()
                raise
        self._start_metrics()
        done, total = self.progress.chunks_done, self.progress.chunk_count
        log.info("snapshot %s of %s/%s %s: %d collections, %d chunks, %d already done", self.progress.id,
                 self.config.name, self.partition, "resumed" if resumed else "started",
                 len(self.progress.collections), total, done)
        try:
            final = self.progress.final_chunk()
            reading = {task.chunk.number for task in early.inflight.values()}
            pending = [c for c in self.progress.chunks()
                       if c != final and not self.progress.is_done(c) and c.number not in reading]
            if (pending or early.inflight) and not self._run_chunks(pending, early):
                self.metrics.finish(aborted=True)
                return False
            if not self._finish(final):
                self.metrics.finish(aborted=True)
                return False
        except ChunkInterrupted:
            self.metrics.finish(aborted=True)
            return False
        except BaseException as error:
            self.metrics.finish(aborted=True, error=str(error))
            raise
        finally:
            early.shutdown()
        self.metrics.finish()
        log.info("snapshot %s completed: %d rows in %.1fs", self.progress.id,
                 sum(c.rows for c in self.progress.collections), time.time() - self.progress.started_ms / 1000)
        return True

    def _finish(self, final: Chunk | None) -> bool:
        messages: list = []
        rows = 0
        read_final = final is not None and not self.progress.is_done(final)
        if read_final:
            task = self._task(final, mark_last=True)
            started = time.monotonic()
            messages, rows = self.reader.read_chunk(self.pipeline.builder, final, task.read_at, task.filter,
                                                    True, self.stop)
            self.metrics.record_chunk_read()
            log.info("snapshot %s: read chunk %d (%s): %d rows in %.2fs (final)", self.progress.id,
                     final.number, final.label, rows, time.monotonic() - started)
            self.progress.mark_done(final, rows, self.reader.where_read(final))
        if self.stop.is_set():
            return False
        if self.progress.remote:
            for number in sorted(self._marked):
                messages.append(self.markers.tombstone(self.config.name, self.partition, self.progress.id, number))
            total_rows = sum(c.rows for c in self.progress.collections)
            messages.append(self.markers.completed(self.config.name, self.partition, self.progress.id, total_rows))
        self.progress.completed = True
        self._commit(messages, completed=True)
        if read_final:
            self.metrics.record_chunk_committed(final.namespace, rows)
        return True

    # -- chunks -----------------------------------------------------------------------------------------------

    def _task(self, chunk: Chunk, mark_last: bool = False) -> ChunkTask:
        return self.task_type(self.config.name, self.partition, self.progress.id, chunk, self.progress.read_at,
                              self.config.snapshot_filter(chunk.namespace), mark_last)

    def _run_chunks(self, chunks: list[Chunk], early: _EarlyReads) -> bool:
        context = self.pipeline.snapshot_context(self.reader)
        executor, early.executor = early.executor or self.executor_factory(context), None
        inflight, early.inflight = early.inflight, {}
        count_reads = early.count_reads
        if executor.commits_itself and not self.progress.remote:
            self.progress.remote = True  # from now on every chunk must be fenced by its own transactional id
            self._commit([])
        elif self.progress.remote and not executor.commits_itself:
            executor.shutdown()
            executor = self.pipeline.self_committing_executor(context)
        queue = deque(chunks)
        failures = 0
        try:
            while queue or inflight:
                if self.stop.is_set():
                    return False
                self._top_up(executor, queue, inflight)
                finished, _ = wait(list(inflight), timeout=0.2, return_when=FIRST_COMPLETED)
                results = []
                for future in finished:
                    task = inflight.pop(future)
                    try:
                        result = future.result()
                    except ChunkInterrupted:
                        return False
                    except Exception as error:  # noqa: BLE001 - classified by the source
                        fatal = self.reader.chunk_failure(error, task.chunk, executor.commits_itself)
                        if fatal is error:
                            raise
                        if fatal is not None:
                            raise fatal from error
                        failures += 1
                        if failures > self.pipeline.backoff.max_attempts:
                            raise self._gave_up(task, failures, error) from error
                        delay = self.pipeline.backoff.delay(failures)
                        log.warning("snapshot chunk %s failed (%s: %s); retry in %.1fs", task.chunk.label,
                                    type(error).__name__, error, delay)
                        if self.stop.wait(delay):
                            return False
                        queue.appendleft(task.chunk)
                        continue
                    failures = 0
                    if count_reads:
                        self.metrics.record_chunk_read()
                    results.append(result)
                if results:
                    # Readers go on with the next chunks while this thread commits (mostly waiting on Kafka).
                    self._top_up(executor, queue, inflight)
                    self._record(results)
            return True
        finally:
            executor.shutdown(cancel_pending=True)

    @staticmethod
    def _gave_up(task: ChunkTask, failures: int, error: BaseException) -> Exception:
        return ConnectorError(f"snapshot chunk {task.chunk.label} failed {failures} times in a row; last error: "
                              f"{type(error).__name__}: {error}")

    def _top_up(self, executor, queue: deque, inflight: dict) -> None:
        while queue and len(inflight) < executor.capacity:
            task = self._task(queue.popleft())
            inflight[executor.submit(task)] = task

    def _record(self, results: list[ChunkResult]) -> None:
        """Commits the chunks read meanwhile (one or more: those done when the previous commit ended) in one
        transaction with the progress that marks them all done: a transaction's fixed cost (the last produce
        requests' round trips, the commit) is paid once for them."""
        messages: list = []
        results.sort(key=lambda result: result.task.chunk.number)  # their events in plan order
        for result in results:
            chunk = result.task.chunk
            self.progress.mark_done(chunk, result.rows, result.read)
            if result.messages is None:
                self._marked.add(chunk.number)
            elif len(results) == 1:
                messages = result.messages
            else:
                messages.extend(result.messages)
        self._commit(messages)
        for result in results:
            self.metrics.record_chunk_committed(result.task.chunk.namespace, result.rows,
                                                skipped=result.already_committed)

    def _commit(self, messages: list, completed: bool = False) -> None:
        self.pipeline.commit_snapshot(messages, self.progress, completed)

    def _opening_messages(self) -> list:
        """What the reader writes with the plan, before any row (optional `opening_messages` of a SnapshotReader)."""
        opening = getattr(self.reader, "opening_messages", None)
        return opening(self.pipeline.builder) if opening is not None else []

    # -- start ------------------------------------------------------------------------------------------------

    def _capture_start(self) -> None:
        start = self.reader.capture_start()
        started_ms = int(time.time() * 1000)
        self.progress.id = f"{started_ms:x}-{uuid.uuid4().hex[:6]}"
        self.progress.set_start(start)
        self.progress.started_ms = started_ms

    def _plan(self, early: _EarlyReads) -> None:
        """Plans every collection. With a reader that can plan beside its chunk reads (`plans_beside_reads`) and
        the default reading threads, the first chunks are read while the later collections are planned (the
        server's work, splitVector walking an index); nothing commits before the plan does, so what is committed,
        and in which order, is the same. A collection's last chunk is never read early: it may be the final one."""
        read_early = (getattr(self.reader, "plans_beside_reads", False) and not self.progress.remote
                      and self.executor_factory is ThreadPoolChunkExecutor)
        collections = []
        numbered = 0
        for namespace in self.reader.collections():
            max_bytes = self.config.snapshot_chunk_max_bytes
            row_bytes = estimated_row_bytes(self.reader, namespace) if max_bytes > 0 else 0
            rows = rows_per_chunk(self.config.snapshot_chunk_size, max_bytes, row_bytes)
            if rows < self.config.snapshot_chunk_size:
                log.info("snapshot %s: %s in chunks of %d rows (its rows' size and snapshot.chunk.max.bytes)",
                         self.progress.id, namespace, rows)
            plan = self.reader.plan(namespace, rows)
            count = len(plan.bounds) - 1 if plan.bounds else 0
            if count == 1 and plan.estimated_count > rows and row_bytes * plan.estimated_count > max_bytes:
                log.warning("snapshot %s: %s is read as one chunk (%s), about %d rows of %d bytes: its events are held "
                            "in memory whole until they commit. A key the chunker can use (message.key.columns, a "
                            "primary key) splits it.", self.progress.id, namespace, plan.method,
                            plan.estimated_count, row_bytes)
            collection = CollectionProgress(namespace, plan.bounds, [False] * count, 0, plan.estimated_count,
                                            plan.method)
            collections.append(collection)
            log.info("snapshot %s: %s planned as %d chunks (%s, ~%d rows)", self.progress.id, namespace, count,
                     plan.method, plan.estimated_count)
            if read_early and count > 1 and not self.stop.is_set():
                chunks = chunks_of(namespace, plan.bounds, numbered, self.progress.chunk_type)
                self._read_early(early, chunks[:-1])
            numbered += count
        if not read_early:  # chunks read early keep their numbers: their reader caps its own plans (MongoDB)
            self._fit(collections)
        self.progress.collections = collections
        self.progress.planned = True

    def _fit(self, collections: list[CollectionProgress]) -> None:
        """Thins the collections' boundaries until the plan takes at most PLAN_BYTES in the offset record (a table of
        hundreds of millions of rows makes tens of thousands of chunks): fewer, larger chunks."""
        total = sum(plan_bytes(c.bounds) for c in collections)
        if total <= PLAN_BYTES:
            return
        planned = {c.namespace: c.chunk_count for c in collections}
        factor = -(-total // PLAN_BYTES)
        while total > PLAN_BYTES and any(c.chunk_count > 1 for c in collections):
            for collection in collections:
                if collection.chunk_count > 1:
                    collection.bounds = thinned(collection.bounds, factor)
                    collection.done = [False] * collection.chunk_count
            total, factor = sum(plan_bytes(c.bounds) for c in collections), 2
        if total > PLAN_BYTES:
            raise ConnectorError(
                f"The snapshot's plan of {len(collections)} collections takes {total} bytes, more than the "
                f"{PLAN_BYTES} its offset record may hold: snapshot fewer collections at a time (the include lists).")
        for collection in collections:
            if collection.chunk_count < planned[collection.namespace]:
                log.warning("snapshot %s: %s read as %d chunks, not %d (the plan is kept in the offset record, at "
                            "most %d bytes): each chunk holds more rows than snapshot.chunk.size",
                            self.progress.id, collection.namespace, collection.chunk_count,
                            planned[collection.namespace], PLAN_BYTES)

    def _read_early(self, early: _EarlyReads, chunks: list[Chunk]) -> None:
        if early.executor is None:
            # Its reads are counted when they come back: the metrics start once the plan is complete.
            context = dataclasses.replace(self.pipeline.snapshot_context(self.reader), metrics=None)
            early.executor, early.count_reads = self.executor_factory(context), True
        self._top_up(early.executor, deque(chunks), early.inflight)

    def _merge_markers(self) -> None:
        """Chunks committed by other workers whose completion the offset record does not show yet."""
        if not self.progress.remote or self.progress.chunks_done == self.progress.chunk_count:
            return
        found = self.markers.load(self.config.name, self.partition, self.progress.id)
        chunks = self.progress.chunks()
        for number, marker in found.items():
            if 0 <= number < len(chunks):
                self.progress.mark_done(chunks[number], int(marker.get("rows") or 0), marker.get("read"))
                self._marked.add(number)

    def _start_metrics(self) -> None:
        self.metrics.start("initial", self.progress.id, self.progress.started_ms, {
            c.namespace: (c.chunk_count, c.chunks_done, c.rows, c.estimated) for c in self.progress.collections
        })


class _EarlyReads:
    """Chunks read while the plan was being made (see `InitialSnapshot._plan`), and the executor reading them."""

    def __init__(self) -> None:
        self.executor: ChunkExecutor | None = None
        self.inflight: dict = {}
        self.count_reads = False

    def shutdown(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(cancel_pending=True)
            self.executor, self.inflight = None, {}
