"""The Celery app's queues, routes by task-name prefix and early acknowledgement (docs/architecture.md, "Workers")."""

from __future__ import annotations

import pytest
from django.conf import settings

from cdcplatform.celery import QUEUES, app


@pytest.mark.parametrize(
    ("task_name", "queue"),
    [("workers.streaming.run_pipeline", "streaming"), ("workers.snapshot.read_chunk", "snapshot"),
     ("workers.spark.run_job", "spark"), ("workers.ping", "default"), ("workers.supervisor.tick", "default")],
)
def test_tasks_are_routed_by_name_prefix(task_name, queue):
    assert app.amqp.router.route({}, task_name)["queue"].name == queue


def test_queues_serialisation_and_acknowledgement():
    conf = app.conf
    assert {queue.name for queue in conf.task_queues} == set(QUEUES) == {"default", "streaming", "snapshot", "spark"}
    assert conf.task_default_queue == "default"
    assert conf.task_acks_late is False
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_serializer == conf.result_serializer == "json"
    assert conf.accept_content == ["json"]
    assert conf.broker_url == conf.result_backend == settings.REDIS_URL


def test_ping_task_is_registered():
    app.loader.import_default_modules()
    assert "workers.ping" in app.tasks
