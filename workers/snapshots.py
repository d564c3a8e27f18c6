"""Initial-snapshot chunks as Celery tasks on the `snapshot` queue (docs/snapshots.md, "Chunks as Celery tasks").

The pipeline's snapshot coordinator (connectors.core.snapshot) hands chunks to a `PolledChunkExecutor` whose `send`
enqueues `workers.snapshot.read_chunk`. The task loads the connector's engine configuration (credentials
decrypted in memory, never logged) and runs its source's chunk task (workers/snapshot_sources.py: MongoDB,
PostgreSQL, MySQL/MariaDB): the chunk's events and its marker are committed in one transaction of the chunk's own
transactional id, so a duplicate attempt is fenced or finds the marker and writes nothing.

Messages are acknowledged when a task starts (cdcplatform/celery.py), so a worker killed mid-chunk leaves a task
that never reports back (its result stays STARTED or PENDING). The task therefore renews a Redis heartbeat while
it runs, and `CeleryChunkHandle.lost()` tells the executor when a started task stopped beating or a task never
started within CDC_SNAPSHOT_CHUNK_START_SECONDS; the coordinator then sends the chunk again.
"""

from __future__ import annotations

import logging
import socket
import threading
import time

import redis
from celery.result import AsyncResult
from celery.states import STARTED
from django.conf import settings
from django.db import close_old_connections

from cdcplatform.celery import app
from connectors.core.snapshot.executors import (
    ChunkExecutor,
    ChunkExecutorFactory,
    ChunkTaskFailed,
    PolledChunkExecutor,
    SnapshotContext,
    ThreadPoolChunkExecutor,
)
from workers import control
from workers.snapshot_sources import chunk_source, error_retriable, forget

log = logging.getLogger(__name__)

QUEUE = "snapshot"
LOST_AFTER_BEATS = 5  # a started task that missed this many heartbeats is taken for lost
INSPECT_TIMEOUT = 1.0


def heartbeat_key(task_id: str) -> str:
    return f"cdc:chunk-task:{task_id}"


# -- the task (on a snapshot worker) ----------------------------------------------------------------------------


class Heartbeat(threading.Thread):
    """Sets `key` every `interval` seconds with a TTL of LOST_AFTER_BEATS intervals until stopped: while the key
    exists, the task runs."""

    def __init__(self, client: redis.Redis, key: str, value: str, interval: float):
        super().__init__(name=f"heartbeat-{key}", daemon=True)
        self.client, self.key, self.value, self.interval = client, key, value, interval
        self._stopped = threading.Event()

    def run(self) -> None:
        ttl_ms = int(self.interval * LOST_AFTER_BEATS * 1000)
        while True:
            try:
                self.client.set(self.key, self.value, px=ttl_ms)
            except redis.RedisError as error:
                log.warning("chunk heartbeat not written: %s", error)
            if self._stopped.wait(self.interval):
                return

    def stop(self) -> None:
        """Stops beating and removes the key: the task is over (its result follows at once)."""
        self._stopped.set()
        self.join(self.interval + 1)
        try:
            self.client.delete(self.key)
        except redis.RedisError:
            pass  # it expires on its own


@app.task(name="workers.snapshot.read_chunk", bind=True)
def read_chunk(self, connector_name: str, replica_set: str, task_json: str) -> dict:
    """Reads and commits one chunk of the connector's partition (`replica_set`, the name it has always had in task
    messages); errors come back as {"failed", "error", "retriable"} for the coordinator."""
    worker = self.request.hostname or socket.gethostname()
    beat = Heartbeat(control.client(), heartbeat_key(self.request.id or "eager"), worker,
                     settings.CDC_SNAPSHOT_CHUNK_HEARTBEAT_SECONDS)
    beat.start()
    key, source = None, None
    try:
        key, source = chunk_source(connector_name, replica_set)
        value = source.run(task_json)
    except Exception as error:  # noqa: BLE001 - classified here, where the real exception type is known
        retriable = error_retriable(source, error)
        if retriable:
            forget(key)  # a connection problem: the next task opens new connections
        message = f"{type(error).__name__}: {error}"
        log.warning("snapshot chunk task of %s/%s failed on %s (%s): %s", connector_name, replica_set, worker,
                    "will be retried" if retriable else "fatal", message)
        return {"failed": True, "error": message, "retriable": retriable, "worker": worker}
    finally:
        beat.stop()
        close_old_connections()
    log.info("snapshot chunk of %s/%s: %d %s on %s%s", connector_name, replica_set, value["rows"], source.unit,
             worker, " (already committed)" if value["already_committed"] else "")
    return {**value, "worker": worker}


# -- the coordinator's side (in the pipeline's worker) ----------------------------------------------------------


class CeleryChunkHandle:
    """An AsyncResult of `read_chunk` that can also tell when its task was lost with its worker."""

    def __init__(self, result: AsyncResult, redis_client: redis.Redis, *, start_timeout: float, lost_after: float):
        self.result, self.redis = result, redis_client
        self.start_timeout, self.lost_after = start_timeout, lost_after
        self.sent = time.monotonic()
        self.last_sign: float | None = None  # when the task last showed it was alive

    def ready(self) -> bool:
        return self.result.ready()

    def get(self) -> dict:
        value = self.result.get(timeout=30, disable_sync_subtasks=False)  # ready: returns at once
        self.result.forget()  # the coordinator keeps what it needs; free the result backend now
        if value.get("failed"):
            raise ChunkTaskFailed(f"{value['error']} (on {value.get('worker')})", bool(value.get("retriable")))
        return value

    def lost(self) -> bool:
        now = time.monotonic()
        try:
            if self.redis.exists(heartbeat_key(self.result.id)):
                self.last_sign = now
                return False
            if self.last_sign is None and self.result.state == STARTED:
                self.last_sign = now  # started, first beat not seen yet
                return False
        except redis.RedisError:
            return False  # cannot tell now; ask again at the next poll
        if self.last_sign is None:
            gone = now - self.sent > self.start_timeout
        else:
            gone = now - self.last_sign > self.lost_after
        if gone:
            log.warning("snapshot chunk task %s lost (%s); sending the chunk again", self.result.id,
                        "never started" if self.last_sign is None else "no heartbeat")
            try:
                app.control.revoke(self.result.id)  # a late start of this message is then skipped
            except Exception as error:  # noqa: BLE001 - best effort: a duplicate is harmless anyway
                log.warning("could not revoke %s: %s", self.result.id, error)
        return gone


def snapshot_workers(own: str | None) -> list[str]:
    """Celery workers consuming the `snapshot` queue now. The pipeline's own worker counts only if it has a pool
    slot besides the one running the pipeline (else its chunk tasks would wait for it forever)."""
    try:
        replies = app.control.inspect(timeout=INSPECT_TIMEOUT).active_queues() or {}
    except Exception as error:  # noqa: BLE001 - broker trouble: read locally
        log.warning("could not ask which workers consume %r: %s", QUEUE, error)
        return []
    consumers = sorted(name for name, queues in replies.items()
                       if any(queue.get("name") == QUEUE for queue in queues or ()))
    if own in consumers:
        try:
            stats = app.control.inspect([own], timeout=INSPECT_TIMEOUT).stats() or {}
            slots = int(stats[own]["pool"]["max-concurrency"])
        except Exception:  # noqa: BLE001 - unknown: do not count on it
            slots = 1
        if slots < 2:
            consumers.remove(own)
    return consumers


def chunk_executor_factory(connector_name: str, worker: str | None) -> ChunkExecutorFactory:
    """Who reads a snapshot's chunks, decided when a snapshot starts (CDC_SNAPSHOT_DISPATCH):

    - `threads`: `snapshot.max.threads` threads of the pipeline's worker;
    - `celery`: tasks on the `snapshot` queue, `snapshot.max.threads` per worker consuming it in flight;
    - `auto` (default): `celery` when some worker consumes `snapshot` (asked with a 1 s inspect), else `threads`.
    """

    def factory(context: SnapshotContext) -> ChunkExecutor:
        mode = settings.CDC_SNAPSHOT_DISPATCH
        workers = snapshot_workers(worker) if mode != "threads" else []
        name = f"{connector_name}/{context.partition.name}"
        if mode == "threads" or (mode == "auto" and not workers):
            log.info("snapshot chunks of %s read by %d thread(s) of %s", name, context.config.snapshot_max_threads,
                     worker)
            return ThreadPoolChunkExecutor(context)
        capacity = context.config.snapshot_max_threads * max(1, len(workers))
        log.info("snapshot chunks of %s sent to the %r queue (%s), %d in flight", name, QUEUE,
                 ", ".join(workers) or "no worker seen yet", capacity)
        redis_client = control.client()
        heartbeat = settings.CDC_SNAPSHOT_CHUNK_HEARTBEAT_SECONDS

        def send(task_json: str) -> CeleryChunkHandle:
            result = read_chunk.apply_async(args=[connector_name, context.partition.name, task_json], queue=QUEUE)
            return CeleryChunkHandle(result, redis_client, start_timeout=settings.CDC_SNAPSHOT_CHUNK_START_SECONDS,
                                     lost_after=heartbeat * LOST_AFTER_BEATS)

        executor = PolledChunkExecutor(context, send, capacity, poll_interval=0.25)
        # MySQL/MariaDB hand tasks only the chunks their stream can filter (connectors/mysql/chunk_tasks.py)
        return context.adapt_remote(context, executor) if context.adapt_remote is not None else executor

    return factory
