"""The Celery application (`celery -A cdcplatform worker`): queues, routes and acknowledgement policy.

Broker and result backend are REDIS_URL, read by Django settings (CELERY_BROKER_URL, CELERY_RESULT_BACKEND).

Queues (docs/architecture.md, "Workers"): `streaming` for the long pipeline tasks, `snapshot` for snapshot
chunks, `spark` for Spark runs, `default` for everything else. Tasks are routed by name prefix, so a task named
`workers.streaming.run_pipeline` lands on `streaming` without per-task configuration.

Acknowledgement: a pipeline task runs for days. With `acks_late` a worker killed mid-task would leave the message
unacknowledged and Redis would redeliver it after the visibility timeout, starting a duplicate pipeline beside
any survivor. So messages are acknowledged when a task starts (`task_acks_late=False`) and a crashed pipeline is
restarted by the supervisor when its Redis lease expires. `worker_prefetch_multiplier=1` keeps a busy worker from
holding messages other workers could run.
"""

from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcplatform.settings")

QUEUES = ("default", "streaming", "snapshot", "spark")

TASK_ROUTES = {
    "workers.streaming.*": {"queue": "streaming"},
    "workers.snapshot.*": {"queue": "snapshot"},
    "workers.spark.*": {"queue": "spark"},
}

# Keyword arguments of Celery() take precedence over the Django settings loaded below.
app = Celery(
    "cdcplatform",
    task_queues=[Queue(name, routing_key=name) for name in QUEUES],
    task_default_queue="default",
    task_default_routing_key="default",
    task_routes=TASK_ROUTES,
    task_acks_late=False,
    worker_prefetch_multiplier=1,
    worker_direct=True,  # each worker also consumes its own queue: the supervisor places pipelines (workers.placement)
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    result_expires=24 * 3600,
    task_track_started=True,
    broker_connection_retry_on_startup=True,
    timezone="UTC",
)
app.conf.beat_schedule = {
    "supervisor": {
        "task": "workers.supervisor.reconcile",
        "schedule": float(os.environ.get("CDC_SUPERVISOR_SECONDS", "3")),
    },
    "verify-nightly": {  # starts the nightly Verify runs whose hour it is (docs/verify.md)
        "task": "workers.verify.start_nightly",
        "schedule": float(os.environ.get("CDC_VERIFY_SCHEDULE_SECONDS", "600")),
    },
    "spark-runs": {
        "task": "workers.supervisor.reap_spark_runs",
        "schedule": float(os.environ.get("CDC_SPARK_REAP_SECONDS", "15")),
    },
}
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers"])  # imports workers.tasks; it imports the task modules it collects
