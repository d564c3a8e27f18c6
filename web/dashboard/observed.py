"""What the dashboard shows about connectors, computed from the observed state workers report.

A worker's report (workers.managed: `{connector, replica_set, worker, final, metrics, sink, snapshot}`) is stored in
`ReplicaSetState.metrics` every second and published to the Channels group `metrics`; pages render the stored one
and static/dashboard/live.js applies the published ones with the same rules as here (keep them in step).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from web.connectors.models import Connector, Phase, ReplicaSetState
from web.connectors.offsets import timestamp_json, token_cluster_time
from web.connectors.state import (  # noqa: F401 - the one state model, re-exported for the dashboard's modules
    STALE_AFTER_SECONDS,
    connector_status,
    current_error,
    is_stale,
    live_phase,
)


def report_of(state: ReplicaSetState) -> dict[str, Any]:
    """The stored worker report, always with `metrics`, `sink` and `snapshot` keys."""
    report = state.metrics if isinstance(state.metrics, dict) else {}
    return {
        **report,
        "metrics": report.get("metrics") or {},
        "sink": report.get("sink") or {},
        "snapshot": report.get("snapshot") or {},
    }


def queue_fill(metrics: dict) -> float | None:
    """Fraction of the pipeline's queue in use (0..1), None when unknown."""
    total = metrics.get("QueueTotalCapacity") or 0
    if total <= 0:
        return None
    remaining = metrics.get("QueueRemainingCapacity") or 0
    return max(0.0, min(1.0, (total - remaining) / total))


def ms_datetime(ms: int | float | None) -> datetime.datetime | None:
    if not ms:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)


def position_time(position: dict | None) -> dict | None:
    """The cluster time inside a resume token ({"t", "i", "iso"}), None when there is none."""
    if not isinstance(position, dict):
        return None
    return timestamp_json(token_cluster_time(position.get("resume_token")))


@dataclass
class CollectionProgress:
    namespace: str
    rows: int
    estimated_rows: int
    chunks_done: int
    chunks_total: int
    completed: bool = False  # the snapshot finished: all of it was read, whatever the estimate said

    @property
    def percent(self) -> int:
        """Chunks are the unit of progress (estimated counts drift); rows when chunks are unknown."""
        if self.completed:
            return 100
        if self.chunks_total > 0:
            return min(100, int(100 * self.chunks_done / self.chunks_total))
        if self.estimated_rows > 0:
            return min(100, int(100 * self.rows / self.estimated_rows))
        return 0


def snapshot_progress(snapshot: dict) -> list[CollectionProgress]:
    collections = snapshot.get("Collections") or {}
    return [
        CollectionProgress(ns, int(c.get("rows") or 0), int(c.get("estimated_rows") or 0),
                           int(c.get("chunks_done") or 0), int(c.get("chunks_total") or 0),
                           bool(snapshot.get("SnapshotCompleted")))
        for ns, c in sorted(collections.items())
    ]


@dataclass
class ReplicaSetView:
    state: ReplicaSetState
    phase: str
    stale: bool
    report: dict
    metrics: dict = field(init=False)
    sink: dict = field(init=False)
    snapshot: dict = field(init=False)

    def __post_init__(self):
        self.metrics, self.sink, self.snapshot = self.report["metrics"], self.report["sink"], self.report["snapshot"]

    @property
    def name(self) -> str:
        return self.state.replica_set

    @property
    def key(self) -> str:
        return f"{self.state.connector.name}/{self.state.replica_set}"

    @property
    def dom_id(self) -> str:
        return "rs-" + re.sub(r"[^A-Za-z0-9_-]", "-", self.state.replica_set)

    @property
    def stream_open(self) -> bool:
        """Only a running pipeline that reports has an open change stream (a stopped one's last report may say so)."""
        return bool(self.metrics.get("Connected")) and self.phase in (Phase.SNAPSHOT, Phase.STREAMING)

    @property
    def members(self) -> list[dict]:
        """Only a running pipeline sees the replica set's members (the page says "not connected" otherwise)."""
        if self.phase not in (Phase.SNAPSHOT, Phase.STREAMING):
            return []
        primary = self.metrics.get("Primary")
        return [{"host": host, "primary": host == primary} for host in self.metrics.get("Members") or []]

    @property
    def queue_fill(self) -> float | None:
        return queue_fill(self.metrics)

    @property
    def source_status(self) -> dict:
        """What the source database last said about the partition (a PostgreSQL slot: PartitionSource.status)."""
        return (self.state.metrics or {}).get("source") or {}

    @property
    def queue_percent(self) -> int | None:
        fill = self.queue_fill
        return None if fill is None else round(100 * fill)

    @property
    def last_election(self) -> datetime.datetime | None:
        return ms_datetime(self.metrics.get("LastPrimaryElectionMs"))

    @property
    def position_time(self) -> dict | None:
        return position_time(self.metrics.get("SourceEventPosition"))

    @property
    def collections(self) -> list[CollectionProgress]:
        return snapshot_progress(self.snapshot)

    @property
    def errors(self) -> list[str]:
        found = [current_error(self.state), self.metrics.get("LastError"), self.snapshot.get("LastError")]
        return list(dict.fromkeys(error for error in found if error))

    @property
    def error_entries(self) -> list[tuple[str, datetime.datetime | None]]:
        """(error, when it was reported): the stored one at its own time, the report's at the report's time."""
        stored = current_error(self.state)
        entries = [(stored, self.state.last_error_at or self.state.heartbeat_at)] if stored else []
        for error in (self.metrics.get("LastError"), self.snapshot.get("LastError")):
            if error and error not in [text for text, _ in entries]:
                entries.append((error, self.state.heartbeat_at))
        return entries


def replica_set_view(state: ReplicaSetState, now: datetime.datetime | None = None) -> ReplicaSetView:
    return ReplicaSetView(state, live_phase(state, now), is_stale(state, now), report_of(state))


@dataclass
class ConnectorView:
    connector: Connector
    replica_sets: list[ReplicaSetView]
    status: str

    @property
    def name(self) -> str:
        return self.connector.name

    @property
    def live(self) -> list[ReplicaSetView]:
        return [rs for rs in self.replica_sets if not rs.stale]

    @property
    def events_per_second(self) -> float:
        return sum(rs.metrics.get("EventsPerSecond") or 0 for rs in self.live)

    @property
    def events_seen(self) -> int:
        return sum(rs.metrics.get("TotalNumberOfEventsSeen") or 0 for rs in self.replica_sets)

    @property
    def lag_ms(self) -> int | None:
        lags = [rs.metrics.get("MilliSecondsBehindSource") for rs in self.live]
        lags = [lag for lag in lags if lag is not None]
        return max(lags) if lags else None

    @property
    def elections(self) -> int:
        return sum(rs.metrics.get("NumberOfPrimaryElections") or 0 for rs in self.replica_sets)

    @property
    def disconnects(self) -> int:
        return sum(rs.metrics.get("NumberOfDisconnects") or 0 for rs in self.replica_sets)

    @property
    def last_error(self) -> str:
        for rs in self.replica_sets:
            if rs.errors:
                return rs.errors[0]
        return ""


def connector_view(connector: Connector, running: dict[str, str] | None = None) -> ConnectorView:
    """`running`: {replica set: worker} holding a lease, None when unknown (Redis unreachable)."""
    now = timezone.now()
    views = [replica_set_view(state, now) for state in connector.replica_sets.all()]
    status = connector_status(connector.desired_state, [rs.phase for rs in views],
                              None if running is None else bool(running))
    return ConnectorView(connector, views, status)
