"""Starting Verify runs (docs/verify.md): one at a time per connector, audited, sent to the `snapshot` queue once the
run is stored; and the nightly schedule's choice of which connectors are due."""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from web.connectors import audit
from web.connectors.models import Connector
from web.connectors.services import ServiceError
from web.connectors.verify_models import VerifyRun, VerifySchedule, VerifyStatus

TASK = "workers.snapshot.verify"
ACTIVE = (VerifyStatus.QUEUED, VerifyStatus.RUNNING)


class VerifyBusy(ServiceError):
    status_code = 409


def stale_after() -> datetime.timedelta:
    """A run that showed no progress for this long lost its worker (tasks are not redelivered)."""
    return datetime.timedelta(seconds=getattr(settings, "CDC_VERIFY_STALE_SECONDS", 3600))


def end_lost_runs(connector: Connector) -> None:
    limit = timezone.now() - stale_after()
    for run in connector.verify_runs.filter(status__in=ACTIVE):
        last = run.started_at or run.requested_at
        seen = run.progress.get("at")
        if seen:
            last = max(last, datetime.datetime.fromtimestamp(seen, datetime.UTC))
        if last < limit:
            VerifyRun.objects.filter(pk=run.pk, status__in=ACTIVE).update(
                status=VerifyStatus.FAILED, finished_at=timezone.now(),
                error="The run showed no progress for a long time: its worker is gone. Start a new one.")


def request_verify(connector: Connector, *, user, source: str, trigger: str = "manual") -> VerifyRun:
    """Queues a Verify run of `connector`; VerifyBusy when one is already queued or running."""
    end_lost_runs(connector)
    with transaction.atomic():
        Connector.objects.select_for_update().filter(pk=connector.pk).first()  # one request at a time
        active = connector.verify_runs.filter(status__in=ACTIVE).first()
        if active is not None:
            raise VerifyBusy(f"Verify run #{active.pk} of {connector.name} is {active.status}; wait for it to end")
        run = VerifyRun.objects.create(connector=connector, trigger=trigger,
                                       requested_by=user if getattr(user, "is_authenticated", False) else None)
        audit.record(user, source, "connector.verify", f"connector:{connector.name}", None,
                     {"run": run.pk, "trigger": trigger})
        transaction.on_commit(lambda: send(run.pk))
    return run


def send(run_id: int) -> None:
    from cdcplatform.celery import app

    app.send_task(TASK, args=[run_id])


def set_schedule(connector: Connector, *, nightly: bool, hour: int, user, source: str) -> VerifySchedule:
    schedule, _ = VerifySchedule.objects.update_or_create(connector=connector,
                                                          defaults={"nightly": nightly, "hour": hour})
    audit.record(user, source, "connector.verify_schedule", f"connector:{connector.name}", None,
                 {"nightly": nightly, "hour": hour})
    return schedule


def start_nightly(now: datetime.datetime | None = None) -> list[VerifyRun]:
    """Starts the nightly run of every connector whose hour it is and that had no scheduled run in 20 hours."""
    now = now or timezone.now()
    started = []
    for schedule in VerifySchedule.objects.filter(nightly=True, hour=now.hour).select_related("connector"):
        connector = schedule.connector
        recent = connector.verify_runs.filter(trigger="schedule", requested_at__gte=now - datetime.timedelta(hours=20))
        if recent.exists():
            continue
        try:
            started.append(request_verify(connector, user=None, source="system", trigger="schedule"))
        except VerifyBusy:
            continue
    return started
