"""The long pipeline task on the `streaming` queue: one partition of one stored connector (a MongoDB replica set or
shard, a PostgreSQL database's slot, a MySQL/MariaDB server).

The message is acknowledged when the task starts (no broker redelivery for long tasks); if this worker dies, its
lease expires and the supervisor dispatches the pipeline again, to whichever worker is free.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable

from celery.signals import worker_shutting_down
from django.conf import settings
from django.db import close_old_connections

from cdcplatform.celery import app
from connectors import ConnectorError
from connectors.config.types import ConfigError
from connectors.sources import open_source
from web.connectors.definitions import config_version, engine_config
from web.connectors.models import Connector, DesiredState, Phase, SnapshotRequest, SnapshotStatus
from web.connectors.services import finish_request, mark_snapshot, report_observed
from workers import control
from workers.leases import Lease, lease_key
from workers.managed import ManagedPipeline
from workers.pipeline_process import run_in_process, stop_all
from workers.publish import publish_metrics
from workers.snapshot_sources import CHUNK_SOURCES
from workers.snapshots import chunk_executor_factory

log = logging.getLogger(__name__)

PHASES = {"snapshot": Phase.SNAPSHOT, "streaming": Phase.STREAMING, "starting": Phase.STREAMING,
          "snapshot-done": Phase.STOPPED, "failed": Phase.FAILED, "stopped": Phase.STOPPED}


def worker_name(task) -> str:
    return task.request.hostname or socket.gethostname()


def _reporter(name: str, replica_set: str, worker: str, lease: str | None = None):
    """Stores a pipeline's reports; `lease` is the value of the lease it runs under (a report of a pipeline whose
    lease another one took over changes nothing: services.report_observed)."""
    reported = {"phase_number": 0}

    def report(state: dict) -> None:
        phase = PHASES.get(state["metrics"]["phase"], Phase.STREAMING)
        if state["metrics"]["phase"] == "starting":
            phase = None  # not a phase of its own: the stored one stays until snapshot or streaming begins
        if state["final"]:
            phase = Phase.FAILED if state["metrics"]["phase"] == "failed" else Phase.STOPPED
        entered = state["metrics"].get("PhaseLog") or []
        passed = [PHASES[p] for number, p in entered[:-1] if number > reported["phase_number"] and p in PHASES
                  and p != "starting"]  # entered and left between two reports (a snapshot of a few rows)
        if entered:
            reported["phase_number"] = entered[-1][0]
        try:
            for short in passed:
                report_observed(name, replica_set, worker=worker, phase=short, lease=lease)
            report_observed(name, replica_set, worker=worker, phase=phase, metrics=state, lease=lease)
        finally:
            close_old_connections()
        publish_metrics(state)

    return report


def _acknowledge(kind: str, request_id: int, status: str, reason: str) -> None:
    """Stores how a request ended (or that a snapshot was taken up); called from the pipeline's threads."""
    try:
        if kind == "snapshot":
            mark_snapshot(request_id, status, reason)
        else:
            finish_request(request_id, status, reason)
    finally:
        close_old_connections()


def _pending_snapshots(connector: Connector) -> list[dict]:
    """Snapshot requests not finished: requested ones are taken up, running ones followed to their end."""
    open_requests = SnapshotRequest.objects.filter(
        connector=connector, status__in=(SnapshotStatus.REQUESTED, SnapshotStatus.RUNNING)).order_by("requested_at")
    return [{"request_id": r.pk, "collections": list(r.collections), "filter": r.filter or None, "status": r.status}
            for r in open_requests]


def _chunk_executor(connector: Connector, worker: str):
    """Snapshot chunks may go to the `snapshot` queue (CDC_SNAPSHOT_DISPATCH decides when the snapshot starts;
    MySQL/MariaDB send only chunks of integer keys, docs/mariadb.md)."""
    if connector.source not in CHUNK_SOURCES:
        return None
    return chunk_executor_factory(connector.name, worker)


@app.task(name="workers.streaming.run_pipeline", bind=True)
def run_pipeline(self, connector_name: str, replica_set: str | None = None) -> dict:
    """Runs until paused/stopped/restarted; with no partition given (`replica_set`, the name it has always had in
    task messages), discovers them and fans out. The pipeline runs in a process of its own
    (workers.pipeline_process) unless CDC_PIPELINE_PROCESSES is off, then in this thread."""
    worker = worker_name(self)
    resolved = _resolve(connector_name, replica_set, worker, fan_out=replica_set is None)
    if isinstance(resolved, dict):
        return resolved
    target = resolved[-1]
    if settings.CDC_PIPELINE_PROCESSES:
        return run_in_process(connector_name, target.name, worker)
    return run_partition(connector_name, target.name, worker, resolved=resolved)


def run_partition(connector_name: str, replica_set: str, worker: str, resolved: tuple | None = None,
                  started: Callable[[ManagedPipeline], None] = lambda managed: None) -> dict:
    """One partition's pipeline, here, until it ends; `started` gets the ManagedPipeline (to stop it)."""
    if resolved is None:
        resolved = _resolve(connector_name, replica_set, worker, fan_out=False)
        if isinstance(resolved, dict):
            return resolved
    connector, config, source, target = resolved
    pending = _pending_snapshots(connector)
    version = config_version(connector)
    close_old_connections()
    lease = Lease(control.client(), lease_key(connector_name, target.name), worker)
    managed = ManagedPipeline(config, target, settings.KAFKA_BOOTSTRAP_SERVERS, control.client(), worker,
                              lease=lease, report=_reporter(connector_name, target.name, worker, lease.value),
                              chunk_executor=_chunk_executor(connector, worker),
                              acknowledge=_acknowledge, pending_snapshots=pending, config_version=version,
                              source=source)
    started(managed)
    outcome = managed.run()
    if outcome.status != "busy":
        phase = Phase.FAILED if outcome.status == "failed" else Phase.STOPPED
        report_observed(connector_name, target.name, worker=worker, phase=phase, error=outcome.error,
                        lease=lease.value)
        close_old_connections()
    log.info("pipeline %s/%s ended: %s %s", connector_name, target.name, outcome.status, outcome.error or "")
    return {"status": outcome.status, "reason": outcome.reason, "error": outcome.error, "replica_set": target.name}


def _resolve(connector_name: str, replica_set: str | None, worker: str, fan_out: bool) -> tuple | dict:
    """(connector, config, source, partition) to run, or the task's result when there is none; with `fan_out`,
    every other partition gets a task of its own."""
    connector = Connector.objects.filter(name=connector_name).first()
    if connector is None or connector.desired_state != DesiredState.RUNNING:
        close_old_connections()
        return {"status": "not-wanted"}
    try:
        config = engine_config(connector)
        source = open_source(config)
        replica_sets = list(source.partitions())
    except (ConfigError, ConnectorError) as error:
        report_observed(connector_name, replica_set or "?", worker=worker, phase=Phase.FAILED, error=str(error))
        return {"status": "failed", "error": str(error)}
    finally:
        close_old_connections()
    if replica_set is None:
        if fan_out:
            for other in replica_sets[1:]:
                run_pipeline.delay(connector_name, other.name)
        return connector, config, source, replica_sets[0]
    matches = [rs for rs in replica_sets if rs.name == replica_set]
    if not matches:
        error = f"{replica_set!r} is no longer a partition of the source (a replica set left the deployment?)"
        report_observed(connector_name, replica_set, worker=worker, phase=Phase.FAILED, error=error)
        close_old_connections()
        return {"status": "failed", "error": error}
    return connector, config, source, matches[0]


@worker_shutting_down.connect
def _stop_pipeline_processes(**kwargs) -> None:
    asked = stop_all()
    if asked:
        log.info("worker shutting down: asked %d pipeline process(es) to stop", asked)
