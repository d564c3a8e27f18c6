"""Live metrics out of the workers: a Channels group for the dashboard's WebSockets, and an hour of history in
Redis for its charts (one sample per pipeline per second, trimmed to 3600)."""

from __future__ import annotations

import json
import logging
import time

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from workers import control

log = logging.getLogger(__name__)

METRICS_GROUP = "metrics"
HISTORY_SAMPLES = 3600


def history_key(connector: str, replica_set: str) -> str:
    return f"cdc:history:{connector}:{replica_set}"


def _history_sample(state: dict) -> dict:
    metrics = state["metrics"]
    return {
        "t": int(time.time() * 1000),
        "eps": metrics.get("EventsPerSecond"),
        "lag": metrics.get("MilliSecondsBehindSource"),
        "events": metrics.get("TotalNumberOfEventsSeen"),
    }


def publish_metrics(state: dict) -> None:
    """Never raises: a dashboard that cannot be reached must not slow the data path."""
    try:
        redis_client = control.client()
        key = history_key(state["connector"], state["replica_set"])
        pipe = redis_client.pipeline()
        pipe.rpush(key, json.dumps(_history_sample(state)))
        pipe.ltrim(key, -HISTORY_SAMPLES, -1)
        pipe.expire(key, 2 * 3600)
        pipe.execute()
    except Exception as error:  # noqa: BLE001
        log.debug("metrics history not stored: %s", error)
    try:
        layer = get_channel_layer()
        if layer is not None:
            async_to_sync(layer.group_send)(METRICS_GROUP, {"type": "metrics.update", "state": state})
    except Exception as error:  # noqa: BLE001
        log.debug("metrics not published: %s", error)


def history(connector: str, replica_set: str) -> list[dict]:
    raw = control.client().lrange(history_key(connector, replica_set), 0, -1)
    return [json.loads(item) for item in raw]
