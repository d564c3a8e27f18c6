"""Launching, cancelling and reaping Spark runs: the one place the API, the pages and the supervisor change runs.

A launch stores a `JobRun` (queued) and, once the transaction commits, sends the Celery task
`workers.spark.run_job` to the `spark` queue. Cancelling a queued run ends it at once; a running one gets
`cancel_requested_at`, which the task polls every second (it then signals the driver, docs/spark.md
"Cancelling"). A run whose worker stopped reporting (killed, machine gone) is marked failed by `reap_stale`,
which the supervisor calls on a schedule.
"""

from __future__ import annotations

import logging
import shutil
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from web.connectors import audit
from web.sparkjobs.arguments import job_dir, masked, output_root, run_arguments
from web.sparkjobs.models import ACTIVE, JobDefinition, JobRun, RunStatus

log = logging.getLogger(__name__)
TASK = "workers.spark.run_job"


class SparkServiceError(Exception):
    status_code = 409


def snapshot(definition: JobDefinition) -> dict:
    """A definition as the audit log keeps it (secret-looking Kafka options masked)."""
    return {"template": definition.template, "mode": definition.mode, "topics": list(definition.topics or []),
            "arguments": masked(definition.arguments or {}), "script": definition.script,
            "description": definition.description}


def record(user, source: str, action: str, name: str, before=None, after=None) -> None:
    audit.record(user, source, f"spark.{action}", f"spark-job:{name}", before=before, after=after)


def dispatch(run_id: int) -> None:
    from cdcplatform.celery import app

    app.send_task(TASK, args=[run_id], queue="spark")


def launch(definition: JobDefinition, user, source: str = "api", *, template: str | None = None,
           mode: str | None = None, arguments: dict | None = None) -> JobRun:
    """A run of the job; ``template``/``mode``/``arguments`` for a run of another template under it (a query of a
    Delta sync's tables), whose arguments the caller built."""
    with transaction.atomic():
        run = JobRun.objects.create(definition=definition, template=template or definition.template,
                                    mode=mode or definition.mode, script=definition.script if template is None else "",
                                    restricted=definition.restricted,
                                    requested_by=user if user and user.is_authenticated else None)
        run.arguments = run_arguments(definition, run.pk) if arguments is None else arguments
        run.save(update_fields=["arguments"])
        record(user, source, "run", definition.name,
               after={"run": run.pk, **({"template": template} if template else {})})
        transaction.on_commit(lambda: dispatch(run.pk))
    return run


def cancel(run: JobRun, user, source: str = "api") -> JobRun:
    with transaction.atomic():
        run = JobRun.objects.select_for_update().get(pk=run.pk)
        if run.finished:
            raise SparkServiceError(f"run {run.pk} has already ended ({run.status})")
        now = timezone.now()
        run.cancel_requested_at = run.cancel_requested_at or now
        run.cancel_requested_by = user if user and user.is_authenticated else None
        fields = ["cancel_requested_at", "cancel_requested_by"]
        if run.status == RunStatus.QUEUED:  # the task, when it comes, finds it ended and does nothing
            run.status, run.finished_at, run.error = RunStatus.CANCELLED, now, "cancelled before it started"
            fields += ["status", "finished_at", "error"]
        run.save(update_fields=fields)
        record(user, source, "cancel", run.definition.name, after={"run": run.pk})
    return run


def delete_definition(definition: JobDefinition, user, source: str = "api", delete_output: bool = False) -> None:
    """Deletes the job and its runs; with `delete_output`, also its folder under SPARK_OUTPUT_ROOT (every run's
    output and checkpoints), once the database change is committed."""
    if definition.runs.filter(status__in=ACTIVE).exists():
        raise SparkServiceError(f"job {definition.name} has a queued or running run: cancel it first")
    name = definition.name
    with transaction.atomic():
        record(user, source, "delete", name, before=snapshot(definition),
               after={"output": "deleted"} if delete_output else None)
        definition.delete()
        if delete_output:
            transaction.on_commit(lambda: _remove_output(name))


def _remove_output(name: str) -> None:
    folder = job_dir(name)
    if folder.resolve().parent != output_root().resolve():
        raise SparkServiceError(f"refusing to delete {folder}: not a job folder under SPARK_OUTPUT_ROOT")
    shutil.rmtree(folder, ignore_errors=True)
    log.info("output of Spark job %s deleted (%s)", name, folder)


def save_definition(serializer, user, source: str) -> JobDefinition:
    """Saves a validated JobDefinitionSerializer (create or update) with its audit entry."""
    before = snapshot(serializer.instance) if serializer.instance is not None else None
    with transaction.atomic():
        extra = {"updated_by": user} if before is not None else {"created_by": user, "updated_by": user}
        saved = serializer.save(**extra)
        record(user, source, "update" if before is not None else "create", saved.name, before=before,
               after=snapshot(saved))
    return saved


def reap_stale(now=None) -> list[int]:
    """Marks failed every running run whose worker has not reported for SPARK_HEARTBEAT_TIMEOUT_SECONDS, and
    every run no worker started within SPARK_QUEUE_TIMEOUT_SECONDS."""
    now = now or timezone.now()
    return _reap_lost_workers(now) + _reap_never_started(now)


def _reap_never_started(now) -> list[int]:
    if settings.SPARK_QUEUE_TIMEOUT_SECONDS <= 0:
        return []
    limit = now - timedelta(seconds=settings.SPARK_QUEUE_TIMEOUT_SECONDS)
    stale = list(JobRun.objects.filter(status=RunStatus.QUEUED, created_at__lt=limit).values_list("pk", flat=True))
    reaped = []
    for pk in stale:  # the task, should it still arrive, finds the run ended and does nothing
        updated = JobRun.objects.filter(pk=pk, status=RunStatus.QUEUED).update(
            status=RunStatus.FAILED, finished_at=now, error_type="never_started",
            error=f"no worker started this run within {settings.SPARK_QUEUE_TIMEOUT_SECONDS:.0f} s of its launch: "
                  "check that a Celery worker consumes the 'spark' queue (celery -A cdcplatform worker -Q spark) "
                  "and launch it again",
        )
        if updated:
            log.warning("spark run %s: never started by a worker, marked failed", pk)
            reaped.append(pk)
    return reaped


def _reap_lost_workers(now) -> list[int]:
    limit = now - timedelta(seconds=settings.SPARK_HEARTBEAT_TIMEOUT_SECONDS)
    reaped = []
    for run in JobRun.objects.filter(status=RunStatus.RUNNING, heartbeat_at__lt=limit):
        updated = JobRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING, heartbeat_at__lt=limit).update(
            status=RunStatus.FAILED, finished_at=now, error_type="worker_lost",
            error=f"the worker running it ({run.worker or 'unknown'}) stopped reporting at "
                  f"{run.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC: it was killed or lost its database; the run "
                  "was marked failed by the supervisor",
        )
        if updated:
            log.warning("spark run %s: worker %s lost, marked failed", run.pk, run.worker)
            reaped.append(run.pk)
    return reaped
