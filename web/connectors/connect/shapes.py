"""Kafka Connect's response bodies (ConnectorInfo, ConnectorStateInfo, offsets) built from our models.

Each replica set's pipeline plays the role of a Connect task: task ids are the replica sets in name order.
Config values are strings, as Connect returns them, with secrets masked.
"""

from __future__ import annotations

import json
from typing import Any

from connectors.config.types import DEBEZIUM_CONNECTOR_CLASS
from connectors.sources import DEBEZIUM_CLASSES
from web.connectors.definitions import masked_config
from web.connectors.models import Connector, DesiredState, Phase
from web.dashboard.observed import is_stale

CONNECTOR_TYPE = "source"


def as_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def config(connector: Connector) -> dict[str, str]:
    shown = {key: as_string(value) for key, value in masked_config(connector).items() if value is not None}
    shown.setdefault("connector.class", DEBEZIUM_CLASSES.get(connector.source, DEBEZIUM_CONNECTOR_CLASS))
    return shown


def replica_sets(connector: Connector) -> list:
    return sorted(connector.replica_sets.all(), key=lambda state: state.replica_set)


def info(connector: Connector) -> dict[str, Any]:
    tasks = [] if connector.desired_state == DesiredState.STOPPED else replica_sets(connector)
    return {
        "name": connector.name,
        "config": config(connector),
        "tasks": [{"connector": connector.name, "task": index} for index, _ in enumerate(tasks)],
        "type": CONNECTOR_TYPE,
    }


def still_running(state) -> bool:
    """The task's pipeline reported a running phase recently: it has not stopped (yet), whatever is desired."""
    return state.phase in (Phase.SNAPSHOT, Phase.STREAMING) and not is_stale(state)


def task_state(connector: Connector, state) -> str:
    """Observed, not desired: PAUSED only once the pipeline really stopped."""
    if state.phase == Phase.FAILED:
        return "FAILED"
    if still_running(state):
        return "RUNNING"
    if connector.desired_state == DesiredState.PAUSED:
        return "PAUSED"
    return "UNASSIGNED"


def task_status(connector: Connector, index: int, state, restarting: bool = False) -> dict[str, Any]:
    shown = {
        "id": index,
        "state": "RESTARTING" if restarting else task_state(connector, state),
        "worker_id": state.worker or "",
    }
    if state.phase == Phase.FAILED and state.last_error:
        shown["trace"] = state.last_error
    return shown


def status(connector: Connector, restarting: frozenset[str] = frozenset(),
           connector_restarting: bool = False) -> dict[str, Any]:
    states = replica_sets(connector)
    if connector.desired_state == DesiredState.STOPPED:
        state, tasks = "STOPPED", []
    else:
        tasks = [task_status(connector, i, s, s.replica_set in restarting) for i, s in enumerate(states)]
        if connector.desired_state == DesiredState.PAUSED and not any(still_running(s) for s in states):
            state = "PAUSED"
        elif any(s.phase in (Phase.SNAPSHOT, Phase.STREAMING, Phase.FAILED) for s in states):
            state = "RUNNING"
        else:
            state = "UNASSIGNED"
        if connector_restarting:
            state = "RESTARTING"
    workers = [s.worker for s in states if s.worker]
    return {
        "name": connector.name,
        "connector": {"state": state, "worker_id": workers[0] if workers else ""},
        "tasks": tasks,
        "type": CONNECTOR_TYPE,
    }


def invalid_config_message(problems) -> str:
    lines = [p.message if not p.property or p.property in p.message else f"{p.property}: {p.message}"
             for p in problems]
    return (
        f"Connector configuration is invalid and contains the following {len(lines)} error(s):\n"
        + "\n".join(lines)
        + "\nYou can also find the above list of errors at the endpoint "
        "`/connector-plugins/{connectorType}/config/validate`"
    )
