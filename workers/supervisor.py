"""The supervisor (Celery beat, every few seconds): makes observed state follow desired state.

For a connector that should run, every replica set without a held lease gets a pipeline task; a short Redis
"dispatch" key stops the next tick from sending a duplicate while the first task is still starting. For a connector
that should not run, every running pipeline is told to stop. A pipeline that just failed is retried after a pause,
not every tick.

A pipeline that holds its lease but no longer renews its listening mark (workers.control.listener_key) cannot hear
any command: after it was seen so on two ticks, its lease is revoked, which stops it (its keeper finds the lease
lost), and the next tick starts it again.

Placement: a pipeline task goes to the live `streaming` worker holding the fewest pipelines (workers.placement;
Celery's per-worker direct queue), or to the shared `streaming` queue when no worker announced itself. When the
busiest live worker holds more than CDC_REBALANCE_BOUND pipelines (default 1) more than the idlest (a worker joined,
or came back), one streaming pipeline of the busiest is told to restart: it commits its position and stops, and the
next tick places it on the idlest. One such move at a time, at most one per REBALANCE_PAUSE. A worker that dies is
left by its pipelines when their leases expire; they are placed again on the live ones.

Control requests nobody answers end here too: a pause/stop/restart when no pipeline ran is done ("nothing was
running"), and any request still open after REQUEST_TIMEOUT fails with the reason.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta

import redis
from celery.utils.nodenames import worker_direct
from django.utils import timezone

from cdcplatform.celery import app
from web.connectors.models import (
    Connector,
    ControlRequest,
    DesiredState,
    Phase,
    ReplicaSetState,
    RequestStatus,
    SnapshotRequest,
    SnapshotStatus,
)
from web.connectors.services import finish_request, mark_snapshot
from workers import control, leases
from workers.placement import Placement

log = logging.getLogger(__name__)

DISPATCH_GUARD_MS = 20_000
FAILED_RETRY_AFTER = timedelta(seconds=30)
SUSPECT_TTL_MS = 60_000
NOTHING_RUNNING_AFTER = timedelta(seconds=5)  # a stop command still unanswered when no pipeline runs
REQUEST_TIMEOUT = timedelta(seconds=120)  # no answer at all: the request failed
REBALANCE_BOUND = int(os.environ.get("CDC_REBALANCE_BOUND", "1"))  # pipelines more than the idlest worker; -1: off
REBALANCE_PAUSE_MS = 20_000  # between two moves: the moved pipeline stops, is placed and starts
REBALANCE_KEY = "cdc:rebalance"


def deaf_pipelines(connector: str, running: dict[str, str]) -> list[str]:
    """Revokes the lease of pipelines seen holding one without listening on two ticks; the replica sets revoked."""
    client = control.client()
    revoked = []
    for replica_set in running:
        key = leases.lease_key(connector, replica_set)
        suspect = f"cdc:deaf:{connector}:{replica_set}"
        if client.exists(control.listener_key(connector, replica_set)):
            client.delete(suspect)
            continue
        value = client.get(key)
        if value is None:
            continue
        value = value.decode()
        if client.set(suspect, value, nx=True, px=SUSPECT_TTL_MS):
            continue  # first sighting: it may have taken the lease a moment ago
        if (client.get(suspect) or b"").decode() == value and leases.revoke(client, key, value):
            client.delete(suspect)
            log.error("supervisor: the pipeline %s/%s on %s stopped listening for commands; lease revoked so that "
                      "it stops and starts again", connector, replica_set, value.split("|", 1)[0])
            revoked.append(replica_set)
    return revoked


def _dispatch(connector: str, replica_set: str | None, placement: Placement) -> str | None:
    """Sends the pipeline task; the worker it was sent to ("any" on the shared queue), None when one is on its way."""
    from workers.streaming import run_pipeline

    guard = f"cdc:dispatch:{connector}:{replica_set or '*'}"
    if not control.client().set(guard, "1", nx=True, px=DISPATCH_GUARD_MS):
        return None
    worker = placement.choose()
    run_pipeline.apply_async(args=[connector, replica_set], queue=worker_direct(worker) if worker else "streaming")
    return worker or "any"


def rebalance(placement: Placement, bound: int = REBALANCE_BOUND) -> str | None:
    """Tells one streaming pipeline of the busiest worker to restart when the loads differ by more than `bound`
    (placed again on the next tick); what it did, or None."""
    pair = placement.imbalance(bound) if bound >= 0 else None
    if pair is None:
        return None
    busiest, idlest = pair
    streaming = {(s.connector.name, s.replica_set) for s in ReplicaSetState.objects.filter(
        phase=Phase.STREAMING, worker=busiest, connector__desired_state=DesiredState.RUNNING).select_related(
        "connector")}
    movable = [pipeline for pipeline in placement.held[busiest] if pipeline in streaming]
    if not movable or not control.client().set(REBALANCE_KEY, busiest, nx=True, px=REBALANCE_PAUSE_MS):
        return None
    connector, replica_set = sorted(movable)[0]
    control.notify(connector, "restart", replica_set=replica_set)
    return (f"move {connector}/{replica_set} off {busiest} ({placement.load[busiest]} pipelines; "
            f"{idlest} has {placement.load[idlest]})")


def reconcile_connector(connector: Connector, placement: Placement | None = None) -> list[str]:
    """What this tick did for one connector (for logs and tests)."""
    actions = []
    placement = placement if placement is not None else Placement.now(control.client())
    running = control.running_pipelines(connector.name)
    for replica_set in deaf_pipelines(connector.name, running):
        running.pop(replica_set, None)
        actions.append(f"revoke {replica_set} (not listening)")
    settle_requests(connector, running)
    if connector.desired_state != DesiredState.RUNNING:
        for replica_set in running:
            control.notify(connector.name, "stop", replica_set=replica_set)
            actions.append(f"stop {replica_set}")
        return actions
    states = {state.replica_set: state for state in connector.replica_sets.all()}
    known = [name for name in states if name != "?"]
    if not known:
        if not running and (worker := _dispatch(connector.name, None, placement)):
            actions.append(f"start (discover partitions) on {worker}")
        return actions
    recently = timezone.now() - FAILED_RETRY_AFTER
    for replica_set in known:
        if replica_set in running:
            continue
        state = states[replica_set]
        if state.phase == Phase.FAILED and state.heartbeat_at and state.heartbeat_at > recently:
            continue
        if worker := _dispatch(connector.name, replica_set, placement):
            actions.append(f"start {replica_set} on {worker}")
    return actions


def settle_requests(connector: Connector, running: dict[str, str]) -> None:
    """Ends requests no pipeline will answer: stop commands when nothing runs, anything past REQUEST_TIMEOUT."""
    now = timezone.now()
    open_requests = ControlRequest.objects.filter(connector=connector, status=RequestStatus.REQUESTED)
    for request in open_requests:
        age = now - request.requested_at
        if request.command != "resume" and not running and age > NOTHING_RUNNING_AFTER:
            finish_request(request.pk, RequestStatus.DONE, "no pipeline was running: nothing to "
                           + ("restart; the supervisor starts it" if request.command == "restart" else "stop"))
        elif age > REQUEST_TIMEOUT:
            finish_request(request.pk, RequestStatus.FAILED,
                           f"no pipeline answered within {REQUEST_TIMEOUT.total_seconds():g}s")
    stale = SnapshotRequest.objects.filter(connector=connector, status=SnapshotStatus.REQUESTED,
                                           requested_at__lt=now - REQUEST_TIMEOUT)
    for request in stale:
        mark_snapshot(request.pk, SnapshotStatus.FAILED,
                      f"no pipeline took it up within {REQUEST_TIMEOUT.total_seconds():g}s")


@app.task(name="workers.supervisor.reconcile")
def reconcile() -> dict[str, list[str]]:
    done = {}
    try:
        placement = Placement.now(control.client())
        for connector in Connector.objects.prefetch_related("replica_sets"):
            actions = reconcile_connector(connector, placement)
            if actions:
                log.info("supervisor: %s: %s", connector.name, ", ".join(actions))
                done[connector.name] = actions
        moved = rebalance(placement)
    except redis.RedisError as error:
        log.warning("supervisor cannot reach Redis: %s", error)
        return done
    if moved:
        log.info("supervisor: %s", moved)
        done["rebalance"] = [moved]
    return done


@app.task(name="workers.supervisor.reap_spark_runs")
def reap_spark_runs() -> list[int]:
    """Spark runs whose worker stopped reporting (killed mid-run) end as failed instead of 'running' forever."""
    from web.sparkjobs.services import reap_stale

    return reap_stale()
