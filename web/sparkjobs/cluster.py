"""Links from a run to its Spark master's web UI (standalone clusters: ``spark://host:port``).

The master's UI is ``SPARK_MASTER_UI_URL`` when set (``python -m devstack up spark`` prints it), else port 8080 of the
master's host, Spark's default. Local masters (``local[*]``) and Kubernetes have no such page.
"""

from __future__ import annotations

import os
from urllib.parse import quote, urlparse

from django.conf import settings


def master_ui_url(master: str | None) -> str | None:
    parsed = urlparse(master or "")
    if parsed.scheme != "spark" or not parsed.hostname:
        return None
    explicit = getattr(settings, "SPARK_MASTER_UI_URL", None) or os.environ.get("SPARK_MASTER_UI_URL")
    return explicit.rstrip("/") if explicit else f"http://{parsed.hostname}:8080"


def application_url(master: str | None, app_id: str | None) -> str | None:
    """The master's page of the application ``app_id``, or None when the run has none."""
    ui = master_ui_url(master)
    if ui is None or not app_id:
        return None
    return f"{ui}/app/?appId={quote(app_id)}"
