"""Debezium-style snapshot metrics for one pipeline (seed 000 §4.5.3.1), plus chunk progress for the dashboard.

Written by the snapshot coordinator, its reader threads and the streaming loop (incremental snapshots); read
by anyone through `snapshot()`, a plain dict ready for JSON. Counters are guarded by one lock.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


@dataclass
class _Collection:
    chunks_total: int = 0
    chunks_done: int = 0
    rows: int = 0
    estimated_rows: int = 0


@dataclass
class SnapshotMetrics:
    connector: str
    partition: str  # the source's partition this pipeline reads (a MongoDB replica set, ...)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    kind: str | None = None  # "initial" | "incremental"
    snapshot_id: str | None = None
    running: bool = False
    aborted: bool = False
    completed: bool = False
    paused: bool = False
    started_at: float | None = None  # wall clock of the snapshot's start (survives restarts via the offset)
    run_started: float | None = None  # monotonic start of this process's part
    finished_at: float | None = None
    collections: dict[str, _Collection] = field(default_factory=dict)
    chunks_done_at_start: int = 0
    chunks_read: int = 0  # chunks read by this process (re-reads after a crash included)
    chunks_committed: int = 0  # chunks committed during this run
    chunks_skipped: int = 0  # found already committed (chunk marker) when dispatched again
    rows_this_run: int = 0
    current_chunk: dict | None = None  # incremental: the chunk in its watermark window
    incremental_queue: list[str] = field(default_factory=list)
    chunks_dropped_rows: int = 0  # incremental: chunk rows dropped because the stream changed them in the window
    last_error: str | None = None

    # -- writers --------------------------------------------------------------------------------------------

    def start(self, kind: str, snapshot_id: str, started_ms: int, collections: dict[str, tuple[int, int, int, int]]):
        """collections: {namespace: (chunks total, chunks done, rows, estimated rows)}."""
        with self._lock:
            self.kind, self.snapshot_id = kind, snapshot_id
            self.running, self.aborted, self.completed, self.paused = True, False, False, False
            self.started_at = started_ms / 1000 if started_ms else time.time()
            self.run_started = time.monotonic()
            self.finished_at = None
            self.collections = {ns: _Collection(*values) for ns, values in collections.items()}
            self.chunks_done_at_start = sum(c.chunks_done for c in self.collections.values())
            self.chunks_read = self.chunks_committed = self.chunks_skipped = self.rows_this_run = 0
            self.chunks_dropped_rows = 0
            self.current_chunk = None

    def add_collection(self, namespace: str, chunks_total: int, estimated_rows: int) -> None:
        with self._lock:
            entry = self.collections.setdefault(namespace, _Collection())
            entry.chunks_total, entry.estimated_rows = chunks_total, estimated_rows

    def record_chunk_read(self) -> None:
        with self._lock:
            self.chunks_read += 1

    def record_chunk_committed(self, namespace: str, rows: int, skipped: bool = False) -> None:
        with self._lock:
            entry = self.collections.setdefault(namespace, _Collection())
            entry.chunks_done += 1
            entry.rows += rows
            self.chunks_committed += 1
            self.rows_this_run += rows
            if skipped:
                self.chunks_skipped += 1

    def record_dropped(self, rows: int) -> None:
        with self._lock:
            self.chunks_dropped_rows += rows

    def set_current_chunk(self, chunk: dict | None) -> None:
        with self._lock:
            self.current_chunk = chunk

    def set_queue(self, namespaces: list[str]) -> None:
        with self._lock:
            self.incremental_queue = list(namespaces)

    def set_paused(self, paused: bool) -> None:
        with self._lock:
            self.paused = paused

    def finish(self, *, aborted: bool = False, error: str | None = None) -> None:
        with self._lock:
            if not self.running:
                return
            self.running = False
            self.completed = not aborted
            self.aborted = aborted
            self.finished_at = time.time()
            self.current_chunk = None
            if error:
                self.last_error = error

    # -- reading --------------------------------------------------------------------------------------------

    def snapshot(self) -> dict:
        with self._lock:
            total = sum(c.chunks_total for c in self.collections.values())
            done = sum(c.chunks_done for c in self.collections.values())
            remaining_tables = sum(1 for c in self.collections.values() if c.chunks_done < c.chunks_total)
            if self.started_at is None:
                duration = 0.0
            else:
                duration = (self.finished_at or time.time()) - self.started_at
            elapsed_run = time.monotonic() - self.run_started if self.run_started is not None else 0.0
            committed_run = done - self.chunks_done_at_start
            eta = None
            if self.running and committed_run > 0 and total >= done:
                eta = round(elapsed_run / committed_run * (total - done), 1)
            elif self.completed:
                eta = 0.0
            return {
                "connector": self.connector,
                "partition": self.partition,
                "replica_set": self.partition,  # the dashboard's name for it (MongoDB)
                "SnapshotKind": self.kind,
                "SnapshotId": self.snapshot_id,
                "SnapshotRunning": self.running,
                "SnapshotAborted": self.aborted,
                "SnapshotCompleted": self.completed,
                "SnapshotPaused": self.paused,
                "SnapshotDurationInSeconds": round(duration, 3),
                "TotalTableCount": len(self.collections),
                "RemainingTableCount": remaining_tables if self.running or self.aborted else 0,
                "CapturedTables": sorted(self.collections),
                "RowsScanned": {ns: c.rows for ns, c in sorted(self.collections.items())},
                "ChunksTotal": total,
                "ChunksDone": done,
                "ChunksReadThisRun": self.chunks_read,
                "ChunksCommittedThisRun": self.chunks_committed,
                "ChunksAlreadyCommitted": self.chunks_skipped,
                "ChunksDoneAtStart": self.chunks_done_at_start,
                "RowsPerSecond": round(self.rows_this_run / elapsed_run, 1) if elapsed_run > 0 else 0.0,
                "EstimatedSecondsRemaining": eta,
                "Collections": {
                    ns: {
                        "chunks_total": c.chunks_total,
                        "chunks_done": c.chunks_done,
                        "rows": c.rows,
                        "estimated_rows": c.estimated_rows,
                    }
                    for ns, c in sorted(self.collections.items())
                },
                "CurrentChunk": self.current_chunk,
                "IncrementalQueue": list(self.incremental_queue),
                "RowsDroppedByWatermarks": self.chunks_dropped_rows,
                "LastError": self.last_error,
            }
