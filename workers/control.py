"""Control messages from the control plane to running pipelines, and which pipelines run right now.

`notify(name, command, payload)` publishes `{"command", "connector", "replica_set", "payload", "sent_at_ms"}` as
JSON on the Redis channel `cdc:control:<name>`; a running pipeline (workers.managed) listens there and acts within
a second (pause, stop, restart and delete stop it with a final offset commit; snapshot starts an incremental
snapshot). Publishing is fire-and-forget and never raises: the desired state in the database stays the truth, and
the supervisor reconciles anything a lost message missed.

`running_pipelines(name)` reads the Redis leases (workers.leases): a pipeline runs exactly while its lease is held.
A pipeline whose control listener runs renews `listener_key(name, replica_set)`; the supervisor revokes the lease of
one that holds a lease without it (deaf to every command), which stops it, and starts it again.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable

import redis

from workers.leases import current, holder, lease_key

log = logging.getLogger(__name__)

COMMANDS = ("pause", "resume", "stop", "restart", "delete", "snapshot", "start", "snapshot-stop", "snapshot-pause",
            "snapshot-resume", "log-level")
_clients: dict[str, redis.Redis] = {}
_lock = threading.Lock()


def control_channel(connector: str) -> str:
    return f"cdc:control:{connector}"


def lease_pattern(connector: str) -> str:
    return f"cdc:lease:{connector}:*"


def listener_key(connector: str, replica_set: str) -> str:
    """Renewed by a pipeline's control listener while it listens (workers.managed); the supervisor checks it."""
    return f"cdc:listening:{connector}:{replica_set}"


def redis_url() -> str:
    try:
        from django.conf import settings

        if settings.configured:
            return settings.REDIS_URL
    except ImportError:  # pragma: no cover - workers without Django
        pass
    from devstack import settings as devstack

    return os.environ.get("REDIS_URL") or devstack.redis_url()


def client() -> redis.Redis:
    url = redis_url()
    with _lock:
        if url not in _clients:
            _clients[url] = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        return _clients[url]


def notify(name: str, command: str, payload: dict | None = None, *, replica_set: str | None = None,
           on_sent: Callable[[int | None], None] | None = None) -> bool:
    """Tells the running pipelines of connector `name` to `command`. True when Redis took the message.

    `on_sent(receivers)` learns how many pipelines were listening (None: Redis did not take it), for the activity
    log; it must not raise (if it does, the error is logged)."""
    if command not in COMMANDS:
        raise ValueError(f"unknown control command {command!r}; use one of {', '.join(COMMANDS)}")
    message = {
        "command": command,
        "connector": name,
        "replica_set": replica_set,
        "payload": payload or {},
        "sent_at_ms": int(time.time() * 1000),
    }
    try:
        receivers = client().publish(control_channel(name), json.dumps(message, default=str))
    except redis.RedisError as error:
        log.warning("could not publish %s for connector %s: %s", command, name, error)
        _tell(on_sent, None)
        return False
    log.info("sent %s to connector %s (%d listening)", command, name, receivers)
    _tell(on_sent, receivers)
    return True


def _tell(on_sent: Callable[[int | None], None] | None, receivers: int | None) -> None:
    if on_sent is None:
        return
    try:
        on_sent(receivers)
    except Exception:  # noqa: BLE001 - recording that a message went out must never fail the sending
        log.exception("on_sent callback failed")


def running_pipelines(name: str) -> dict[str, str]:
    """{replica set: worker} of the pipelines of `name` holding a lease now; raises redis.RedisError."""
    found: dict[str, str] = {}
    prefix = f"cdc:lease:{name}:"
    redis_client = client()
    for key in redis_client.scan_iter(match=lease_pattern(name), count=100):
        key = key.decode() if isinstance(key, bytes) else key
        worker = holder(redis_client, key)
        if worker is not None:
            found[key[len(prefix):]] = worker
    return found


def current_lease(name: str, replica_set: str) -> str | None:
    """The value (`owner|token`) of the lease a pipeline of `name` holds on `replica_set` now, None when no pipeline
    runs it; raises redis.RedisError."""
    return current(client(), lease_key(name, replica_set))


def wait_until_stopped(name: str, timeout: float, interval: float = 0.1) -> bool:
    """Waits until no pipeline of `name` holds a lease; False when some still do after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if not running_pipelines(name):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
