"""Debezium-style streaming metrics for one pipeline (seed 000 §4.5.3.2), cheap to read every second.

The reader thread and the producing loop both update these; a lock keeps the counters coherent, and
`snapshot()` returns a plain dict that can go straight into JSON (dashboard, /metrics, API).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StreamingMetrics:
    connector: str
    partition: str  # the source's partition this pipeline reads (a MongoDB replica set, ...)
    queue_total_capacity: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    connected: bool = False
    phase: str = "starting"
    total_events_seen: int = 0
    events_filtered: int = 0
    events_by_operation: dict[str, int] = field(default_factory=dict)
    disconnects: int = 0
    primary_elections: int = 0
    last_election_ms: int | None = None
    primary: str | None = None
    members: list[str] = field(default_factory=list)
    ms_behind_source: int | None = None
    lag_basis: str | None = None  # which source time MilliSecondsBehindSource is computed from
    last_event: dict | None = None
    source_event_position: dict | None = None
    _queue: Any = field(default=None, repr=False, init=False)  # the change queue while streaming (has qsize())
    transactions_committed: int = 0
    heartbeats: int = 0
    last_error: str | None = None
    started_at: float = field(default_factory=time.time)
    _recent: deque = field(default_factory=lambda: deque(maxlen=120), repr=False)
    # (number, phase) of the last phases entered: a phase shorter than the report interval (a small snapshot) is
    # still seen by whoever reports, in order
    phase_log: deque = field(default_factory=lambda: deque(maxlen=8), repr=False)

    def record_events(self, by_operation: dict[str, int], position: dict, summary: dict) -> None:
        """Events seen (counts by operation); the position and summary are the last event's."""
        count = sum(by_operation.values())
        with self._lock:
            self.total_events_seen += count
            for operation, n in by_operation.items():
                self.events_by_operation[operation] = self.events_by_operation.get(operation, 0) + n
            self.source_event_position = position
            self.last_event = summary
            self._count_now(count)

    def record_committed(self, source_ms: int, lag_basis: str | None = None) -> None:
        """A batch is committed to Kafka (visible to read_committed consumers) whose oldest change the source made at
        `source_ms`: the lag is how long that change took to get there, what a consumer of the topics sees.

        `lag_basis` names the source time it is computed from (e.g. "wallTime", "clusterTime")."""
        now_ms = int(time.time() * 1000)
        with self._lock:
            self.ms_behind_source = max(0, now_ms - source_ms)
            self.lag_basis = lag_basis

    def record_filtered(self, count: int = 1) -> None:
        with self._lock:
            self.events_filtered += count

    def record_caught_up(self) -> None:
        """No change is waiting: the pipeline is as current as the source."""
        with self._lock:
            self.ms_behind_source = 0

    def record_disconnect(self, error: str | None = None) -> None:
        with self._lock:
            self.disconnects += 1
            self.connected = False
            if error:
                self.last_error = error

    def record_connected(self) -> None:
        """The change stream is open: changes made from now on will be seen."""
        with self._lock:
            self.connected = True

    def record_members(self, primary: str | None, members: list[str]) -> None:
        with self._lock:
            self.primary = primary
            self.members = list(members)

    def record_election(self, new_primary: str | None) -> None:
        with self._lock:
            self.primary_elections += 1
            self.last_election_ms = int(time.time() * 1000)
            self.primary = new_primary

    def record_commit(self, heartbeat: bool = False) -> None:
        with self._lock:
            self.transactions_committed += 1
            if heartbeat:
                self.heartbeats += 1

    def watch_queue(self, queue: Any) -> None:
        """The change queue whose free slots QueueRemainingCapacity reports, read when asked (None: none, empty):
        the reader then pays nothing per change for the metric."""
        self._queue = queue

    @property
    def queue_remaining_capacity(self) -> int:
        queue = self._queue
        return self.queue_total_capacity - (queue.qsize() if queue is not None else 0)

    def set_phase(self, phase: str) -> None:
        with self._lock:
            if phase != self.phase or not self.phase_log:
                number = self.phase_log[-1][0] + 1 if self.phase_log else 1
                self.phase_log.append((number, phase))
            self.phase = phase

    def record_error(self, message: str) -> None:
        with self._lock:
            self.last_error = message

    def _count_now(self, n: int) -> None:
        second = int(time.monotonic())
        if self._recent and self._recent[-1][0] == second:
            self._recent[-1][1] += n
        else:
            self._recent.append([second, n])

    def events_per_second(self, window: int = 5) -> float:
        now = int(time.monotonic())
        with self._lock:
            total = sum(n for second, n in self._recent if now - window <= second < now)
        return total / window

    def snapshot(self) -> dict:
        rate = self.events_per_second()
        with self._lock:
            return {
                "connector": self.connector,
                "partition": self.partition,
                "replica_set": self.partition,  # the dashboard's name for it (MongoDB)
                "phase": self.phase,
                "PhaseLog": [list(entry) for entry in self.phase_log],
                "Connected": self.connected,
                "TotalNumberOfEventsSeen": self.total_events_seen,
                "NumberOfEventsFiltered": self.events_filtered,
                "EventsByOperation": dict(self.events_by_operation),
                "NumberOfDisconnects": self.disconnects,
                "NumberOfPrimaryElections": self.primary_elections,
                "LastPrimaryElectionMs": self.last_election_ms,
                "Primary": self.primary,
                "Members": list(self.members),
                "MilliSecondsBehindSource": self.ms_behind_source,
                "LagBasis": self.lag_basis,
                "QueueTotalCapacity": self.queue_total_capacity,
                "QueueRemainingCapacity": self.queue_remaining_capacity,
                "SourceEventPosition": self.source_event_position,
                "LastEvent": self.last_event,
                "NumberOfCommittedTransactions": self.transactions_committed,
                "NumberOfHeartbeats": self.heartbeats,
                "EventsPerSecond": rate,
                "LastError": self.last_error,
                "UptimeSeconds": round(time.time() - self.started_at, 1),
            }
