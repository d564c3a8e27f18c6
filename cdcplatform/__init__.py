"""The Django project of the CDC platform. Loads the Celery app so `@app.task` / `shared_task` bind to it."""

from cdcplatform.celery import app as celery_app

__all__ = ("celery_app",)
