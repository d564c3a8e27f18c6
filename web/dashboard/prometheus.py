"""`/metrics` in the Prometheus text format (version 0.0.4): the numbers the dashboard shows, per replica set.

Values come from the last report each pipeline stored (ReplicaSetState.metrics). Counters restart at zero when a
pipeline restarts, which Prometheus' rate() handles as a counter reset. A pipeline whose last report is older than
observed.STALE_AFTER_SECONDS is exported with `cdc_pipeline_up 0` and its gauges of rates and lag left out.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone

from web.connectors.models import Connector, DesiredState
from web.dashboard import observed

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PHASES = ("snapshot", "streaming", "stopped", "failed")


def _escape(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: dict[str, object]) -> str:
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in labels.items()) + "}"


def _number(value) -> str | None:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return repr(float(value)) if isinstance(value, float) else str(value)
    return None


class Exposition:
    def __init__(self):
        self.families: dict[str, tuple[str, str, list[str]]] = {}

    def add(self, name: str, kind: str, help_text: str, labels: dict[str, object], value) -> None:
        text = _number(value)
        if text is None:
            return
        family = self.families.setdefault(name, (kind, help_text, []))
        family[2].append(f"{name}{_labels(labels)} {text}")

    def render(self) -> str:
        lines: list[str] = []
        for name, (kind, help_text, samples) in self.families.items():
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            lines.extend(samples)
        return "\n".join(lines) + "\n"


STREAMING = [  # (metric, type, help, key in StreamingMetrics.snapshot())
    ("cdc_events_seen_total", "counter", "Change events seen since the pipeline started (TotalNumberOfEventsSeen).",
     "TotalNumberOfEventsSeen"),
    ("cdc_events_filtered_total", "counter", "Change events dropped by filters (NumberOfEventsFiltered).",
     "NumberOfEventsFiltered"),
    ("cdc_events_per_second", "gauge", "Events per second over the last seconds (EventsPerSecond).",
     "EventsPerSecond"),
    ("cdc_milliseconds_behind_source", "gauge", "Lag behind the source (MilliSecondsBehindSource).",
     "MilliSecondsBehindSource"),
    ("cdc_disconnects_total", "counter", "Lost connections to the replica set (NumberOfDisconnects).",
     "NumberOfDisconnects"),
    ("cdc_primary_elections_total", "counter", "Primary elections seen (NumberOfPrimaryElections).",
     "NumberOfPrimaryElections"),
    ("cdc_connected", "gauge", "1 while the change stream is open (Connected).", "Connected"),
    ("cdc_queue_total_capacity", "gauge", "Capacity of the pipeline's queue (QueueTotalCapacity).",
     "QueueTotalCapacity"),
    ("cdc_queue_remaining_capacity", "gauge", "Free slots in the pipeline's queue (QueueRemainingCapacity).",
     "QueueRemainingCapacity"),
    ("cdc_committed_transactions_total", "counter", "Kafka transactions committed (NumberOfCommittedTransactions).",
     "NumberOfCommittedTransactions"),
    ("cdc_heartbeats_total", "counter", "Heartbeat commits (NumberOfHeartbeats).", "NumberOfHeartbeats"),
    ("cdc_pipeline_uptime_seconds", "gauge", "Seconds since the pipeline started.", "UptimeSeconds"),
]
LIVE_ONLY = {"cdc_events_per_second", "cdc_milliseconds_behind_source", "cdc_connected"}
SINK = [
    ("cdc_sink_messages_total", "counter", "Messages written to Kafka.", "messages"),
    ("cdc_sink_bytes_total", "counter", "Bytes written to Kafka.", "bytes"),
    ("cdc_sink_transactions_committed_total", "counter", "Kafka transactions committed by the sink.",
     "transactions_committed"),
    ("cdc_sink_transactions_aborted_total", "counter", "Kafka transactions aborted by the sink.",
     "transactions_aborted"),
    ("cdc_sink_skipped_too_large_total", "counter", "Messages skipped as too large.", "skipped_too_large"),
    ("cdc_sink_last_commit_latency_ms", "gauge", "Flush and commit time of the last batch.", "last_commit_latency_ms"),
]
SNAPSHOT = [
    ("cdc_snapshot_running", "gauge", "1 while a snapshot runs (SnapshotRunning).", "SnapshotRunning"),
    ("cdc_snapshot_completed", "gauge", "1 when the last snapshot completed (SnapshotCompleted).",
     "SnapshotCompleted"),
    ("cdc_snapshot_aborted", "gauge", "1 when the last snapshot was aborted (SnapshotAborted).", "SnapshotAborted"),
    ("cdc_snapshot_duration_seconds", "gauge", "Duration of the snapshot (SnapshotDurationInSeconds).",
     "SnapshotDurationInSeconds"),
    ("cdc_snapshot_chunks_total", "gauge", "Chunks of the snapshot.", "ChunksTotal"),
    ("cdc_snapshot_chunks_done", "gauge", "Chunks committed.", "ChunksDone"),
    ("cdc_snapshot_remaining_tables", "gauge", "Collections not finished (RemainingTableCount).",
     "RemainingTableCount"),
    ("cdc_snapshot_estimated_seconds_remaining", "gauge", "Estimated time left.", "EstimatedSecondsRemaining"),
]


def render(connectors: Iterable[Connector] | None = None) -> str:
    out = Exposition()
    now = timezone.now()
    if connectors is None:
        connectors = Connector.objects.prefetch_related("replica_sets")
    for connector in connectors:
        for state in DesiredState:
            out.add("cdc_connector_desired_state", "gauge", "1 for the connector's desired state.",
                    {"connector": connector.name, "state": state.value}, connector.desired_state == state)
        for rs_state in connector.replica_sets.all():
            view = observed.replica_set_view(rs_state, now)
            labels = {"connector": connector.name, "replica_set": rs_state.replica_set}
            out.add("cdc_pipeline_up", "gauge", "1 while the pipeline reports (a report in the last 15 s).",
                    labels, not view.stale)
            for phase in PHASES:
                out.add("cdc_pipeline_phase", "gauge", "1 for the pipeline's observed phase.",
                        {**labels, "phase": phase}, rs_state.phase == phase)
            if rs_state.heartbeat_at:
                out.add("cdc_pipeline_last_report_timestamp_seconds", "gauge", "When the worker last reported.",
                        labels, round(rs_state.heartbeat_at.timestamp(), 3))
            for name, kind, help_text, key in STREAMING:
                if view.stale and name in LIVE_ONLY:
                    continue
                out.add(name, kind, help_text, labels, view.metrics.get(key))
            election = view.metrics.get("LastPrimaryElectionMs")
            out.add("cdc_last_primary_election_timestamp_seconds", "gauge", "When the last primary election was seen.",
                    labels, election / 1000 if election else None)
            for name, kind, help_text, key in SINK:
                out.add(name, kind, help_text, labels, view.sink.get(key))
            for name, kind, help_text, key in SNAPSHOT:
                out.add(name, kind, help_text, labels, view.snapshot.get(key))
            for collection in view.collections:
                coll = {**labels, "collection": collection.namespace}
                out.add("cdc_snapshot_rows_scanned", "gauge", "Documents read per collection (RowsScanned).", coll,
                        collection.rows)
                out.add("cdc_snapshot_estimated_rows", "gauge", "Estimated documents per collection.", coll,
                        collection.estimated_rows)
                out.add("cdc_snapshot_collection_chunks_done", "gauge", "Chunks committed per collection.", coll,
                        collection.chunks_done)
                out.add("cdc_snapshot_collection_chunks_total", "gauge", "Chunks per collection.", coll,
                        collection.chunks_total)
    return out.render()
