"""One partition's pipeline: snapshot phase, then streaming, each batch committed with its offset.

    source ──▶ ChangeReader (thread) ──queue──▶ this loop: EventBuilder ──▶ TransactionalSink (one transaction)

The loop drains the queue into a batch of at most `max.batch.size` changes or `poll.interval.ms`, turns it into
Kafka messages through the source's `EventBuilder`, and writes them together with the batch's last `Position` in
one Kafka transaction. A crash anywhere therefore resumes after the last committed batch: nothing lost, nothing
duplicated for read_committed consumers. The position the reader reports while nothing captured happens is committed
without an event (an offset-only transaction): at once when no position was committed yet (a first run streaming from
"now" then resumes there, not at a later "now"), every `IDLE_COMMIT_SECONDS` (or at each heartbeat) after that, and
once more at a clean stop. The source (connectors.core.source) supplies everything that knows the database.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from connectors import ConnectorError, HistoryLost, SourceUnreachable
from connectors.core.allocator import keep_freed_memory
from connectors.core.collector import batch_collection
from connectors.core.config import (
    SNAPSHOT_ALWAYS,
    SNAPSHOT_INITIAL_ONLY,
    SNAPSHOT_ON_FIRST_RUN,
    SNAPSHOT_WHEN_NEEDED,
    EngineConfig,
)
from connectors.core.metrics import StreamingMetrics
from connectors.core.snapshot.coordinator import InitialSnapshot
from connectors.core.snapshot.executors import ChunkExecutor, ChunkExecutorFactory, SnapshotContext
from connectors.core.snapshot.metrics import SnapshotMetrics
from connectors.core.snapshot.progress import SnapshotProgress
from connectors.core.snapshot.self_committing import topic_spec_for
from connectors.core.source import (
    BuiltChanges,
    ChangeSummary,
    EventBuilder,
    PartitionSource,
    Position,
    SnapshotReader,
    Start,
    StoredOffset,
)
from connectors.core.stream import Backoff, ChangeQueue, Idle, ReaderFailed, each_change, wait_to_retry
from connectors.kafka import PIPELINE_LANES, OffsetStore, OffsetStoreError, OutMessage, TransactionalSink
from connectors.kafka.errors import CommitOutcomeUnknownError, SinkFatalError, SinkRetriableError
from connectors.kafka.offset_record import STARTUP_LATEST, STARTUP_SNAPSHOT
from connectors.kafka.topics import TopicSpec, offsets_topic_spec

log = logging.getLogger(__name__)

# How often a position that moved with no captured event is committed when no heartbeat does it (Kafka Connect's
# default offset.flush.interval.ms): the source's history before it can then be released (a purged binlog)
IDLE_COMMIT_SECONDS = 60.0
# While a Kafka retry waits out its backoff, Kafka is asked whether it answers again, with this timeout
KAFKA_PROBE_TIMEOUT_SECONDS = 1.0


@dataclass
class StartPlan:
    """Where streaming starts, and whether a snapshot runs first."""

    start: Start
    snapshot: SnapshotProgress | None = None


class SeenEvents:
    """A batch's captured and filtered events, reported to the metrics once per batch (not once per event)."""

    __slots__ = ("by_operation", "filtered", "first", "last")

    def __init__(self) -> None:
        self.by_operation: dict[str, int] = {}
        self.filtered = 0
        self.first: Any = None
        self.last: Any = None

    def add_built(self, built: BuiltChanges) -> None:
        by_operation = self.by_operation
        for operation, count in built.by_operation.items():
            by_operation[operation] = by_operation.get(operation, 0) + count
        self.filtered += built.filtered
        if built.last is not None:
            if self.first is None:
                self.first = built.first
            self.last = built.last

    def report(self, metrics: StreamingMetrics, builder: EventBuilder) -> ChangeSummary | None:
        """Reports the counts; returns the description of the batch's oldest event (None: no event), whose source
        time the lag is measured from once the batch is committed."""
        if self.filtered:
            metrics.record_filtered(self.filtered)
            self.filtered = 0
        if self.last is None:
            return None
        described = builder.describe(self.last)
        metrics.record_events(self.by_operation, described.position, described.summary)
        oldest = described if self.first is self.last else builder.describe(self.first)
        self.by_operation, self.first, self.last = {}, None, None
        return oldest


class StopRequested(Exception):  # noqa: N818 - a signal, not an error: a stop came while waiting (its text: for what)
    pass


class PendingBatch:
    """Changes taken from the queue and built, not handed to the sink yet (at most max.batch.size of them)."""

    __slots__ = ("size", "messages", "payload", "position", "idle", "seen", "failure")

    def __init__(self) -> None:
        self.size = 0  # items taken, markers included
        self.messages: list[OutMessage] = []
        self.payload: int | None = 0  # the messages' key and value bytes as the builder counted them (None: unknown)
        self.position: Position | None = None  # the position after its items (None: they moved nothing)
        self.idle = False  # the reader reported that nothing more is to be read for now
        self.seen = SeenEvents()
        self.failure: BaseException | None = None  # the reader failed after these items

    def complete(self, max_batch_size: int) -> bool:
        """Handed over at once, even while a commit is in flight."""
        return self.failure is not None or self.idle or self.size >= max_batch_size


_MARKERS = (ReaderFailed, Idle)  # the queue's items that end a batch
TAKEN_TOGETHER = 512  # changes the loop waits for while a commit is in flight (see _drain)


def _ends_batch(item) -> bool:
    return type(item) in _MARKERS


class Pipeline:
    def __init__(
        self,
        config: EngineConfig,
        source: PartitionSource,
        bootstrap_servers: str,
        *,
        stop: threading.Event | None = None,
        metrics: StreamingMetrics | None = None,
        on_phase: Callable[[str], None] | None = None,
        snapshot_metrics: SnapshotMetrics | None = None,
        chunk_executor: ChunkExecutorFactory | None = None,
    ):
        keep_freed_memory()  # a batch's memory serves the next one (core.allocator)
        self.config = config
        self.source = source
        self.bootstrap_servers = bootstrap_servers
        self.stop = stop or threading.Event()
        self.metrics = metrics or StreamingMetrics(config.name, source.name)
        self.metrics.queue_total_capacity = config.max_queue_size
        self.snapshot_metrics = snapshot_metrics or SnapshotMetrics(config.name, source.name)
        self.chunk_executor = chunk_executor  # who reads initial-snapshot chunks (default: snapshot.max.threads)
        self._on_phase = on_phase or (lambda phase: None)
        self.builder: EventBuilder = source.event_builder()
        self.backoff = Backoff(
            config.connect_backoff_initial_delay_ms, config.connect_backoff_max_delay_ms, config.connect_max_attempts
        )
        self.sink = TransactionalSink(
            bootstrap_servers,
            config.name,
            source.name,
            offsets_topic=offsets_topic_spec(config.offset_storage_topic, config.offset_storage_partitions),
            errors_topic=config.errors_topic_name,
            new_topic=self.topic_spec,
            too_large=config.message_too_large_policy.value,
            lanes=PIPELINE_LANES,
            producer_config={"message.max.bytes": config.producer_max_request_size},
        )
        self.offsets = OffsetStore(bootstrap_servers, config.offset_storage_topic)
        self.sink.commit_check = self._batch_committed
        self.committed: Position | None = None  # the position of the last committed offset record
        self.latest: Position | None = None  # the position after the last item built (committed or not)
        self._last_commit = time.monotonic()
        self._committer: ThreadPoolExecutor | None = None
        self._in_flight: Future | None = None
        self._changes: ChangeQueue | None = None
        self.incremental = source.incremental(self, self.snapshot_metrics)
        # Optional source hooks (core.source.PartitionSource): told each committed position (a PostgreSQL slot is
        # acknowledged only then), whether idle positions are committed without a heartbeat, and whether a
        # heartbeat writes to the source.
        self._on_committed = getattr(source, "on_committed", None)
        self._commits_idle = bool(getattr(source, "commits_idle_positions", False))
        self._heartbeats_move_source = bool(getattr(source, "heartbeats_move_source", False))
        # Diagnostic seam (bench/streaming.py's latency breakdown): trace(stage, batch) once per streaming batch at
        # "taken" (the queued items), "built", "handed" (to the sink) and "committed" (the messages). None: no cost.
        self.trace: Callable[[str, list], None] | None = None

    @property
    def name(self) -> str:
        return self.source.name

    # -- incremental snapshots (thread-safe; the REST API calls these through the worker) ------------------

    def request_incremental_snapshot(self, collections: list[str] | str, filter=None,  # noqa: A002
                                     filters: dict | None = None) -> str:
        """Snapshots the matching captured collections while streaming continues (docs/snapshots.md).

        `collections`: names or regexes of data collections; `filter`: the source's query for all of them,
        `filters`: {collection: query}. Returns a request id.
        """
        return self._incremental().request(collections, filter, filters)

    def stop_incremental_snapshot(self, collections: list[str] | None = None) -> None:
        self._incremental().stop(collections)

    def pause_incremental_snapshot(self) -> None:
        self._incremental().pause()

    def resume_incremental_snapshot(self) -> None:
        self._incremental().resume()

    def _incremental(self):
        if self.incremental is None:
            raise ConnectorError(f"{self.config.name}: this source has no incremental snapshots")
        return self.incremental

    # -- wiring -------------------------------------------------------------------------------------------

    def topic_spec(self, name: str) -> TopicSpec:
        return topic_spec_for(self.config)(name)

    def _set_phase(self, phase: str) -> None:
        self.metrics.set_phase(phase)
        self._on_phase(phase)

    # -- life cycle -----------------------------------------------------------------------------------------

    def run(self) -> str:
        """Runs until `stop` is set (returns "stopped") or an `initial_only` snapshot is done ("snapshot-done").

        A commit whose outcome could not be learned (CommitOutcomeUnknownError) starts the run again from the
        committed offset: starting fences the producer and reads the offsets topic, which tells what committed.
        So does a source that cannot be reached where no reader retries it (a query while planning a snapshot, a
        network reset under it), or once its reader gave up: up to `connect.max.attempts` times in all, backing off
        as the readers do; then the pipeline fails.
        """
        unreachable = 0
        while True:
            try:
                return self._run_once()
            except CommitOutcomeUnknownError as error:
                if self.stop.is_set():
                    raise
                log.warning("%s/%s: %s; starting again from the committed offset", self.config.name, self.name,
                            error)
                if self.stop.wait(self.backoff.delay(1)):
                    return "stopped"
            except SourceUnreachable as error:
                unreachable += 1
                if self.stop.is_set() or unreachable > self.backoff.max_attempts:
                    self._set_phase("failed")
                    raise
                delay = self.backoff.delay(unreachable)
                log.warning("%s/%s: %s; starting again from the committed offset in %.1fs (attempt %d of %d)",
                            self.config.name, self.name, error, delay, unreachable, self.backoff.max_attempts)
                if self.stop.wait(delay):
                    return "stopped"

    def _run_once(self) -> str:
        try:
            self._set_phase("starting")
            self.with_sink_retries(self.sink.open)
            stored = self.with_sink_retries(self._stored_offset)
            self.source.connect(self.metrics, self.stop)
            plan = self._start_plan(stored)
            log.info("pipeline %s/%s starting: %s", self.config.name, self.name, plan.start.reason)
            start = plan.start.position
            if plan.snapshot is not None:
                self._set_phase("snapshot")
                if self.incremental is not None:
                    self.incremental.restore(None)  # a full snapshot supersedes an unfinished incremental one
                reader = self.source.snapshot_reader()
                try:
                    done = InitialSnapshot(self, reader, plan.snapshot, self.chunk_executor, self.name,
                                           self.source.chunk_task_type).run()
                finally:
                    close_reader = getattr(reader, "close", None)
                    if close_reader is not None:  # done, stopped or failed: no view of its outlives it
                        close_reader()
                if not done:
                    return "stopped"
                start = plan.snapshot.stream_position()
            if self.config.snapshot_mode == SNAPSHOT_INITIAL_ONLY:
                # initial_only never streams, also when restarted after its snapshot completed
                self._set_phase("snapshot-done")
                return "snapshot-done"
            try:
                self._stream(start)
            except HistoryLost:
                if self.config.snapshot_mode != SNAPSHOT_WHEN_NEEDED:
                    raise
                log.warning("%s/%s lost its stream position; taking a new snapshot (snapshot.mode=when_needed)",
                            self.config.name, self.name)
                self.sink.write_batch([], self.offset_record(None, startup={"mode": STARTUP_SNAPSHOT}))
                return self.run()
            return "stopped"
        except StopRequested as stopped:
            log.info("%s/%s stopped while waiting %s", self.config.name, self.name, stopped or "for Kafka")
            return "stopped"
        except ConnectorError as error:
            if isinstance(error, CommitOutcomeUnknownError) and not self.stop.is_set():
                raise  # run() starts again from the committed offset
            self.metrics.record_error(str(error))
            if not isinstance(error, SourceUnreachable):  # run() starts again, or says it failed
                self._set_phase("failed")
            raise
        finally:
            self.sink.close()
            self.source.close()

    def with_sink_retries(self, action):
        """`action()` (a Kafka call), retried with backoff while Kafka is unavailable; StopRequested on stop."""
        attempt = 0
        went_away = [False]  # Kafka did not answer during a wait: its answering again ends the wait
        reopen = False  # the producer failed for good: the sink is opened again (and retried) before the action
        while True:
            try:
                # outside the except clause: confluent-kafka keeps the exception being handled when it raises
                # (sink.py)
                if reopen:
                    self.sink.open()
                    reopen = False
                return action()
            except (SinkRetriableError, SinkFatalError, OffsetStoreError) as error:
                attempt += 1
                if attempt > self.backoff.max_attempts or self.stop.is_set():
                    raise
                delay = self.backoff.delay(attempt)
                if attempt == 1:
                    self.metrics.record_error(f"Kafka not available at {self.bootstrap_servers}: {error}")
                log.warning("Kafka not available at %s (%s); retry %d in %.1fs", self.bootstrap_servers, error,
                            attempt, delay)
                if wait_to_retry(self.stop, delay, self._kafka_answers, went_away):
                    raise StopRequested from error
                reopen = reopen or isinstance(error, SinkFatalError)

    def _kafka_answers(self) -> bool:
        return self.sink.reachable(KAFKA_PROBE_TIMEOUT_SECONDS)

    def _stored_offset(self) -> StoredOffset | None:
        value, _ = self.offsets.read_value(self.source.offset_key())
        if value is None:
            return None
        try:
            return self.source.decode_offset(value)
        except ValueError as error:
            raise OffsetStoreError(f"The offset of {self.config.name}/{self.name} is unreadable: {error}") from None

    def _batch_committed(self, batch_id: str) -> bool:
        """Asked by the sink after a commit with an unknown outcome, once it has fenced the producer."""
        return self.offsets.read_value(self.source.offset_key())[1] == batch_id

    # -- where to start -------------------------------------------------------------------------------------

    def _new_progress(self, reason: str) -> StartPlan:
        return StartPlan(Start(None, reason), self.source.progress_type())

    def _start_plan(self, stored: StoredOffset | None) -> StartPlan:
        mode = self.config.snapshot_mode
        if stored is not None and stored.startup:
            return self._obey_startup(stored.startup)
        if stored is not None and stored.snapshot and not stored.snapshot.get("completed"):
            progress = self.source.progress_type.from_json(stored.snapshot)
            return StartPlan(Start(None, "resuming the snapshot"), progress)
        if stored is not None and stored.position is not None:
            self.committed = stored.position
            self.builder = self.source.event_builder(stored.transaction)
            if mode == SNAPSHOT_ALWAYS:
                return self._new_progress("snapshot.mode=always")
            if self.incremental is not None:
                self.incremental.restore(stored.incremental_snapshot)
            return StartPlan(self.source.resume_start(stored.position))
        if mode in SNAPSHOT_ON_FIRST_RUN:
            return self._new_progress(f"first run, snapshot.mode={mode}")
        configured = self.source.start_from_config()
        if configured is not None:
            return StartPlan(configured)
        return StartPlan(Start(None, "first run, streaming from now"))

    def _obey_startup(self, startup: dict) -> StartPlan:
        mode = startup["mode"]
        if mode == STARTUP_SNAPSHOT:
            return self._new_progress("offset reset: re-snapshot")
        if mode == STARTUP_LATEST:
            return StartPlan(Start(None, "offset reset to latest"))
        start = self.source.start_from_startup(startup)
        if start is None:
            raise ConnectorError(f"unknown startup instruction {mode!r} in the stored offset")
        return StartPlan(start)

    # -- the initial snapshot (coordinator.SnapshotHost) ---------------------------------------------------

    def commit_snapshot(self, messages: list, progress: SnapshotProgress, completed: bool) -> None:
        position = progress.stream_position() if completed else None
        offset = self.offset_record(position, snapshot=progress.to_json())
        self.with_sink_retries(lambda: self.sink.write_batch(messages, offset))
        self.metrics.record_commit()

    def snapshot_context(self, reader: SnapshotReader) -> SnapshotContext:
        return self.source.snapshot_context(self.config, self.bootstrap_servers, reader, self.stop,
                                            self.snapshot_metrics)

    def self_committing_executor(self, context: SnapshotContext) -> ChunkExecutor:
        return self.source.self_committing_executor(context)

    # -- streaming ------------------------------------------------------------------------------------------

    def _stream(self, start: Position | None) -> None:
        with batch_collection():  # core.collector
            self._stream_changes(start)

    def _stream_changes(self, start: Position | None) -> None:
        changes = self._changes = ChangeQueue(self.config.max_queue_size, self.config.max_queue_size_in_bytes)
        self.latest = None  # a run started again after an unknown commit outcome resumes from what is committed
        self.metrics.watch_queue(changes)
        reader_stop = threading.Event()
        reader = self.source.open_reader(start, changes, self.metrics, self.backoff, reader_stop)
        # "streaming" once the source holds the start (a new PostgreSQL slot is created by open_reader): a change
        # written after the phase shows is captured
        self._set_phase("streaming")
        reader.start()
        if self.incremental is not None:
            self.incremental.attach()
        # Batch N's transaction commits on this thread while the next batch is taken and built (Kafka's round trips
        # release the GIL). The next batch is handed to the sink as soon as N has committed, with every change that
        # came meanwhile (up to max.batch.size): a change waits for at most the commit in flight, not for N+1's too.
        # Transactions stay one at a time and in order.
        self._committer = ThreadPoolExecutor(1, thread_name_prefix=f"commit-{self.name}")
        try:
            pending = PendingBatch()
            while not self.stop.is_set():
                self._raise_commit_failure()
                if self.incremental is not None:
                    self.incremental.step()
                items, count = self._drain(changes, self.config.max_batch_size - pending.size)
                if items:
                    if self.trace is not None:
                        self.trace("taken", items)
                    self._build(pending, items, count)
                if pending.complete(self.config.max_batch_size) or not self._committing():
                    self._hand(pending)
                    pending = PendingBatch()
            self._hand(pending)  # stopping: what was built is committed, as it would have been a moment later
            self._commit_position_reached()
        finally:
            # Changes still queued are not committed: the next start reads them again after the stored position.
            try:
                self._await_commit()
            finally:
                self._committer.shutdown()
                self._committer = None
                self._changes = None
                self.metrics.watch_queue(None)
                if self.incremental is not None:
                    self.incremental.detach()
                reader_stop.set()
                reader.join(5)

    def _commit_position_reached(self) -> None:
        """At a clean stop: where the reader got to with no captured change since the last commit. When Kafka
        refuses it the stop stays clean: the next start reads again from the last committed position."""
        self._await_commit()
        if self.latest is None or self.latest == self.committed:
            return
        try:
            self._commit([], self.latest)
            self._await_commit()
        except (SinkRetriableError, SinkFatalError) as error:
            log.warning("%s/%s: the position reached could not be committed at stop (%s); the next start reads "
                        "from the last committed one", self.config.name, self.name, error)

    def _drain(self, changes: ChangeQueue, limit: int) -> tuple[list, int]:
        """What is queued, up to `limit`; waits at most poll.interval.ms only when nothing is (a commit that
        completes ends the wait: the batch built meanwhile is then handed over). While a commit is in flight the
        batch being built cannot be handed over anyway: the wait lasts until TAKEN_TOGETHER changes (or `limit`)
        are queued, a marker comes or the commit completes, so a reader that queues a few changes at a time does not
        wake this thread for each few (a wake costs the thread a context switch and a pass of this loop)."""
        fill = min(limit, TAKEN_TOGETHER) if self._committing() else 1
        return changes.take_counted(limit, self.config.poll_interval_ms / 1000, _MARKERS, fill)

    @property
    def _build_many(self) -> Callable[[list, list], BuiltChanges] | None:
        return getattr(self.builder, "build_changes", None)

    def _committing(self) -> bool:
        return self._in_flight is not None and not self._in_flight.done()

    def _build(self, pending: PendingBatch, items: list, count: int) -> None:
        """Turns `items` (`count` changes and markers: spans count their changes) into Kafka messages added to
        `pending`; a ReaderFailed ends it (and the batch)."""
        messages = pending.messages
        built_from = len(messages)
        pending.size += count
        # take() ends a batch at its first marker: a marker can only be the last item
        marker = items[-1] if _ends_batch(items[-1]) else None
        changes = items if marker is None else items[:-1]
        if changes:
            pending.position = self._build_changes(changes, pending, spans=count != len(items))
        if isinstance(marker, ReaderFailed):
            pending.failure = marker.error
        elif marker is not None:
            pending.idle = True
            pending.position = self.source.position_after(marker, pending.position)
        if self.trace is not None and len(messages) > built_from:
            self.trace("built", messages[built_from:])

    def _build_changes(self, changes: list, pending: PendingBatch, spans: bool = False) -> Position | None:
        """Adds the messages of `changes` (no markers; `spans`: ChangeSpans among them) to `pending`; returns the
        position after them. Spans go whole to the source's build_changes and position_after_changes, one change at a
        time to the rest."""
        incremental = self.incremental
        if incremental is not None and not (incremental.active or incremental.signal is not None):
            incremental = None
        if incremental is None and self._build_many is not None:
            built = self._build_many(changes, pending.messages)
            pending.seen.add_built(built)
            if built.payload is None or pending.payload is None:
                pending.payload = None
            else:
                pending.payload += built.payload
            return self._position_after_changes(changes, pending.position, spans)
        pending.payload = None
        if spans:
            changes = list(each_change(changes))
        messages = pending.messages
        position = pending.position
        built = BuiltChanges()
        build = self.builder.build
        position_after = self.source.position_after
        for change in changes:
            position = position_after(change, position)
            if incremental is not None:
                messages.extend(incremental.on_change(change))  # chunk rows at their high watermark
            built.add(build(change), change, messages)
        pending.seen.add_built(built)
        return position

    def _position_after_changes(self, changes: list, previous: Position | None, spans: bool) -> Position | None:
        computed = getattr(self.source, "position_after_changes", None)
        if computed is not None:
            return computed(changes, previous)
        position_after = self.source.position_after
        for change in each_change(changes) if spans else changes:
            previous = position_after(change, previous)
        return previous

    def _hand(self, pending: PendingBatch) -> None:
        """Commits what `pending` holds (changes, idle position, heartbeat or incremental snapshot progress)."""
        builder = self.builder
        messages, position = pending.messages, pending.position
        if position is not None:
            self.latest = position
        oldest = pending.seen.report(self.metrics, builder)
        if pending.failure is not None:
            self._commit(messages, position, oldest=oldest, payload=pending.payload)
            raise pending.failure
        if pending.idle:
            idle = builder.idle()
            if idle:
                messages.extend(idle)
                pending.payload = None
            self.metrics.record_caught_up()
        # A heartbeat that writes to the source is due every interval even when no marker came in this batch: a
        # reader reports a position only when it moves, and the heartbeat's own write is what will move it.
        beat_position = position if position is not None else self.committed
        heartbeat_due = (
            self.config.heartbeat_interval_ms > 0
            and time.monotonic() - self._last_commit >= self.config.heartbeat_interval_ms / 1000
            and beat_position is not None
            and (beat_position != self.committed or self._heartbeats_move_source)
        )
        # incremental snapshot progress changed: persist it
        progressed = self.incremental is not None and self.incremental.take_dirty()
        if messages or progressed:
            self._commit(messages, position, oldest=oldest, payload=pending.payload)
        elif heartbeat_due:
            messages.extend(builder.heartbeat())
            self._commit(messages, beat_position, heartbeat=True)
        elif position is not None and position != self.committed and (
                self.committed is None or (pending.idle and self._commits_idle)
                or time.monotonic() - self._last_commit >= IDLE_COMMIT_SECONDS):
            self._commit(messages, position)  # an offset-only commit: the source may then release what it holds

    def offset_record(self, position: Position | None, snapshot: dict | None = None, startup: dict | None = None):
        extra = {}
        state = self.builder.transaction_state()
        if state:
            extra["transaction"] = state
        incremental = self.incremental.state_json() if snapshot is None and self.incremental is not None else None
        if incremental is not None:
            extra["incremental_snapshot"] = incremental
        return self.source.offset_record(position, snapshot=snapshot, startup=startup, extra=extra)

    def _commit(self, messages, position: Position | None, heartbeat=False,
                oldest: ChangeSummary | None = None, payload: int | None = None) -> None:
        """Commits `messages` with the offset of `position` on the committer thread (`payload`: their key and value
        bytes when the builder counted them)."""
        if position is None and not messages:
            return
        self._await_commit()  # the previous batch first: its position may be the one this offset falls back to
        position = position if position is not None else self.committed
        offset = self.offset_record(position)

        trace = self.trace

        def commit() -> None:
            if trace is not None:
                trace("handed", messages)
            self.with_sink_retries(lambda: self.sink.write_batch(messages, offset, payload=payload))
            if trace is not None:
                trace("committed", messages)
            self.committed = position
            self._last_commit = time.monotonic()
            if oldest is not None and oldest.source_ms is not None:
                self.metrics.record_committed(oldest.source_ms, oldest.lag_basis)
            if self._on_committed is not None and position is not None:
                self._on_committed(position)
            self.metrics.record_commit(heartbeat=heartbeat)

        if self._committer is None:  # outside the streaming loop: commit before returning
            commit()
        else:
            self._in_flight = self._committer.submit(commit)
            if self._changes is not None:
                # the loop hands its next batch over at once (and a failure surfaces at once, not at stop)
                changes = self._changes
                self._in_flight.add_done_callback(lambda future: changes.wake())

    def _raise_commit_failure(self) -> None:
        """Raises the error of the batch in flight as soon as it failed (the pipeline then stops with it)."""
        in_flight = self._in_flight
        if in_flight is not None and in_flight.done() and in_flight.exception() is not None:
            self._await_commit()

    def _await_commit(self) -> None:
        """Waits for the batch being committed, raising its error (the pipeline then fails as it would have)."""
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            in_flight.result()
