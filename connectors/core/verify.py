"""Verify: proves a connector's topics hold exactly what its source holds, row by row (docs/verify.md).

For each partition of the source, a `VerifyView` reads the source in one consistent view at a known position (a
PostgreSQL snapshot, a MariaDB consistent snapshot with its binlog position, a MongoDB snapshot transaction at a
cluster time). Verify waits until the connector's committed offset covers that position, reads each captured
table's topic (`read_committed`) to its end, keeping per key the latest state at or before the position
(verify_topics); meanwhile it reads the table in key-ordered chunks in a thread of its own (verify_chunks; the
snapshot's own plan and reads, so rows are built by the connector's code: types, masks, excluded columns and
renamed fields alike), and compares each chunk's rows with the topic's states of their keys (as text, equal or
not, then as canonical JSON where the texts differ: both sides are in memory, so this is cheaper than hashing
them); only a row that differs is decoded for a field-level diff. Keys in the topic that no
chunk held are extra. A key that differs and changed after the position (or any differing key, when the view's
events may run ahead of their position) is compared again in a later view (at most `rounds` views), and only those
keys are: writes going on while Verify runs raise no false alarm, and a key that settled stays settled while other
keys change.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from connectors import ConnectorError
from connectors.core.snapshot.chunks import Chunk, Plan, planned_chunk_rows
from connectors.core.verify_chunks import ChunkReader
from connectors.core.verify_events import Event, SourceRow, field_diff, loads, same_row
from connectors.core.verify_report import DIFFERENT, EXTRA, MISSING, Mismatch, TableReport, VerifyReport
from connectors.core.verify_topics import TopicReader, TopicState
from connectors.kafka.offsets import OffsetStore

log = logging.getLogger(__name__)


class VerifyView(Protocol):
    """One consistent read of a partition's source at a known position."""

    position: dict  # where the view reads, for the report (JSON)
    placeholder: str | None  # a field value that means "unchanged, not sent" in update events (None: none)
    # Whether an event at or before the position may carry a later state than its own (MongoDB's updateLookup reads
    # the document when the event is built): a differing key is then compared again in a later view even when no
    # later event marks it, since that later write's own event may not have reached the topic yet.
    runs_ahead: bool

    def tables(self) -> list[str]: ...

    def topic(self, table: str) -> str: ...

    def plan(self, table: str, chunk_size: int) -> Plan: ...

    # optional: def row_bytes(self, table: str) -> int -- as SnapshotReader.row_bytes (chunks bounded in bytes)

    def read_rows(self, chunk: Chunk) -> list[SourceRow]:
        """The chunk's rows as the snapshot's events hold them (the connector's own event building): each row's key
        as canonical JSON and the state its `after` leaves (verify_events.SourceRow)."""

    def read_event(self, value: bytes | None) -> Event:
        """A topic record's value as an Event (verify_events.read_event, or a faster reading of the same fields the
        view's `covers` needs)."""

    def read_key(self, key: bytes | None) -> str | None:
        """A topic record's key as canonical JSON (verify_events.key_text, or a faster reading of the same)."""

    def covers(self, source: dict) -> bool:
        """Whether the event with this source block was committed at or before the view's position."""

    def reached(self, position: Any) -> bool:
        """Whether the connector's committed position (its source's Position) covers the view's position."""

    def close(self) -> None: ...


class PartitionVerifier(Protocol):
    """A source's side of Verify for one partition (a replica set, a PostgreSQL database, a MariaDB server)."""

    name: str

    def offset_key(self) -> bytes: ...

    def committed_position(self, value: bytes) -> Any:
        """The position in the partition's offset record value (None: none yet)."""

    def open_view(self) -> VerifyView: ...

    def close(self) -> None: ...


class OpenedPartition:
    """A PartitionVerifier over a source's opened partition (its offset key and record codec), whose views
    `view_type(config, partition)` makes. Nothing is held between views."""

    def __init__(self, config: Any, partition: Any, view_type: Callable[[Any, Any], VerifyView]):
        self.config, self.partition, self.view_type = config, partition, view_type
        self.name = partition.name

    def offset_key(self) -> bytes:
        return self.partition.offset_key()

    def committed_position(self, value: bytes) -> Any:
        return self.partition.decode_offset(value).position

    def open_view(self) -> VerifyView:
        return self.view_type(self.config, self.partition)

    def close(self) -> None:
        """The partition itself is the connector's (a slot, a server position): never touched."""


@dataclass
class VerifyOptions:
    chunk_size: int = 8192
    chunk_max_bytes: int = 0  # fewer rows per chunk when chunk_size of them hold more (snapshot.chunk.max.bytes)
    max_keys: int = 20  # mismatches listed in the report (all are counted)
    wait_seconds: float = 120.0  # for the connector to capture up to a view's position
    rounds: int = 3  # views a key that keeps changing is compared in
    # the source rows read ahead of their comparison (mostly while the topic is read): at most about this many
    # characters of keys and row states, and one chunk more
    read_ahead_chars: int = 64 << 20


Progress = Callable[[dict], None]


class Verifier:
    def __init__(self, config, partitions: list[PartitionVerifier], bootstrap_servers: str,
                 options: VerifyOptions | None = None, stop: threading.Event | None = None,
                 on_progress: Progress | None = None):
        self.config = config
        self.partitions = partitions
        self.options = options or VerifyOptions()
        self.stop = stop or threading.Event()
        self.on_progress = on_progress or (lambda _: None)
        self.offsets = OffsetStore(bootstrap_servers, config.offset_storage_topic)
        self.topics = TopicReader(bootstrap_servers)
        self.report = VerifyReport(config.name)
        self._listed = 0

    def run(self) -> VerifyReport:
        started = time.monotonic()
        try:
            for partition in self.partitions:
                self._verify_partition(partition)
        finally:
            for partition in self.partitions:
                partition.close()
            self.report.seconds = time.monotonic() - started
        return self.report

    # -- one partition ------------------------------------------------------------------------------------------

    def _verify_partition(self, partition: PartitionVerifier) -> None:
        reports: dict[str, TableReport] = {}
        settled: dict[str, list[Mismatch]] = {}  # per table, the mismatches no later view can change
        recheck: dict[str, set[str]] = {}  # per table, the differing keys to compare again in the next view
        for round_number in range(self.options.rounds):
            view = partition.open_view()
            try:
                waiting = time.monotonic()
                committed = self._wait_for_stream(partition, view)
                self.report.waited += time.monotonic() - waiting
                self.report.positions.append({"partition": partition.name, "round": round_number + 1,
                                              "source": view.position, "connector": str(committed)})
                last = round_number + 1 == self.options.rounds
                tables = view.tables() if round_number == 0 else list(recheck)
                pending = {}
                for table in tables:
                    report, mismatches, changed = self._verify_table(view, table, recheck.get(table))
                    reports.setdefault(table, report)
                    if changed and not last:
                        pending[table] = changed
                        self.report.rechecked += len(changed)
                    settled.setdefault(table, []).extend(m for m in mismatches if last or m.key not in changed)
            finally:
                view.close()
            if not pending:
                break
            log.info("verify %s/%s: %d tables have differing keys that changed after %s; comparing them again",
                     self.config.name, partition.name, len(pending), view.position)
            recheck = pending
        for table, report in reports.items():
            mismatches = settled.get(table, [])
            report.missing, report.extra, report.different = (
                sum(1 for m in mismatches if m.kind == kind) for kind in (MISSING, EXTRA, DIFFERENT))
            if not mismatches:
                report.chunks_differing = 0
            self.report.tables.append(report)
            room = max(0, self.options.max_keys - len(self.report.mismatches))
            self.report.mismatches.extend(mismatches[:room])

    def _wait_for_stream(self, partition: PartitionVerifier, view: VerifyView) -> Any:
        deadline = time.monotonic() + self.options.wait_seconds
        position = None
        while True:
            value, _ = self.offsets.read_value(partition.offset_key())
            position = partition.committed_position(value) if value is not None else None
            if position is not None and view.reached(position):
                return position
            if time.monotonic() >= deadline:
                where = "it has committed no position yet" if position is None else f"its committed position is " \
                                                                                      f"{position}"
                raise ConnectorError(
                    f"connector {self.config.name} has not captured the source up to where Verify read it "
                    f"({view.position}) within {self.options.wait_seconds:.0f}s ({where}); Verify compares only a "
                    "running connector that keeps up with its source")
            if self.stop.wait(0.5):
                raise ConnectorError("Verify was stopped")

    # -- one table ------------------------------------------------------------------------------------------------

    def _verify_table(self, view: VerifyView, table: str,
                      only: set[str] | None = None) -> tuple[TableReport, list[Mismatch], set[str]]:
        """The table's report, its mismatches (of the keys in `only`, when given: a later view compares again the
        keys that differed in an earlier one, and no other), and the differing keys that changed after the view's
        position."""
        topic = view.topic(table)
        report = TableReport(table, topic)
        rows = planned_chunk_rows(view, table, self.options.chunk_size, self.options.chunk_max_bytes)
        reader = ChunkReader(view, table, rows, self.options.read_ahead_chars)  # read meanwhile
        try:
            return self._compare_table(view, table, only, report, reader)
        finally:
            reader.close()

    def _compare_table(self, view: VerifyView, table: str, only: set[str] | None, report: TableReport,
                       reader: ChunkReader) -> tuple[TableReport, list[Mismatch], set[str]]:
        reading = time.monotonic()
        state = self.topics.read(report.topic, view.covers, view.placeholder, view.read_event, view.read_key)
        self.report.topic_seconds += time.monotonic() - reading
        reading = time.monotonic()
        report.topic_records = state.records
        chunks = reader.chunks()
        report.chunks = len(chunks)
        mismatches: list[Mismatch] = []
        seen: set[str] = set()
        keyless = False
        for chunk in chunks:
            if self.stop.is_set():
                raise ConnectorError("Verify was stopped")
            rows = self._source_rows(reader.rows())
            keyless = keyless or None in rows
            rows.pop(None, None)
            if only is not None:
                rows = {key: value for key, value in rows.items() if key in only}
            report.rows += len(rows)
            seen.update(rows)
            held = state.rows.get
            differing = [key for key, value in rows.items() if held(key) != value]
            if differing:  # texts that differ may still hold the same row (another field order)
                differing = [key for key in differing if held(key) is None or not same_row(rows[key], held(key))]
            if differing:
                report.chunks_differing += 1
                mismatches.extend(self._row_diffs(table, {key: rows[key] for key in differing}, state))
            self.on_progress({"table": table, "chunk": chunk.index + 1, "chunks": len(chunks), "rows": report.rows})
        if keyless:
            report.skipped = "rows without a key (no primary key): they cannot be matched to the topic's"
        mismatches.extend(Mismatch(table, key, EXTRA) for key in state.rows
                          if key not in seen and (only is None or key in only))
        for mismatch in mismatches:
            setattr(report, mismatch.kind, getattr(report, mismatch.kind) + 1)
        changed = {m.key for m in mismatches if view.runs_ahead or m.key in state.later}
        self.report.source_seconds += time.monotonic() - reading
        return report, mismatches, changed

    @staticmethod
    def _source_rows(rows: list[SourceRow]) -> dict[str | None, str]:
        return {key: state for key, state in rows if state is not None}

    @staticmethod
    def _row_diffs(table: str, rows: dict[str, str], state: TopicState) -> list[Mismatch]:
        found = []
        for key, value in rows.items():
            held = state.rows.get(key)
            if held is None:
                found.append(Mismatch(table, key, MISSING))
            elif not same_row(value, held):
                found.append(Mismatch(table, key, DIFFERENT, field_diff(loads(value), loads(held))))
        return found
