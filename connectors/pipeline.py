"""One replica set's pipeline: snapshot phase, then streaming, each batch committed with its offset.

    MongoDB ──▶ ChangeStreamReader (thread) ──queue──▶ this loop: filter, transform, encode ──▶ TransactionalSink

The loop drains the queue into a batch of at most `max.batch.size` changes or `poll.interval.ms`, turns it into
Kafka messages, and writes them together with the batch's last resume token in one Kafka transaction. A crash
anywhere therefore resumes after the last committed batch: nothing lost, nothing duplicated for read_committed
consumers. Heartbeats commit the stream's post-batch resume token when nothing captured happens.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from bson import Timestamp, json_util
from bson.json_util import RELAXED_JSON_OPTIONS

from connectors.config import ConnectorConfig
from connectors.config_types import MessageTooLargePolicy, SnapshotMode, StartupMode
from connectors.errors import ConnectorError, HistoryLost
from connectors.filters import change_stream_pipeline, watch_target
from connectors.kafka import OffsetRecord, OffsetStore, OffsetStoreError, OutMessage, TransactionalSink
from connectors.kafka.errors import CommitOutcomeUnknownError, SinkFatalError, SinkRetriableError
from connectors.kafka.offset_record import STARTUP_LATEST, STARTUP_SNAPSHOT, STARTUP_TIMESTAMP, STARTUP_TOKEN
from connectors.kafka.topics import TopicSpec, offsets_topic_spec
from connectors.metrics import StreamingMetrics
from connectors.mongodb.client import check_connection, open_client
from connectors.mongodb.elections import ElectionWatcher
from connectors.mongodb.stream import (
    Backoff,
    ChangeQueue,
    ChangeStreamReader,
    Idle,
    OversizedSkipped,
    ReaderFailed,
    StartPosition,
    StreamOptions,
    next_cluster_time,
)
from connectors.mongodb.topology import ReplicaSet
from connectors.records import ChangeRecord, UnsupportedChangeEvent
from connectors.snapshots import (
    ChunkExecutorFactory,
    IncrementalSnapshots,
    InitialSnapshot,
    SnapshotMetrics,
    SnapshotProgress,
)
from connectors.transformer import Transformer

log = logging.getLogger(__name__)

SNAPSHOT_ON_FIRST_RUN = {SnapshotMode.INITIAL, SnapshotMode.INITIAL_ONLY, SnapshotMode.WHEN_NEEDED, SnapshotMode.ALWAYS}


@dataclass
class Position:
    """Where streaming starts, and whether a snapshot runs first."""

    start: StartPosition = field(default_factory=StartPosition)
    snapshot: SnapshotProgress | None = None
    reason: str = ""


class _SeenEvents:
    """A batch's captured and filtered events, reported to the metrics once per batch (not once per event)."""

    __slots__ = ("by_operation", "filtered", "last")

    def __init__(self) -> None:
        self.by_operation: dict[str, int] = {}
        self.filtered = 0
        self.last: tuple[ChangeRecord, dict] | None = None

    def add(self, record: ChangeRecord, change: dict) -> None:
        operation = record.operation.value
        self.by_operation[operation] = self.by_operation.get(operation, 0) + 1
        self.last = (record, change)

    def report(self, metrics: StreamingMetrics) -> None:
        if self.filtered:
            metrics.record_filtered(self.filtered)
            self.filtered = 0
        if self.last is not None:
            record, change = self.last
            # wallTime (MongoDB 6+) has milliseconds; the cluster time only whole seconds (a 0-1,000 ms sawtooth)
            if record.wall_time is not None:
                source_ms, basis = wall_time_ms(record.wall_time), "wallTime"
            elif record.cluster_time is not None:
                source_ms, basis = record.cluster_time.time * 1000, "clusterTime"
            else:
                source_ms, basis = None, None
            metrics.record_events(
                self.by_operation,
                source_ms,
                {"resume_token": change["_id"]},
                {"op": record.operation.value, "ns": record.namespace.full_name},
                lag_basis=basis,
            )
            self.by_operation, self.last = {}, None


class _StopRequested(Exception):  # noqa: N818 - a signal, not an error: a stop came while waiting for Kafka
    pass


def _ends_batch(item) -> bool:
    return isinstance(item, ReaderFailed | Idle)


def wall_time_ms(wall_time) -> int:
    """Milliseconds since the epoch of a change's wallTime (a UTC datetime, or a DatetimeMS outside years 1-9999)."""
    if hasattr(wall_time, "timestamp"):
        if wall_time.tzinfo is None:
            wall_time = wall_time.replace(tzinfo=datetime.UTC)
        return round(wall_time.timestamp() * 1000)
    return int(wall_time)


def now_ms() -> int:
    return int(time.time() * 1000)


class ReplicaSetPipeline:
    def __init__(
        self,
        config: ConnectorConfig,
        replica_set: ReplicaSet,
        bootstrap_servers: str,
        *,
        stop: threading.Event | None = None,
        metrics: StreamingMetrics | None = None,
        on_phase: Callable[[str], None] | None = None,
        snapshot_metrics: SnapshotMetrics | None = None,
        chunk_executor: ChunkExecutorFactory | None = None,
    ):
        self.config = config
        self.replica_set = replica_set
        self.bootstrap_servers = bootstrap_servers
        self.stop = stop or threading.Event()
        self.metrics = metrics or StreamingMetrics(config.name, replica_set.name)
        self.metrics.queue_total_capacity = config.max_queue_size
        self.snapshot_metrics = snapshot_metrics or SnapshotMetrics(config.name, replica_set.name)
        self.chunk_executor = chunk_executor  # who reads initial-snapshot chunks (default: snapshot.max.threads)
        self._on_phase = on_phase or (lambda phase: None)
        self.transformer = Transformer(config, replica_set.name)
        self.backoff = Backoff(
            config.connect_backoff_initial_delay_ms, config.connect_backoff_max_delay_ms, config.connect_max_attempts
        )
        self.sink = TransactionalSink(
            bootstrap_servers,
            config.name,
            replica_set.name,
            offsets_topic=offsets_topic_spec(config.offset_storage_topic, config.offset_storage_partitions),
            errors_topic=config.errors_topic_name,
            new_topic=self._topic_spec,
            too_large=config.message_too_large_policy.value,
        )
        self.offsets = OffsetStore(bootstrap_servers, config.offset_storage_topic)
        self.sink.commit_check = self._batch_committed
        self._committed_token: dict | None = None
        self._last_commit = time.monotonic()
        self._committer: ThreadPoolExecutor | None = None
        self._in_flight: Future | None = None
        self._changes: ChangeQueue | None = None
        self._client = None
        self.incremental = IncrementalSnapshots(self)

    # -- incremental snapshots (thread-safe; the REST API calls these through the worker) ------------------

    def request_incremental_snapshot(self, collections: list[str] | str, filter=None,  # noqa: A002
                                     filters: dict | None = None) -> str:
        """Snapshots the matching captured collections while streaming continues (docs/snapshots.md).

        `collections`: `<database>.<collection>` names or regexes; `filter`: a MongoDB query (document or JSON)
        for all of them, `filters`: {collection: query}. Needs `signal.data.collection`. Returns a request id.
        """
        return self.incremental.request(collections, filter, filters)

    def stop_incremental_snapshot(self, collections: list[str] | None = None) -> None:
        self.incremental.stop(collections)

    def pause_incremental_snapshot(self) -> None:
        self.incremental.pause()

    def resume_incremental_snapshot(self) -> None:
        self.incremental.resume()

    # -- wiring -------------------------------------------------------------------------------------------

    def _topic_spec(self, name: str) -> TopicSpec:
        config = {"cleanup.policy": self.config.topic_creation_cleanup_policy.value}
        return TopicSpec(
            name, self.config.topic_creation_partitions, self.config.topic_creation_replication_factor, config
        )

    def _set_phase(self, phase: str) -> None:
        self.metrics.set_phase(phase)
        self._on_phase(phase)

    def _connect(self):
        watcher = ElectionWatcher(self.metrics.record_election, self.metrics.record_members)
        self._client = open_client(self.replica_set.client_options, [watcher])
        check_connection(self._client, self.replica_set.client_options)
        return self._client

    # -- life cycle -----------------------------------------------------------------------------------------

    def run(self) -> str:
        """Runs until `stop` is set (returns "stopped") or an `initial_only` snapshot is done ("snapshot-done").

        A commit whose outcome could not be learned (CommitOutcomeUnknownError) starts the run again from the
        committed offset: starting fences the producer and reads the offsets topic, which tells what committed.
        """
        while True:
            try:
                return self._run_once()
            except CommitOutcomeUnknownError as error:
                if self.stop.is_set():
                    raise
                log.warning("%s/%s: %s; starting again from the committed offset", self.config.name,
                            self.replica_set.name, error)
                if self.stop.wait(self.backoff.delay(1)):
                    return "stopped"

    def _run_once(self) -> str:
        try:
            self._set_phase("starting")
            self._with_sink_retries(self.sink.open)
            stored = self._with_sink_retries(lambda: self.offsets.get(self.config.name, self.replica_set.name))
            client = self._connect()
            position = self._start_position(stored)
            log.info("pipeline %s/%s starting: %s", self.config.name, self.replica_set.name, position.reason)
            if position.snapshot is not None:
                self._set_phase("snapshot")
                self.incremental.restore(None)  # a full snapshot supersedes an unfinished incremental one
                done = InitialSnapshot(self, client, position.snapshot, self.chunk_executor).run()
                if not done:
                    return "stopped"
                position.start = StartPosition(resume_after=position.snapshot.resume_token)
            if self.config.snapshot_mode is SnapshotMode.INITIAL_ONLY:
                # initial_only never streams, also when restarted after its snapshot completed
                self._set_phase("snapshot-done")
                return "snapshot-done"
            self._set_phase("streaming")
            try:
                self._stream(client, position.start)
            except HistoryLost:
                if self.config.snapshot_mode is not SnapshotMode.WHEN_NEEDED:
                    raise
                log.warning(
                    "%s/%s lost its oplog position; taking a new snapshot (snapshot.mode=when_needed)",
                    self.config.name,
                    self.replica_set.name,
                )
                self.sink.write_batch([], self._offset_record(None, None, startup={"mode": STARTUP_SNAPSHOT}))
                return self.run()
            return "stopped"
        except _StopRequested:
            log.info("%s/%s stopped while waiting for Kafka", self.config.name, self.replica_set.name)
            return "stopped"
        except ConnectorError as error:
            if isinstance(error, CommitOutcomeUnknownError) and not self.stop.is_set():
                raise  # run() starts again from the committed offset
            self.metrics.record_error(str(error))
            self._set_phase("failed")
            raise
        finally:
            self.sink.close()
            if self._client is not None:
                self._client.close()

    def _with_sink_retries(self, action):
        attempt = 0
        while True:
            try:
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
                if self.stop.wait(delay):
                    raise _StopRequested from error
                if isinstance(error, SinkFatalError):
                    self.sink.open()

    def _batch_committed(self, batch_id: str) -> bool:
        """Asked by the sink after a commit with an unknown outcome, once it has fenced the producer."""
        return self.offsets.committed_batch(self.config.name, self.replica_set.name) == batch_id

    # -- where to start -------------------------------------------------------------------------------------

    def _start_position(self, stored: OffsetRecord | None) -> Position:
        config = self.config
        if stored is not None and stored.startup:
            return self._obey_startup(stored.startup)
        if stored is not None and stored.snapshot and not stored.snapshot.get("completed"):
            return Position(snapshot=SnapshotProgress.from_json(stored.snapshot), reason="resuming the snapshot")
        if stored is not None and stored.resume_token is not None:
            self._committed_token = stored.resume_token
            self.transformer = Transformer(self.config, self.replica_set.name,
                                           transaction_state=stored.extra.get("transaction"))
            if config.snapshot_mode is SnapshotMode.ALWAYS:
                return Position(snapshot=SnapshotProgress(), reason="snapshot.mode=always")
            self.incremental.restore(stored.extra.get("incremental_snapshot"))
            if stored.extra.get("invalidated"):
                return Position(StartPosition(start_after=stored.resume_token), reason="after an invalidate")
            return Position(StartPosition(resume_after=stored.resume_token), reason="resuming after the stored token")
        if config.snapshot_mode in SNAPSHOT_ON_FIRST_RUN:
            reason = f"first run, snapshot.mode={config.snapshot_mode.value}"
            return Position(snapshot=SnapshotProgress(), reason=reason)
        if config.startup_mode is StartupMode.TIMESTAMP and config.startup_timestamp_ms is not None:
            ts = Timestamp(config.startup_timestamp_ms // 1000, 0)
            return Position(StartPosition(start_at_operation_time=ts), reason="startup.mode=timestamp")
        return Position(StartPosition(), reason="first run, streaming from now")

    def _obey_startup(self, startup: dict) -> Position:
        mode = startup["mode"]
        if mode == STARTUP_SNAPSHOT:
            return Position(snapshot=SnapshotProgress(), reason="offset reset: re-snapshot")
        if mode == STARTUP_TIMESTAMP:
            # "the changes after T": a change at exactly T (the operationTime of the last write one wants to
            # keep) is not replayed; a wall-clock T is Timestamp(seconds, 0), before every change of that second
            return Position(
                StartPosition(start_at_operation_time=next_cluster_time(startup["timestamp"])),
                reason=f"offset reset to the changes after timestamp {startup['timestamp']}",
            )
        if mode == STARTUP_TOKEN:
            return Position(StartPosition(resume_after=startup["token"]), reason="offset reset to a resume token")
        if mode == STARTUP_LATEST:
            return Position(StartPosition(), reason="offset reset to latest")
        raise ConnectorError(f"unknown startup instruction {mode!r} in the stored offset")

    # -- streaming ------------------------------------------------------------------------------------------

    def _stream(self, client, start: StartPosition) -> None:
        target = watch_target(self.config)
        changes = self._changes = ChangeQueue(self.config.max_queue_size)
        reader_stop = threading.Event()
        reader = ChangeStreamReader(
            client,
            target,
            change_stream_pipeline(self.config, target),
            StreamOptions(
                full_document=self.config.full_document,
                full_document_before_change=self.config.full_document_before_change,
                batch_size=min(self.config.max_batch_size, 10_000),
                skip_oversized_events=self.config.message_too_large_policy is MessageTooLargePolicy.SKIP,
                max_await_ms=min(self.config.poll_interval_ms, self.config.cursor_max_await_time_ms or 1000),
            ),
            start,
            changes,
            self.metrics,
            self.backoff,
            reader_stop,
        )
        reader.start()
        self.incremental.attach(client)
        # Batch N's transaction commits on this thread while batch N+1 is transformed (Kafka's round trips release
        # the GIL); N+1 is written only once N has committed, so transactions stay one at a time and in order.
        self._committer = ThreadPoolExecutor(1, thread_name_prefix=f"commit-{self.replica_set.name}")
        try:
            while not self.stop.is_set():
                self._raise_commit_failure()
                self.incremental.step()
                items = self._drain(changes)
                self._write(items)
        finally:
            # Changes still queued are not committed: the next start reads them again after the stored token.
            try:
                self._await_commit()
            finally:
                self._committer.shutdown()
                self._committer = None
                self._changes = None
                self.incremental.detach()
                reader_stop.set()
                reader.join(5)

    def _drain(self, changes: ChangeQueue) -> list:
        """What is queued, up to max.batch.size; waits at most poll.interval.ms only when nothing is."""
        items = changes.take(self.config.max_batch_size, self.config.poll_interval_ms / 1000, _ends_batch)
        self.metrics.set_queue_remaining(changes.maxsize - changes.qsize())
        return items

    def _write(self, items: list) -> None:
        messages: list[OutMessage] = []
        last_token = None
        last_time = None
        invalidated = False
        idle = False
        seen = _SeenEvents()
        incremental = self.incremental.active or self.incremental.signal is not None
        for item in items:
            if isinstance(item, ReaderFailed):
                seen.report(self.metrics)
                self._commit(messages, last_token, last_time, invalidated)
                raise item.error
            if isinstance(item, OversizedSkipped):
                messages.append(self._oversized_record(item))
                last_token = item.resume_token
                continue
            if isinstance(item, Idle):
                idle = True
                if item.resume_token is not None:
                    last_token = item.resume_token
                continue
            last_token = item["_id"]
            last_time = item.get("clusterTime") or last_time
            invalidated = item.get("operationType") == "invalidate"
            if incremental:
                messages.extend(self.incremental.on_change(item))  # chunk rows at their high watermark
            messages.extend(self._messages_for(item, seen))
        seen.report(self.metrics)
        if idle:
            messages.extend(self.transformer.idle())
            self.metrics.record_caught_up()
        heartbeat_due = (
            self.config.heartbeat_interval_ms > 0
            and time.monotonic() - self._last_commit >= self.config.heartbeat_interval_ms / 1000
            and last_token is not None
            and last_token != self._committed_token
        )
        progressed = self.incremental.take_dirty()  # incremental snapshot progress changed: persist it
        if messages or progressed:
            self._commit(messages, last_token or self._committed_token, last_time, invalidated)
        elif heartbeat_due:
            messages.extend(self.transformer.heartbeat())
            self._commit(messages, last_token, last_time, invalidated, heartbeat=True)

    def _oversized_record(self, skipped: OversizedSkipped) -> OutMessage:
        """The errors-topic record of a change event MongoDB could not return (over 16 MB), in the batch that
        commits the position after it: nothing is dropped without a record."""
        value = {"error": "change_event_too_large", "connector": self.config.name, "rs": self.replica_set.name,
                 **skipped.summary, "resume_token": skipped.resume_token, "ts_ms": now_ms()}
        return OutMessage(self.config.errors_topic_name, None,
                          json_util.dumps(value, json_options=RELAXED_JSON_OPTIONS).encode(),
                          [("cdc.error", b"change_event_too_large")])

    def _messages_for(self, change: dict, seen: _SeenEvents) -> list[OutMessage]:
        try:
            record = ChangeRecord.from_change_event(change)
        except UnsupportedChangeEvent:
            seen.filtered += 1
            return []
        messages = self.transformer.transform(record)
        if not messages and not self.transformer.accepts(record):
            seen.filtered += 1
            return []
        seen.add(record, change)
        return messages

    def _offset_record(self, token, cluster_time, invalidated=False, snapshot=None, startup=None) -> OffsetRecord:
        extra = {}
        if invalidated:
            extra["invalidated"] = True
        state = self.transformer.transaction_state()
        if state:
            extra["transaction"] = state
        incremental = self.incremental.state_json() if snapshot is None else None
        if incremental is not None:
            extra["incremental_snapshot"] = incremental
        return OffsetRecord(
            self.config.name,
            self.replica_set.name,
            resume_token=token,
            cluster_time=cluster_time,
            snapshot=snapshot,
            startup=startup,
            extra=extra,
        )

    def _commit(self, messages, token, cluster_time, invalidated=False, heartbeat=False) -> None:
        if token is None and not messages:
            return
        self._await_commit()  # the previous batch first: its token may be the one this offset falls back to
        offset = self._offset_record(token or self._committed_token, cluster_time, invalidated)

        def commit() -> None:
            self._with_sink_retries(lambda: self.sink.write_batch(messages, offset))
            self._committed_token = offset.resume_token
            self._last_commit = time.monotonic()
            self.metrics.record_commit(heartbeat=heartbeat)

        if self._committer is None:  # outside the streaming loop: commit before returning
            commit()
        else:
            self._in_flight = self._committer.submit(commit)
            if self._changes is not None:
                # a failed commit wakes the loop at once instead of surfacing at the next batch or at stop
                changes = self._changes
                self._in_flight.add_done_callback(lambda future: future.exception() and changes.wake())

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
