"""Which Celery workers serve the `streaming` queue now, for the supervisor's placement of pipelines.

Every worker consuming `streaming` keeps a Redis key `cdc:worker:<node name>` alive (TTL PRESENCE_TTL_MS, renewed
every third of it) from the moment it is ready until it shuts down. A worker killed with -9 stops renewing and
drops out of `live_workers` within PRESENCE_TTL_MS; one that shuts down cleanly deletes its key at once.

Each worker also consumes its own direct queue (Celery's `worker_direct`), so the supervisor can send a pipeline
task to the worker it chose.
"""

from __future__ import annotations

import logging
import threading

import redis
from celery.signals import worker_ready, worker_shutting_down

from workers import control

log = logging.getLogger(__name__)

PRESENCE_PREFIX = "cdc:worker:"
PRESENCE_TTL_MS = 8_000  # below the lease TTL (10 s): a dead worker is gone before its pipelines are placed again
STREAMING_QUEUE = "streaming"


def presence_key(worker: str) -> str:
    return f"{PRESENCE_PREFIX}{worker}"


def live_workers(client: redis.Redis) -> list[str]:
    """Node names of the workers serving `streaming` now, sorted; raises redis.RedisError."""
    names = []
    for key in client.scan_iter(match=f"{PRESENCE_PREFIX}*", count=100):
        key = key.decode() if isinstance(key, bytes) else key
        names.append(key[len(PRESENCE_PREFIX):])
    return sorted(names)


class PresenceKeeper(threading.Thread):
    """Keeps this worker's presence key alive until stop(), which deletes it."""

    def __init__(self, client: redis.Redis, worker: str, ttl_ms: int = PRESENCE_TTL_MS):
        super().__init__(name=f"presence-{worker}", daemon=True)
        self.client, self.worker, self.ttl_ms = client, worker, ttl_ms
        self.stopped = threading.Event()

    def run(self) -> None:
        while True:
            try:
                self.client.set(presence_key(self.worker), "1", px=self.ttl_ms)
            except redis.RedisError as error:
                log.warning("worker presence of %s not renewed: %s", self.worker, error)
            if self.stopped.wait(self.ttl_ms / 3000):
                return

    def stop(self) -> None:
        self.stopped.set()
        try:
            self.client.delete(presence_key(self.worker))
        except redis.RedisError as error:
            log.warning("worker presence of %s not removed (it expires): %s", self.worker, error)


_keepers: list[PresenceKeeper] = []


def _queue_names(consumer) -> set[str]:
    task_consumer = getattr(consumer, "task_consumer", None)
    return {queue.name for queue in getattr(task_consumer, "queues", [])}


@worker_ready.connect
def announce(sender=None, **kwargs) -> None:
    if STREAMING_QUEUE not in _queue_names(sender):
        return
    keeper = PresenceKeeper(control.client(), sender.hostname)
    keeper.start()
    _keepers.append(keeper)
    log.info("worker %s serves %s: announced to the supervisor", sender.hostname, STREAMING_QUEUE)


@worker_shutting_down.connect
def leave(**kwargs) -> None:
    while _keepers:
        _keepers.pop().stop()
