"""Celery tasks. Task names are explicit and start with `workers.`; the prefix picks the queue
(cdcplatform/celery.py: workers.streaming.*, workers.snapshot.*, workers.spark.*, else `default`)."""

from __future__ import annotations

from cdcplatform.celery import app


@app.task(name="workers.ping", bind=True)
def ping(self, payload):
    """Echo `payload` with the name of the worker that ran it: the broker round-trip check."""
    return {"payload": payload, "worker": self.request.hostname}


# Collected here so `autodiscover_tasks(["workers"])` registers every task module.
from workers import loggers, snapshots, spark, streaming, supervisor, verify  # noqa: E402, F401
