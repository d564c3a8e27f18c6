"""Redis leases against the real Redis: exclusive, renewable only by the holder, expire when not renewed."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from workers.leases import Lease, LeaseKeeper, holder, lease_key

pytestmark = pytest.mark.integration


@pytest.fixture
def client(stack):
    connection = redis.Redis.from_url(stack.redis_url)
    yield connection
    connection.close()


def test_only_one_holder_and_only_the_holder_renews_or_releases(client, unique_name):
    key = lease_key(unique_name, "rs0")
    first = Lease(client, key, "worker-a", ttl_ms=2000)
    second = Lease(client, key, "worker-b", ttl_ms=2000)
    assert first.acquire()
    assert not second.acquire()
    assert holder(client, key) == "worker-a"
    assert not second.renew() and not second.release()
    assert first.renew()
    assert first.release()
    assert second.acquire() and holder(client, key) == "worker-b"
    second.release()


def test_an_unrenewed_lease_expires_and_the_keeper_reports_loss(client, unique_name):
    key = lease_key(unique_name, "rs0")
    lease = Lease(client, key, "worker-a", ttl_ms=300)
    assert lease.acquire()
    time.sleep(0.5)
    assert holder(client, key) is None
    taken = Lease(client, key, "worker-b", ttl_ms=5000)
    assert taken.acquire()
    lost = threading.Event()
    LeaseKeeper(lease, lost.set).start()
    assert lost.wait(2), "the keeper must notice that the lease moved"
    taken.release()


def test_keeper_keeps_a_lease_alive(client, unique_name):
    key = lease_key(unique_name, "rs0")
    lease = Lease(client, key, "worker-a", ttl_ms=1500)
    renewals = []
    renew = lease.renew
    lease.renew = lambda: renewals.append(time.monotonic()) or renew()
    assert lease.acquire()
    acquired = time.monotonic()
    lost = threading.Event()
    keeper = LeaseKeeper(lease, lost.set)
    keeper.start()
    # gated on the renewals themselves, not on a sleep: alive well past its TTL because the keeper renewed it
    deadline = acquired + 60
    while len(renewals) < 5 or renewals[-1] - acquired < 2 * 1.5:
        assert time.monotonic() < deadline and not lost.is_set()
        time.sleep(0.05)
    assert holder(client, key) == "worker-a" and not lost.is_set()
    keeper.stop()
    lease.release()
