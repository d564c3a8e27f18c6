"""A connector's activity log: one timeline, newest first, of what was asked of it and what its pipelines did, so a
person can see why a control action did or did not take effect without the worker's log file.

It joins what is already recorded: control and snapshot requests (who asked, through which surface, and how each
ended, with the pipeline's or the supervisor's reason), configuration changes and offset resets from the audit log,
phase changes and errors the workers report (`ActivityEntry`, written by `services.report_observed`), and a
pipeline that stopped reporting (stale since its last heartbeat).
"""

from __future__ import annotations

import datetime
from typing import Any

from django.utils import timezone

from web.connectors.models import (
    ActivityEntry,
    AuditEntry,
    Connector,
    ControlRequest,
    RequestStatus,
    SnapshotRequest,
    SnapshotStatus,
)
from web.connectors.state import RUNNING_PHASES, STALE_AFTER_SECONDS

KINDS = ("request", "sent", "outcome", "received", "state", "error", "config")


def _line(at, kind: str, text: str, replica_set: str = "", by: str = "", status: str = "") -> dict[str, Any]:
    return {"at": at, "kind": kind, "replica_set": replica_set, "text": text, "by": by, "status": status}


def _requests(connector: Connector, limit: int) -> list[dict[str, Any]]:
    lines = []
    for request in ControlRequest.objects.filter(connector=connector).select_related("requested_by")[:limit]:
        target = f" of {request.replica_set}" if request.replica_set else ""
        by = request.requested_by.username if request.requested_by else ""
        lines.append(_line(request.requested_at, "request", f"{request.command}{target} requested",
                           request.replica_set, by, RequestStatus.REQUESTED))
        if request.finished_at:
            lines.append(_line(request.finished_at, "outcome", f"{request.command} {request.status}: {request.reason}",
                               request.replica_set, status=request.status))
    for request in SnapshotRequest.objects.filter(connector=connector).select_related("requested_by")[:limit]:
        what = ", ".join(request.collections)
        by = request.requested_by.username if request.requested_by else ""
        lines.append(_line(request.requested_at, "request", f"snapshot of {what} requested", by=by,
                           status=SnapshotStatus.REQUESTED))
        if request.status == SnapshotStatus.RUNNING or (request.finished_at and request.updated_at
                                                         and request.updated_at < request.finished_at):
            lines.append(_line(request.updated_at, "received", f"snapshot of {what}: {request.reason}",
                               status=SnapshotStatus.RUNNING))
        if request.finished_at:
            lines.append(_line(request.finished_at, "outcome", f"snapshot {request.status}: {request.reason}",
                               status=request.status))
    return lines


def _audit(connector: Connector, limit: int) -> list[dict[str, Any]]:
    entries = AuditEntry.objects.filter(target=f"connector:{connector.name}").exclude(
        action__in=("connector.pause", "connector.resume", "connector.stop", "connector.restart",
                    "connector.snapshot"))[:limit]
    return [_line(entry.at, "config", f"{entry.action} ({entry.source})", by=entry.username) for entry in entries]


def _stale(connector: Connector, now: datetime.datetime) -> list[dict[str, Any]]:
    lines = []
    for state in connector.replica_sets.all():
        running = state.phase in RUNNING_PHASES
        if running and state.heartbeat_at and (now - state.heartbeat_at).total_seconds() > STALE_AFTER_SECONDS:
            at = state.heartbeat_at + datetime.timedelta(seconds=STALE_AFTER_SECONDS)
            lines.append(_line(at, "state", f"stale: no report from {state.worker or 'its worker'} for "
                                            f"{STALE_AFTER_SECONDS} s (last phase {state.phase})", state.replica_set))
    return lines


def timeline(connector: Connector, limit: int = 100) -> list[dict[str, Any]]:
    """The newest `limit` lines: {"at", "kind", "replica_set", "text", "by", "status"}, newest first."""
    now = timezone.now()
    lines = _requests(connector, limit) + _audit(connector, limit) + _stale(connector, now)
    lines += [_line(entry.at, entry.kind, entry.text, entry.replica_set, entry.worker)
              for entry in ActivityEntry.objects.filter(connector=connector)[:limit]]
    lines.sort(key=lambda line: line["at"], reverse=True)
    return lines[:limit]
