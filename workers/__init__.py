"""Celery tasks of the CDC platform: supervisor, pipeline runner, snapshot chunks, Spark runner, metrics."""
