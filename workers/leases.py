"""Redis leases: at most one worker runs a given pipeline at a time, and a dead worker's pipeline moves.

A lease is a Redis key holding its owner's token with a time to live. The holder renews it every ttl/3; only the
holder can renew or release it (compare-and-set in Lua). A worker killed with -9 stops renewing, the key expires,
and the supervisor starts the pipeline elsewhere; if the old worker was only frozen, the Kafka transactional id
fences it when the new one opens its producer, so it can never commit again.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import redis

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end
"""

DEFAULT_TTL_MS = 10_000


def lease_key(connector: str, replica_set: str) -> str:
    return f"cdc:lease:{connector}:{replica_set}"


@dataclass
class Lease:
    client: redis.Redis
    key: str
    owner: str
    ttl_ms: int = DEFAULT_TTL_MS
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def value(self) -> str:
        return f"{self.owner}|{self.token}"

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.value, nx=True, px=self.ttl_ms))

    def renew(self) -> bool:
        return bool(self.client.eval(_RENEW, 1, self.key, self.value, self.ttl_ms))

    def release(self) -> bool:
        return bool(self.client.eval(_RELEASE, 1, self.key, self.value))


def revoke(client: redis.Redis, key: str, value: str) -> bool:
    """Deletes the lease if it still holds `value` (the holder's `owner|token`): its keeper then finds it lost and
    stops the pipeline; a holder that does not stop is fenced by Kafka when the next one starts."""
    return bool(client.eval(_RELEASE, 1, key, value))


def current(client: redis.Redis, key: str) -> str | None:
    """The value (`owner|token`) of the lease held now, or None when it is free."""
    value = client.get(key)
    return None if value is None else value.decode()


def holder(client: redis.Redis, key: str) -> str | None:
    """The worker holding a lease, or None when it is free."""
    value = current(client, key)
    return None if value is None else value.split("|", 1)[0]


class LeaseKeeper(threading.Thread):
    """Renews a lease every ttl/3; calls `on_lost` once if renewal fails (expired or taken over)."""

    def __init__(self, lease: Lease, on_lost: Callable[[], None]):
        super().__init__(name=f"lease-{lease.key}", daemon=True)
        self.lease = lease
        self.on_lost = on_lost
        self.stopped = threading.Event()

    def run(self) -> None:
        interval = self.lease.ttl_ms / 3000
        while not self.stopped.wait(interval):
            try:
                renewed = self.lease.renew()
            except redis.RedisError:
                continue  # Redis briefly away: the lease may still be ours; the TTL decides
            if not renewed:
                self.on_lost()
                return

    def stop(self) -> None:
        self.stopped.set()
