"""What a source is to the core: the types a database plugs in through (docs/architecture.md, "Adding a source").

    Source ──partitions()──▶ Partition ──open()──▶ PartitionSource: offset codec, start position,
                                                 change reader, EventBuilder, SnapshotReader

The core runs one pipeline per partition (a MongoDB replica set or shard, a PostgreSQL slot, a MySQL server). It
knows nothing of the database: it moves the source's opaque `Position`s and changes, and commits every batch of
Kafka messages with the partition's offset record in one transaction.

A `Position` is the source's place in its change history. The core only stores it (through the partition's
offset codec, which owns the bytes of the offsets topic: Kafka Connect's key/value layout of that connector
class), compares it (equal: no progress, no heartbeat needed) and hands it back to the source's reader. A reader
that finds its position gone from the source's history (oplog rolled over, WAL/binlog purged) raises
`connectors.HistoryLost`; the core then re-snapshots (snapshot.mode=when_needed) or fails.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from connectors.core.metrics import StreamingMetrics
from connectors.core.snapshot.chunks import Chunk, Plan
from connectors.core.snapshot.metrics import SnapshotMetrics
from connectors.core.snapshot.progress import SnapshotProgress, SnapshotStart
from connectors.core.stream import Backoff, ChangeQueue
from connectors.kafka.sink import OutMessage

Position = Any
"""A source's position: immutable, compared with `==` (equal = same place in the stream). Opaque to the core."""


@dataclass
class StoredOffset:
    """A partition's offset record as the core needs it, decoded by the source's codec."""

    position: Position | None = None  # where streaming resumes (None: never streamed)
    snapshot: dict | None = None  # initial snapshot progress (core.snapshot.progress JSON)
    startup: dict | None = None  # an instruction written by an offset reset ({"mode": ...}); see docs/offsets.md
    transaction: dict | None = None  # the EventBuilder's open-transaction state
    incremental_snapshot: dict | None = None  # incremental snapshot progress


@dataclass
class Start:
    """Where a pipeline starts streaming: `position` (None: from now); `reason` is logged."""

    position: Position | None
    reason: str


class OffsetRecordLike(Protocol):
    """What the transactional sink writes to the offsets topic with each batch."""

    @property
    def key(self) -> bytes: ...

    def to_value(self) -> bytes | None: ...


class EventBuilder(Protocol):
    """Turns one partition's changes into Kafka messages in its connector's Debezium format. One per thread."""

    def build(self, change: Any) -> tuple[str | None, list[OutMessage]] | None:
        """(operation, messages) of one change read from the queue; None when the change is not captured
        (counted as filtered). An operation of None: messages that are no captured event (e.g. an error record)."""

    def describe(self, change: Any) -> ChangeSummary:
        """For the metrics: the last change of a batch (called once per batch)."""

    def idle(self) -> list[OutMessage]:
        """Nothing is waiting in the source: messages that can be emitted now (e.g. a transaction's END)."""

    def heartbeat(self) -> list[OutMessage]:
        """The heartbeat messages of a commit that carries no event (`heartbeat.interval.ms`)."""

    def transaction_state(self) -> dict | None:
        """What the builder must find again after a restart (kept in the offset record)."""

    # optional: def build_changes(self, changes: list, messages: list) -> BuiltChanges -- what `build` gives for each
    #     of `changes` (changes only, no markers), in one call: their messages appended to `messages` in order. The
    #     pipeline uses it when present and no incremental snapshot is merging chunks into the stream; a builder
    #     saves its per-change calls there (MongoDB's raw events: about half of what building one costs).


@dataclass(slots=True)
class BuiltChanges:
    """What `EventBuilder.build_changes` built: the counts `build` would have given change by change (counted with
    `captured` and `add`)."""

    by_operation: dict[str, int] = field(default_factory=dict)  # captured events by operation
    filtered: int = 0  # changes not captured (`build` gave None)
    first: Any = None  # the first and last captured change (None: none), as SeenEvents keeps them
    last: Any = None
    # the key and value bytes of the messages built, when the builder counted them as it wrote them (None: it did not;
    # the sink then counts them itself)
    payload: int | None = None

    def captured(self, operation: str, change: Any) -> None:
        self.by_operation[operation] = self.by_operation.get(operation, 0) + 1
        if self.first is None:
            self.first = change
        self.last = change

    def captured_run(self, counts: dict[str, int], first: Any, last: Any) -> None:
        """Counts a run of captured changes: `counts` by operation, `first` and `last` the run's first and last."""
        for operation, count in counts.items():
            self.by_operation[operation] = self.by_operation.get(operation, 0) + count
        if self.first is None:
            self.first = first
        self.last = last

    def add(self, built: tuple[str | None, list[OutMessage]] | None, change: Any, messages: list) -> None:
        """Counts what `EventBuilder.build` gave for `change`; its messages go to `messages`."""
        if built is None:
            self.filtered += 1
            return
        operation, out = built
        messages.extend(out)
        if operation is not None:
            self.captured(operation, change)


@dataclass(frozen=True)
class ChangeSummary:
    source_ms: int | None  # the change's time at the source (for MilliSecondsBehindSource)
    lag_basis: str | None  # which source time that is
    position: dict  # shown as SourceEventPosition
    summary: dict  # shown as LastEvent


class ChangeReader(Protocol):
    """A thread reading the partition's changes from a position into the queue (see core.stream)."""

    def start(self) -> None: ...

    def join(self, timeout: float | None = None) -> None: ...


class SnapshotReader(Protocol):
    """Plans and reads a partition's initial snapshot; the core coordinates, commits and resumes it."""

    def capture_start(self) -> SnapshotStart:
        """The stream position taken *before* anything is read (changes made while reading arrive after)."""

    def resume(self, progress: SnapshotProgress) -> None:
        """Called instead of `capture_start` when a planned snapshot resumes (the view `capture_start` opened is
        gone), before its chunks left are read: the reader may open a new view for them and note it in `progress`
        (its `read_at`), e.g. PostgreSQL's export of a temporary slot."""

    def collections(self) -> list[str]:
        """The data collections (tables) to snapshot, in order."""

    def plan(self, collection: str, chunk_size: int) -> Plan:
        """Chunk boundaries of one collection (`bounds[i]..bounds[i+1]`, the last one inclusive)."""

    def read_chunk(self, builder: EventBuilder, chunk: Chunk, read_at: Any, filter: Any, mark_last: bool,  # noqa: A002
                   stop: threading.Event | None) -> tuple[list[OutMessage], int]:
        """The chunk's messages and row count; raises core.snapshot.executors.ChunkInterrupted when stopped."""

    def where_read(self, chunk: Chunk) -> dict | None:
        """Where a chunk this reader has just read was read, when its stream must know it to drop what the chunk
        already holds (MySQL/MariaDB: a resumed snapshot's new read view, later than the stream's start); None
        otherwise. The coordinator keeps it with the chunk in the snapshot's progress."""

    def chunk_failure(self, error: BaseException, chunk: Chunk, remote: bool) -> BaseException | None:
        """None when reading the chunk again may succeed; otherwise the error to fail the snapshot with."""

    # optional: def opening_messages(self, builder: EventBuilder) -> list[OutMessage] -- committed with the plan, before
    #     any chunk, once per snapshot (not when it resumes): e.g. MySQL's schema change records of the tables
    # optional: def row_bytes(self, collection: str) -> int -- about how many bytes a row of the collection holds (0:
    #     unknown), from the source's statistics and a few rows: chunks are planned with fewer rows when
    #     `snapshot.chunk.size` of them would hold more than `snapshot.chunk.max.bytes` (core.snapshot.chunks)
    # optional: def close(self) -> None -- called once the snapshot ends (done, stopped or failed), before streaming:
    #     the reader's sessions hold views (a PostgreSQL exported snapshot, a MariaDB transaction and its metadata
    #     locks) that must not outlive it, also while the error that ended it is kept


class PartitionSource(Protocol):
    """One partition of a source, as one pipeline drives it. Not thread-safe unless said."""

    name: str  # names the pipeline: offset key, transactional id, metrics, logs
    progress_type: type[SnapshotProgress]  # keeps this source's snapshot start in the offset record
    chunk_task_type: type  # core.snapshot.executors.ChunkTask, or a subclass with the source's JSON codec

    # offsets
    def offset_key(self) -> bytes: ...

    def decode_offset(self, value: bytes) -> StoredOffset: ...

    def offset_record(self, position: Position | None, *, snapshot: dict | None = None, startup: dict | None = None,
                      extra: dict | None = None) -> OffsetRecordLike:
        """The record committed with a batch; `extra` holds the core's other state (transaction, incremental)."""

    # life cycle
    def connect(self, metrics: StreamingMetrics, stop: threading.Event | None = None) -> None:
        """Checks the source before a run; `stop` is the pipeline's, for waits that must end when it stops."""

    def close(self) -> None: ...

    # where to start
    def start_from_startup(self, startup: dict) -> Start | None:
        """A reset instruction's start for the modes this source adds (the core knows latest and snapshot)."""

    def resume_start(self, position: Position) -> Start:
        """The start after a committed position (the usual restart)."""

    def start_from_config(self) -> Start | None:
        """A first run's start when the configuration names one (e.g. startup.mode=timestamp); None: from now."""

    # streaming
    def event_builder(self, transaction_state: dict | None = None) -> EventBuilder: ...

    def open_reader(self, position: Position | None, queue: ChangeQueue, metrics: StreamingMetrics,
                    backoff: Backoff, stop: threading.Event) -> ChangeReader: ...

    def position_after(self, item: Any, previous: Position | None) -> Position | None:
        """The position once `item` (a change, or an `Idle` marker's position) is committed."""

    # snapshots
    def snapshot_reader(self) -> SnapshotReader: ...

    def snapshot_context(self, config: Any, bootstrap_servers: str, reader: SnapshotReader, stop: threading.Event,
                         metrics: SnapshotMetrics) -> Any:
        """The core.snapshot.executors.SnapshotContext chunk executors get (a source may subclass it)."""

    def self_committing_executor(self, context: Any) -> Any:
        """A ChunkExecutor whose threads commit like remote workers (own transactional id and chunk marker): used
        to resume a snapshot an earlier run handed to other workers."""

    def incremental(self, pipeline: Any, metrics: SnapshotMetrics) -> IncrementalSnapshotter | None:
        """The partition's incremental (DBLog) snapshots, or None when the source has none."""

    # optional (the pipeline uses them when present):
    # commits_idle_positions: bool -- commit an Idle marker's new position with no event (an offset-only
    #     transaction), so the source can release history (a PostgreSQL slot's WAL) while nothing is captured
    # heartbeats_move_source: bool -- a heartbeat writes to the source (heartbeat.action.query), so it is due every
    #     heartbeat.interval.ms even while the position stands still: the WAL or binlog it writes is what moves
    #     the position next (waiting for a move first stalls once a move comes before the heartbeat that made it)
    # def position_after_changes(self, changes: list, previous: Position | None) -> Position | None -- what
    #     `position_after` folded over `changes` (no markers) gives, computed at once (e.g. from the last change)
    # def on_committed(self, position: Position) -> None -- called (on the committing thread) once a batch with
    #     this position committed; must not block (e.g. a slot's flush LSN is acknowledged from it)
    # def status(self) -> dict -- what the source database says about this partition (e.g. a PostgreSQL slot's
    #     retained WAL), JSON data for reports; called from a reporting thread every few seconds, so it must use
    #     its own connection and may raise ConnectorError


class IncrementalSnapshotter(Protocol):
    """Incremental snapshots merged into the stream (the pipeline loop calls these in its thread)."""

    signal: Any  # not None: incremental snapshots can be requested through the source

    @property
    def active(self) -> bool: ...

    def restore(self, value: dict | None) -> None: ...

    def state_json(self) -> dict | None: ...

    def take_dirty(self) -> bool: ...

    def attach(self) -> None: ...

    def detach(self) -> None: ...

    def step(self) -> None: ...

    def on_change(self, change: Any) -> list[OutMessage]: ...


class Partition(Protocol):
    name: str


class Source(Protocol):
    """One connector's source database (chosen by `connector.class`)."""

    def partitions(self) -> Sequence[Partition]:
        """What the connection points at, one pipeline each."""

    def open(self, partition: Partition) -> PartitionSource: ...
