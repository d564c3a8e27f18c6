"""MongoDB as a source of the core (connectors.core.source): replica sets (or a sharded cluster's shards) are the
partitions, change streams the change readers, Debezium's MongoDB connector the event format."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from bson import Timestamp, json_util
from bson.json_util import RELAXED_JSON_OPTIONS

from connectors.config.types import CaptureScope, MessageTooLargePolicy, StartupMode
from connectors.core.metrics import StreamingMetrics
from connectors.core.snapshot.executors import ChunkExecutor
from connectors.core.snapshot.incremental import IncrementalSnapshots
from connectors.core.snapshot.metrics import SnapshotMetrics
from connectors.core.source import BuiltChanges, ChangeSummary, Start, StoredOffset
from connectors.core.stream import Backoff, ChangeQueue
from connectors.kafka.offset_record import STARTUP_TIMESTAMP, STARTUP_TOKEN, encode_key
from connectors.kafka.sink import OutMessage
from connectors.mongodb import position as positions
from connectors.mongodb.client import check_connection, open_client
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.elections import ElectionWatcher
from connectors.mongodb.filters import WatchTarget, change_stream_pipeline, watch_target
from connectors.mongodb.position import MongoPosition
from connectors.mongodb.raw_events import NOT_WRITTEN, RawEventWriter
from connectors.mongodb.rawjson import RawChangeEvent
from connectors.mongodb.records import ChangeRecord, UnsupportedChangeEvent
from connectors.mongodb.shard_status import ShardStatus
from connectors.mongodb.snapshots.executors import ChunkTask, SelfCommittingThreadExecutor, SnapshotContext
from connectors.mongodb.snapshots.incremental import MongoWatermarks
from connectors.mongodb.snapshots.progress import SnapshotProgress
from connectors.mongodb.snapshots.reader import MongoSnapshotReader
from connectors.mongodb.stream import ChangeStreamReader, OversizedSkipped, StreamOptions, next_cluster_time
from connectors.mongodb.topology import ReplicaSet, partitions
from connectors.mongodb.transformer import Transformer


def wall_time_ms(wall_time) -> int:
    """Milliseconds since the epoch of a change's wallTime (a UTC datetime, or a DatetimeMS outside years 1-9999)."""
    if hasattr(wall_time, "timestamp"):
        if wall_time.tzinfo is None:
            wall_time = wall_time.replace(tzinfo=datetime.UTC)
        return round(wall_time.timestamp() * 1000)
    return int(wall_time)


def now_ms() -> int:
    return int(time.time() * 1000)


class MongoEventBuilder:
    """The core's EventBuilder over the Transformer (change stream event → Debezium MongoDB events)."""

    def __init__(self, config: ConnectorConfig, replica_set: str, transaction_state: dict | None = None, *,
                 clock: Callable[[], float] = time.time):
        self.config = config
        self.replica_set = replica_set
        self.transformer = Transformer(config, replica_set, clock=clock, transaction_state=transaction_state)
        self.transform = self.transformer.transform
        self.idle = self.transformer.idle
        self.heartbeat = self.transformer.heartbeat
        self.transaction_state = self.transformer.transaction_state
        self.raw_writer = RawEventWriter.for_transformer(self.transformer)

    def build(self, change: Any) -> tuple[str | None, list] | None:
        messages: list = []
        built = self.build_changes([change], messages)
        if built.filtered:
            return None
        return next(iter(built.by_operation), None), messages

    def build_changes(self, changes: list, messages: list) -> BuiltChanges:
        """`build` of each change (core.source.EventBuilder.build_changes): runs of raw events the compiled module
        writes whole cost one call per run (`RawEventWriter.write_run`), the others one call each here."""
        built = BuiltChanges()
        writer = self.raw_writer
        write = writer.build_into if writer is not None else None
        write_run = writer.write_run if writer is not None and writer.writes_runs else None
        index, count = 0, len(changes)
        while index < count:
            if write_run is not None:
                index = write_run(changes, index, messages, built)
                if index == count:
                    break
            change = changes[index]
            index += 1
            raw = type(change) is RawChangeEvent
            operation = write(change, messages) if raw and write is not None else NOT_WRITTEN
            if operation is NOT_WRITTEN:  # an error record is built with no captured event's operation
                built.add(self._build_decoded(change.event if raw else change), change, messages)
            elif operation is None:
                built.filtered += 1
            else:
                built.captured(operation, change)
        return built

    def _build_decoded(self, change: Any) -> tuple[str | None, list] | None:
        if type(change) is not dict:
            if isinstance(change, OversizedSkipped):
                return None, [self._oversized_record(change)]
            return None
        try:
            record = ChangeRecord.from_change_event(change)
        except UnsupportedChangeEvent:
            return None
        messages = self.transform(record)
        if not messages and not self.transformer.accepts(record):
            return None
        return record.operation.value, messages

    def describe(self, change: dict | RawChangeEvent) -> ChangeSummary:
        if type(change) is RawChangeEvent:
            change = change.event
        record = ChangeRecord.from_change_event(change)
        # wallTime (MongoDB 6+) has milliseconds; the cluster time only whole seconds (a 0-1,000 ms sawtooth)
        if record.wall_time is not None:
            source_ms, basis = wall_time_ms(record.wall_time), "wallTime"
        elif record.cluster_time is not None:
            source_ms, basis = record.cluster_time.time * 1000, "clusterTime"
        else:
            source_ms, basis = None, None
        return ChangeSummary(source_ms, basis, {"resume_token": change["_id"]},
                             {"op": record.operation.value, "ns": record.namespace.full_name})

    def _oversized_record(self, skipped: OversizedSkipped) -> OutMessage:
        """The errors-topic record of a change event MongoDB could not return (over 16 MB), in the batch that
        commits the position after it: nothing is dropped without a record."""
        value = {"error": "change_event_too_large", "connector": self.config.name, "rs": self.replica_set,
                 **skipped.summary, "resume_token": skipped.resume_token, "ts_ms": now_ms()}
        return OutMessage(self.config.errors_topic_name, None,
                          json_util.dumps(value, json_options=RELAXED_JSON_OPTIONS).encode(),
                          [("cdc.error", b"change_event_too_large")])


class ReplicaSetSource:
    """One replica set (or shard) as the partition one pipeline reads."""

    progress_type = SnapshotProgress
    chunk_task_type = ChunkTask

    def __init__(self, config: ConnectorConfig, replica_set: ReplicaSet):
        self.config = config
        self.replica_set = replica_set
        self.name = replica_set.name
        self.client = None
        self._shards = ShardStatus() if replica_set.through_mongos else None

    # -- offsets ------------------------------------------------------------------------------------------------

    def offset_key(self) -> bytes:
        if self.replica_set.through_mongos:
            return positions.sharded_offset_key(self.config.name, self.name)
        return encode_key(self.config.name, self.name)

    def decode_offset(self, value: bytes) -> StoredOffset:
        return positions.decode_offset(self.config.name, self.name, value)

    def offset_record(self, position: MongoPosition | None, *, snapshot: dict | None = None,
                      startup: dict | None = None, extra: dict | None = None):
        record = positions.offset_record(self.config.name, self.name, position, snapshot=snapshot, startup=startup,
                                         extra=extra)
        if self.replica_set.through_mongos:
            return positions.ShardedOffsetRecord(positions.sharded_offset_key(self.config.name, self.name), record)
        return record

    position_after = staticmethod(positions.position_after)
    position_after_changes = staticmethod(positions.position_after_changes)

    # -- life cycle ---------------------------------------------------------------------------------------------

    def connect(self, metrics: StreamingMetrics, stop: threading.Event | None = None) -> None:
        watcher = ElectionWatcher(metrics.record_election, metrics.record_members)
        self.client = open_client(self.replica_set.client_options, [watcher])
        check_connection(self.client, self.replica_set.client_options)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def status(self) -> dict | None:
        """A sharded cluster read through mongos: its shards, their primaries and elections, the migrations seen
        (shard_status); None for a replica set, whose members the driver's monitoring reports."""
        if self._shards is None or self.client is None:
            return None
        return self._shards.read(self.client)

    # -- where to start -----------------------------------------------------------------------------------------

    def resume_start(self, position: MongoPosition) -> Start:
        if position.invalidated:
            return Start(position, "after an invalidate")
        return Start(position, "resuming after the stored token")

    def start_from_startup(self, startup: dict) -> Start | None:
        mode = startup["mode"]
        if mode == STARTUP_TIMESTAMP:
            # "the changes after T": a change at exactly T (the operationTime of the last write one wants to
            # keep) is not replayed; a wall-clock T is Timestamp(seconds, 0), before every change of that second
            return Start(MongoPosition(None, start_at=next_cluster_time(startup["timestamp"])),
                         f"offset reset to the changes after timestamp {startup['timestamp']}")
        if mode == STARTUP_TOKEN:
            return Start(MongoPosition(startup["token"]), "offset reset to a resume token")
        return None

    def start_from_config(self) -> Start | None:
        config = self.config
        if config.startup_mode is StartupMode.TIMESTAMP and config.startup_timestamp_ms is not None:
            ts = Timestamp(config.startup_timestamp_ms // 1000, 0)
            return Start(MongoPosition(None, start_at=ts), "startup.mode=timestamp")
        return None

    # -- streaming ----------------------------------------------------------------------------------------------

    def event_builder(self, transaction_state: dict | None = None) -> MongoEventBuilder:
        return MongoEventBuilder(self.config, self.name, transaction_state)

    def open_reader(self, position: MongoPosition | None, queue: ChangeQueue, metrics: StreamingMetrics,
                    backoff: Backoff, stop: threading.Event) -> ChangeStreamReader:
        config = self.config
        target = watch_target(config)
        options = StreamOptions(
            full_document=config.full_document,
            full_document_before_change=config.full_document_before_change,
            batch_size=min(config.max_batch_size, 10_000),
            skip_oversized_events=config.message_too_large_policy is MessageTooLargePolicy.SKIP,
            max_await_ms=min(config.poll_interval_ms, config.cursor_max_await_time_ms or 1000),
        )
        start = position.start() if position is not None else MongoPosition(None).start()
        wider = None
        if target.scope is not CaptureScope.DEPLOYMENT and config.capture_scope is CaptureScope.DEPLOYMENT:
            whole = WatchTarget(CaptureScope.DEPLOYMENT)  # narrowed from the include lists, not by capture.scope
            wider = (whole, change_stream_pipeline(config, whole))
        reader = ChangeStreamReader(self.client, target, change_stream_pipeline(config, target), options, start,
                                    queue, metrics, backoff, stop, wider=wider)
        reader.pin_start()  # "from now" is now, before the pipeline shows it streams
        return reader

    # -- snapshots ----------------------------------------------------------------------------------------------

    def snapshot_reader(self) -> MongoSnapshotReader:
        return MongoSnapshotReader(self.config, self.client)

    def snapshot_context(self, config, bootstrap_servers: str, reader, stop: threading.Event,
                         metrics: SnapshotMetrics) -> SnapshotContext:
        return SnapshotContext(config, self.replica_set, bootstrap_servers, reader, stop, metrics,
                               self.event_builder)

    def self_committing_executor(self, context: SnapshotContext) -> ChunkExecutor:
        return SelfCommittingThreadExecutor(context)

    def incremental(self, pipeline, metrics: SnapshotMetrics) -> IncrementalSnapshots:
        return IncrementalSnapshots(pipeline, MongoWatermarks(self.config, self), metrics, self.config.name, self.name,
                                    self.config.incremental_snapshot_chunk_size, self.config.snapshot_chunk_max_bytes)


class MongoSource:
    """A MongoDB deployment: one replica set, or a sharded cluster (one pipeline through mongos, or one per shard
    with mongodb.connection.mode=replica_set)."""

    def __init__(self, config: ConnectorConfig):
        self.config = config

    def partitions(self) -> Sequence[ReplicaSet]:
        return partitions(self.config)

    def open(self, partition: ReplicaSet) -> ReplicaSetSource:
        return ReplicaSetSource(self.config, partition)
