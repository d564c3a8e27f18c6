"""The one state model of a connector, rendered the same by the overview, the detail page, the REST API's status,
the activity log and (through its mapping) Kafka Connect's status.

Per partition (a replica set's pipeline): the connector's *desired* state (running / paused / stopped, set by people)
and the *observed* phase the worker last stored (snapshot / streaming / stopped / failed) with `since` (when it
entered that phase), `heartbeat_at` (its last report) and the last error with `last_error_at`. From them:

- the *live phase*: the observed phase, except that a running phase (snapshot, streaming) without a report for
  STALE_AFTER_SECONDS is `stale` (its worker is gone or hung). `failed` and `stopped` stay what they are: a failed
  pipeline that no longer reports is failed, not stale.
- the *current error*: the last error while it still applies (not once the pipeline runs again in a phase entered
  after it).
- the connector's *status*, one word from the desired state and the live phases (`connector_status`).
"""

from __future__ import annotations

import datetime
from typing import Any

from django.utils import timezone

from web.connectors.models import DesiredState, Phase, ReplicaSetState

STALE_AFTER_SECONDS = 15  # no report for this long: the pipeline's numbers are old (worker gone or stopped)
RUNNING_PHASES = (Phase.SNAPSHOT, Phase.STREAMING)


def is_stale(state: ReplicaSetState, now: datetime.datetime | None = None) -> bool:
    """No report for STALE_AFTER_SECONDS (whatever the phase: a stopped pipeline does not report either)."""
    now = now or timezone.now()
    return state.heartbeat_at is None or (now - state.heartbeat_at).total_seconds() > STALE_AFTER_SECONDS


def live_phase(state: ReplicaSetState, now: datetime.datetime | None = None) -> str:
    """The phase to show: the stored phase, except that a running phase without recent reports is `stale`."""
    if state.phase in RUNNING_PHASES and is_stale(state, now):
        return "stale"
    return state.phase


def current_error(state: ReplicaSetState) -> str:
    """The stored last error while it still applies: not once the pipeline runs again in a phase it entered after
    the error (a recovered connector shows no error; the activity log and the audit keep the history)."""
    if not state.last_error:
        return ""
    recovered = (state.phase in RUNNING_PHASES and state.last_error_at is not None
                 and state.since > state.last_error_at)
    return "" if recovered else state.last_error


def connector_status(desired: str, phases: list[str], running: bool | None = None) -> str:
    """One word for a connector: running, snapshot, starting, failed, paused, pausing, stopped, stopping, stale.

    `phases` are the live phases of its replica sets; `running` whether a pipeline holds a lease (None: unknown,
    then the phases decide). A failed replica set makes the connector failed even if another one is stale.
    """
    active = any(phase in RUNNING_PHASES for phase in phases)
    busy = active if running is None else running
    if desired == DesiredState.PAUSED:
        return "pausing" if busy else "paused"
    if desired == DesiredState.STOPPED:
        return "stopping" if busy else "stopped"
    if Phase.FAILED in phases:
        return "failed"
    if Phase.SNAPSHOT in phases:
        return "snapshot"
    if phases and all(phase == Phase.STREAMING for phase in phases):
        return "running"
    if "stale" in phases:
        return "stale"
    return "starting"


def partition(state: ReplicaSetState, desired: str, now: datetime.datetime | None = None) -> dict[str, Any]:
    """Desired vs observed of one replica set, with its timestamps: what every surface renders."""
    now = now or timezone.now()
    return {
        "replica_set": state.replica_set,
        "desired_state": desired,
        "phase": state.phase,
        "live_phase": live_phase(state, now),
        "since": state.since,
        "heartbeat_at": state.heartbeat_at,
        "stale": live_phase(state, now) == "stale",
        "worker": state.worker,
        "current_error": current_error(state),
        "last_error": state.last_error,
        "last_error_at": state.last_error_at,
    }
