"""The supervisor (Celery beat, every few seconds): makes observed state follow desired state.

For a connector that should run, every replica set without a held lease gets a pipeline task; a short Redis
"dispatch" key stops the next tick from sending a duplicate while the first task is still starting. For a connector
that should not run, every running pipeline is told to stop. A pipeline that just failed is retried after a pause,
not every tick.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import redis
from django.utils import timezone

from cdcplatform.celery import app
from web.connectors.models import Connector, DesiredState, Phase
from workers import control

log = logging.getLogger(__name__)

DISPATCH_GUARD_MS = 20_000
FAILED_RETRY_AFTER = timedelta(seconds=30)


def _dispatch(connector: str, replica_set: str | None) -> bool:
    from workers.streaming import run_pipeline

    guard = f"cdc:dispatch:{connector}:{replica_set or '*'}"
    if not control.client().set(guard, "1", nx=True, px=DISPATCH_GUARD_MS):
        return False
    run_pipeline.apply_async(args=[connector, replica_set], queue="streaming")
    return True


def reconcile_connector(connector: Connector) -> list[str]:
    """What this tick did for one connector (for logs and tests)."""
    actions = []
    running = control.running_pipelines(connector.name)
    if connector.desired_state != DesiredState.RUNNING:
        for replica_set in running:
            control.notify(connector.name, "stop", replica_set=replica_set)
            actions.append(f"stop {replica_set}")
        return actions
    states = {state.replica_set: state for state in connector.replica_sets.all()}
    known = [name for name in states if name != "?"]
    if not known:
        if not running and _dispatch(connector.name, None):
            actions.append("start (discover replica sets)")
        return actions
    recently = timezone.now() - FAILED_RETRY_AFTER
    for replica_set in known:
        if replica_set in running:
            continue
        state = states[replica_set]
        if state.phase == Phase.FAILED and state.heartbeat_at and state.heartbeat_at > recently:
            continue
        if _dispatch(connector.name, replica_set):
            actions.append(f"start {replica_set}")
    return actions


@app.task(name="workers.supervisor.reconcile")
def reconcile() -> dict[str, list[str]]:
    done = {}
    for connector in Connector.objects.prefetch_related("replica_sets"):
        try:
            actions = reconcile_connector(connector)
        except redis.RedisError as error:
            log.warning("supervisor cannot reach Redis: %s", error)
            return done
        if actions:
            log.info("supervisor: %s: %s", connector.name, ", ".join(actions))
            done[connector.name] = actions
    return done


@app.task(name="workers.supervisor.reap_spark_runs")
def reap_spark_runs() -> list[int]:
    """Spark runs whose worker stopped reporting (killed mid-run) end as failed instead of 'running' forever."""
    from web.sparkjobs.services import reap_stale

    return reap_stale()
