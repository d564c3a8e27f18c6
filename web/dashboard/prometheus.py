"""`/metrics` through prometheus_client: a collector over the reports pipelines stored, per replica set.

Values come from the last report each pipeline stored (ReplicaSetState.metrics). Counters restart at zero when a
pipeline restarts, which Prometheus' rate() handles as a counter reset. A pipeline whose last report is older than
observed.STALE_AFTER_SECONDS is exported with `cdc_pipeline_up 0` and its gauges of rates and lag left out; so is a
failed, stopped or paused one (`cdc_pipeline_up` is 1 only for a pipeline that runs and reports).
The library writes the exposition: text format 0.0.4, or OpenMetrics when the scraper's Accept header asks for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector, CollectorRegistry

from web.connectors.models import Connector, DesiredState
from web.connectors.verify_metrics import add_verify_samples
from web.dashboard import observed

PHASES = ("snapshot", "streaming", "stopped", "failed")
RUNNING = ("snapshot", "streaming")  # live phases of a pipeline that runs (a silent one is "stale")


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

SLOT = [  # (metric, type, help, key in SlotSource.status()): PostgreSQL partitions only
    ("cdc_postgres_slot_retained_wal_bytes", "gauge", "WAL the server keeps for the connector's replication slot "
     "(current WAL position - restart_lsn); it grows while the slot is not acknowledged.", "retained_wal_bytes"),
    ("cdc_postgres_slot_active", "gauge", "1 while a walsender streams from the slot.", "active"),
]

BINLOG = [  # (metric, type, help, key in ServerSource.status()): MySQL/MariaDB partitions only
    ("cdc_mysql_binlog_behind_bytes", "gauge", "Binlog bytes the server wrote after the position committed to "
     "Kafka (SHOW BINARY LOGS); absent when that file is no longer kept.", "behind_bytes"),
    ("cdc_mysql_binlog_files", "gauge", "Binlog files the server keeps.", "binlog_files"),
    ("cdc_mysql_binlog_size_bytes", "gauge", "Size of the binlog files the server keeps.", "binlog_bytes"),
]


def _number(value) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None


class Families:
    """Metric families in the order of their first sample; a family without a sample is not exported."""

    def __init__(self):
        self.families: dict[str, Metric] = {}

    def add(self, name: str, kind: str, help_text: str, labels: dict[str, object], value) -> None:
        number = _number(value)
        if number is None:
            return
        family = self.families.get(name)
        if family is None:
            factory = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            family = self.families[name] = factory(name, help_text, labels=list(labels))
        family.add_metric([str(label) for label in labels.values()], number)


def families(connectors: Iterable[Connector] | None = None) -> Iterator[Metric]:
    out = Families()
    now = timezone.now()
    if connectors is None:
        connectors = Connector.objects.prefetch_related("replica_sets")
    for connector in connectors:
        for state in DesiredState:
            out.add("cdc_connector_desired_state", "gauge", "1 for the connector's desired state.",
                    {"connector": connector.name, "state": state.value}, connector.desired_state == state)
        for rs_state in connector.replica_sets.all():
            _replica_set(out, rs_state, observed.replica_set_view(rs_state, now))
        add_verify_samples(out, connector)
    yield from out.families.values()


def _replica_set(out: Families, rs_state, view: observed.ReplicaSetView) -> None:
    labels = {"connector": rs_state.connector.name, "replica_set": rs_state.replica_set}
    out.add("cdc_pipeline_up", "gauge", "1 while the pipeline runs (snapshot or streaming) and reports (a report in "
            "the last 15 s); 0 when it failed, stopped, was paused or went silent.", labels, view.phase in RUNNING)
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
    source = (rs_state.metrics or {}).get("source") or {}
    if source.get("slot"):
        for name, kind, help_text, key in SLOT:
            out.add(name, kind, help_text, {**labels, "slot": source["slot"]}, source.get(key))
    if source.get("binlog_file"):
        for name, kind, help_text, key in BINLOG:
            out.add(name, kind, help_text, labels, source.get(key))
    for name, kind, help_text, key in SNAPSHOT:
        out.add(name, kind, help_text, labels, view.snapshot.get(key))
    for collection in view.collections:
        coll = {**labels, "collection": collection.namespace}
        out.add("cdc_snapshot_rows_scanned", "gauge", "Rows or documents read per table or collection (RowsScanned).",
                coll, collection.rows)
        out.add("cdc_snapshot_estimated_rows", "gauge", "Estimated rows or documents per table or collection.", coll,
                collection.estimated_rows)
        out.add("cdc_snapshot_collection_chunks_done", "gauge", "Chunks committed per collection.", coll,
                collection.chunks_done)
        out.add("cdc_snapshot_collection_chunks_total", "gauge", "Chunks per collection.", coll,
                collection.chunks_total)


class ReportsCollector(Collector):
    def __init__(self, connectors: Iterable[Connector] | None = None):
        self.connectors = connectors

    def collect(self) -> Iterable[Metric]:
        return families(self.connectors)


def exposition(accept: str, connectors: Iterable[Connector] | None = None) -> tuple[bytes, str]:
    """The body and content type for a scrape whose Accept header is `accept`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ReportsCollector(connectors))
    encode: Callable[[CollectorRegistry], bytes]
    encode, content_type = choose_encoder(accept)
    return encode(registry), content_type
