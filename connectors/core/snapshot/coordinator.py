"""The blocking snapshot phase (snapshot.mode initial, initial_only, when_needed, always, resets): chunked,
parallel, resumable.

1. **Position first.** A change stream is opened and its resume token taken *before* anything is read; after the
   snapshot, streaming resumes there. A change made while the snapshot runs is therefore never lost: it arrives
   through the stream after the snapshot's copy of the document, so the state a consumer builds from the topic
   ends equal to the database's.
2. **Plan.** Each collection selected by the namespace lists and `snapshot.include.collection.list` is split into
   `_id` ranges (chunks.py). The plan (stream position, boundaries, one done-flag per chunk) is committed to the
   offset record before the first read, so a restart reuses it.
3. **Chunks.** Chunks are handed to a `ChunkExecutor` (executors.py): threads by default. Each chunk is committed
   in one Kafka transaction together with the progress that marks it done, so a crash resumes at the first
   unfinished chunk and never emits a committed chunk twice. The snapshot's final chunk is read last, on its
   own, so that its last event carries `source.snapshot: "last"` and its transaction also marks the snapshot
   completed with the stream position to resume from.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from concurrent.futures import FIRST_COMPLETED, wait
from typing import TYPE_CHECKING

from pymongo.errors import OperationFailure

from connectors.errors import ConnectorError
from connectors.filters import NamespaceFilter, change_stream_pipeline, watch_target
from connectors.kafka.errors import SinkFencedError
from connectors.records import Namespace
from connectors.snapshots.chunks import Chunk, plan_collection
from connectors.snapshots.executors import (
    ChunkExecutorFactory,
    ChunkInterrupted,
    ChunkResult,
    ChunkTask,
    SelfCommittingThreadExecutor,
    SnapshotContext,
    ThreadPoolChunkExecutor,
    read_chunk,
)
from connectors.snapshots.markers import ChunkMarkers
from connectors.snapshots.progress import CollectionProgress, SnapshotProgress

if TYPE_CHECKING:
    from connectors.pipeline import ReplicaSetPipeline

log = logging.getLogger(__name__)

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


class InitialSnapshot:
    def __init__(self, pipeline: ReplicaSetPipeline, client, progress: SnapshotProgress,
                 executor_factory: ChunkExecutorFactory | None = None):
        self.pipeline = pipeline
        self.config = pipeline.config
        self.client = client
        self.progress = progress
        self.metrics = pipeline.snapshot_metrics
        self.namespaces = NamespaceFilter.from_config(self.config)
        self.executor_factory = executor_factory or ThreadPoolChunkExecutor
        self.markers = ChunkMarkers(pipeline.bootstrap_servers, self.config.offset_storage_topic)
        self._marked: set[int] = set()  # chunks committed with a chunk marker (deleted at the end)

    @property
    def stop(self):
        return self.pipeline.stop

    # -- the phase --------------------------------------------------------------------------------------------

    def run(self) -> bool:
        """Reads what is left; True when the snapshot completed, False when stopped part-way."""
        if self.config.snapshot_delay_ms and self.stop.wait(self.config.snapshot_delay_ms / 1000):
            return False
        resumed = self.progress.planned
        if resumed:
            self._merge_markers()
        else:
            self._capture_start()
            self._plan()
            if self.stop.is_set():
                return False
            self._commit([])  # the plan and the stream position, before any chunk
        self._start_metrics()
        done, total = self.progress.chunks_done, self.progress.chunk_count
        log.info("snapshot %s of %s/%s %s: %d collections, %d chunks, %d already done", self.progress.id,
                 self.config.name, self.pipeline.replica_set.name, "resumed" if resumed else "started",
                 len(self.progress.collections), total, done)
        try:
            final = self.progress.final_chunk()
            pending = [c for c in self.progress.chunks() if c != final and not self.progress.is_done(c)]
            if pending and not self._run_chunks(pending):
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
        self.metrics.finish()
        log.info("snapshot %s completed: %d documents in %.1fs", self.progress.id,
                 sum(c.rows for c in self.progress.collections), time.time() - self.progress.started_ms / 1000)
        return True

    def _finish(self, final: Chunk | None) -> bool:
        messages: list = []
        rows = 0
        read_final = final is not None and not self.progress.is_done(final)
        if read_final:
            task = self._task(final, mark_last=True)
            started = time.monotonic()
            messages, rows = read_chunk(self.client, self.pipeline.transformer, task,
                                        fetch_size=self.config.snapshot_fetch_size, stop=self.stop)
            self.metrics.record_chunk_read()
            log.info("snapshot %s: read chunk %d (%s): %d documents in %.2fs (final)", self.progress.id,
                     final.number, final.label, rows, time.monotonic() - started)
            self.progress.mark_done(final, rows)
        if self.stop.is_set():
            return False
        if self.progress.remote:
            rs = self.pipeline.replica_set.name
            for number in sorted(self._marked):
                messages.append(self.markers.tombstone(self.config.name, rs, self.progress.id, number))
            total_rows = sum(c.rows for c in self.progress.collections)
            messages.append(self.markers.completed(self.config.name, rs, self.progress.id, total_rows))
        self.progress.completed = True
        self._commit(messages, token=self.progress.resume_token)
        if read_final:
            self.metrics.record_chunk_committed(final.namespace, rows)
        return True

    # -- chunks -----------------------------------------------------------------------------------------------

    def _task(self, chunk: Chunk, mark_last: bool = False) -> ChunkTask:
        return ChunkTask(self.config.name, self.pipeline.replica_set.name, self.progress.id, chunk,
                         self.progress.cluster_time, self.config.snapshot_filter(chunk.namespace), mark_last)

    def _run_chunks(self, chunks: list[Chunk]) -> bool:
        context = SnapshotContext(self.config, self.pipeline.replica_set, self.pipeline.bootstrap_servers,
                                  self.client, self.stop, self.metrics)
        executor = self.executor_factory(context)
        if executor.commits_itself and not self.progress.remote:
            self.progress.remote = True  # from now on every chunk must be fenced by its own transactional id
            self._commit([])
        elif self.progress.remote and not executor.commits_itself:
            executor.shutdown()
            executor = SelfCommittingThreadExecutor(context)
        queue = deque(chunks)
        inflight: dict = {}
        failures = 0
        try:
            while queue or inflight:
                if self.stop.is_set():
                    return False
                self._top_up(executor, queue, inflight)
                finished, _ = wait(list(inflight), timeout=0.2, return_when=FIRST_COMPLETED)
                for future in finished:
                    task = inflight.pop(future)
                    try:
                        result = future.result()
                    except ChunkInterrupted:
                        return False
                    except Exception as error:  # noqa: BLE001 - classified below
                        if not chunk_error_retriable(error, executor.commits_itself):
                            if isinstance(error, OperationFailure):
                                raise ConnectorError(f"MongoDB refused the snapshot query of chunk "
                                                     f"{task.chunk.label}: {error}") from error
                            raise
                        failures += 1
                        if failures > self.pipeline.backoff.max_attempts:
                            raise ConnectorError(
                                f"snapshot chunk {task.chunk.label} failed {failures} times in a row; last error: "
                                f"{type(error).__name__}: {error}"
                            ) from error
                        delay = self.pipeline.backoff.delay(failures)
                        log.warning("snapshot chunk %s failed (%s: %s); retry in %.1fs", task.chunk.label,
                                    type(error).__name__, error, delay)
                        if self.stop.wait(delay):
                            return False
                        queue.appendleft(task.chunk)
                        continue
                    failures = 0
                    # Readers go on with the next chunks while this thread commits (mostly waiting on Kafka).
                    self._top_up(executor, queue, inflight)
                    self._record(result)
            return True
        finally:
            executor.shutdown(cancel_pending=True)

    def _top_up(self, executor, queue: deque, inflight: dict) -> None:
        while queue and len(inflight) < executor.capacity:
            task = self._task(queue.popleft())
            inflight[executor.submit(task)] = task

    def _record(self, result: ChunkResult) -> None:
        chunk = result.task.chunk
        self.progress.mark_done(chunk, result.rows)
        if result.messages is not None:
            self._commit(result.messages)
        else:
            self._marked.add(chunk.number)
            self._commit([])
        self.metrics.record_chunk_committed(chunk.namespace, result.rows, skipped=result.already_committed)

    def _commit(self, messages: list, token=None) -> None:
        pipeline = self.pipeline
        offset = pipeline._offset_record(token, self.progress.cluster_time, snapshot=self.progress.to_json())
        pipeline._with_sink_retries(lambda: pipeline.sink.write_batch(messages, offset))
        pipeline.metrics.record_commit()

    # -- start ------------------------------------------------------------------------------------------------

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
        started_ms = int(time.time() * 1000)
        self.progress.id = f"{started_ms:x}-{uuid.uuid4().hex[:6]}"
        self.progress.resume_token = token
        self.progress.cluster_time = reply.get("operationTime")
        self.progress.started_ms = started_ms

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

    def _plan(self) -> None:
        collections = []
        for namespace in self._collections():
            plan = plan_collection(self.client, namespace, self.config.snapshot_chunk_size)
            count = len(plan.bounds) - 1 if plan.bounds else 0
            collections.append(CollectionProgress(namespace, plan.bounds, [False] * count, 0, plan.estimated_count,
                                                  plan.method))
            log.info("snapshot %s: %s planned as %d chunks (%s, ~%d documents)", self.progress.id, namespace, count,
                     plan.method, plan.estimated_count)
        self.progress.collections = collections
        self.progress.planned = True

    def _merge_markers(self) -> None:
        """Chunks committed by other workers whose completion the offset record does not show yet."""
        if not self.progress.remote or self.progress.chunks_done == self.progress.chunk_count:
            return
        found = self.markers.load(self.config.name, self.pipeline.replica_set.name, self.progress.id)
        chunks = self.progress.chunks()
        for number, marker in found.items():
            if 0 <= number < len(chunks):
                self.progress.mark_done(chunks[number], int(marker.get("rows") or 0))
                self._marked.add(number)

    def _start_metrics(self) -> None:
        self.metrics.start("initial", self.progress.id, self.progress.started_ms, {
            c.namespace: (c.chunk_count, c.chunks_done, c.rows, c.estimated) for c in self.progress.collections
        })
