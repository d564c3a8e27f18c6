"""What the metrics WebSocket (consumers.MetricsConsumer) reads from the database: synchronous helpers."""

from __future__ import annotations

from django.db import close_old_connections
from django.utils import timezone

from web.accounts.roles import VIEWER, has_role
from web.connectors.models import Connector, ReplicaSetState
from web.dashboard import observed


def can_view(user) -> bool:
    try:
        return has_role(user, VIEWER)
    finally:
        close_old_connections()


def stored_states(connector: str | None = None) -> list[dict]:
    """Every stored worker report (of one connector), with the observed phase and staleness."""
    try:
        states = ReplicaSetState.objects.select_related("connector")
        if connector:
            states = states.filter(connector__name=connector)
        now = timezone.now()
        found = []
        for state in states:
            report = observed.report_of(state)
            found.append({**report, "connector": state.connector.name, "replica_set": state.replica_set,
                          "phase": observed.live_phase(state, now), "stale": observed.is_stale(state, now),
                          "last_error": observed.current_error(state)})
        return found
    finally:
        close_old_connections()


def connectors_summary(connector: str | None = None) -> dict[str, dict]:
    """{name: {desired_state, status, replica_sets: {rs: {phase, stale, last_error}}}}: small, compared each poll."""
    try:
        connectors = Connector.objects.prefetch_related("replica_sets")
        if connector:
            connectors = connectors.filter(name=connector)
        summary = {}
        for item in connectors:
            view = observed.connector_view(item)
            summary[item.name] = {
                "desired_state": item.desired_state,
                "status": view.status,
                "replica_sets": {rs.name: {"phase": rs.phase, "stale": rs.stale,
                                           "last_error": observed.current_error(rs.state)}
                                 for rs in view.replica_sets},
            }
        return summary
    finally:
        close_old_connections()
