"""A pipeline under a Redis lease: exclusive, stopped through Redis within a second, reporting once a second."""

from __future__ import annotations

import json
import threading
import time

import pymongo
import pytest
import redis

from connectors.mongodb.topology import discover
from tests.integration.pipeline_harness import connector_config, wait_for_events
from workers.managed import ManagedPipeline, control_channel

pytestmark = pytest.mark.integration


@pytest.fixture
def redis_client(stack):
    client = redis.Redis.from_url(stack.redis_url)
    yield client
    client.close()


def _managed(config, stack, redis_client, worker, reports):
    (replica_set,) = discover(config.mongo_client_options()).replica_sets
    return ManagedPipeline(config, replica_set, stack.kafka_bootstrap, redis_client, worker,
                           report=reports.append, lease_ttl_ms=3000)


def test_lease_exclusive_stop_via_redis_and_reports(stack, mongo_rs, redis_client, unique_name):
    name = "mp" + unique_name.replace("-", "")[-12:]
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="never")
    reports: list[dict] = []
    first = _managed(config, stack, redis_client, "worker-a", reports)
    outcome: dict = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("a", first.run()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not (getattr(first, "pipeline", None) and first.pipeline.metrics.connected):
        assert time.monotonic() < deadline and thread.is_alive(), outcome
        time.sleep(0.05)

    second = _managed(config, stack, redis_client, "worker-b", [])
    assert second.run().status == "busy"

    pymongo.MongoClient(mongo_rs.uri)[name].docs.insert_many([{"_id": i} for i in range(5)])
    wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.docs", 5)
    deadline = time.monotonic() + 30  # the next report (once a second) counts the five events
    while not (reports and reports[-1]["metrics"]["TotalNumberOfEventsSeen"] == 5):
        assert time.monotonic() < deadline and thread.is_alive(), reports[-1:]
        time.sleep(0.05)
    count = len(reports)
    while len(reports) == count:  # and reports keep coming
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.05)
    assert reports[-1]["metrics"]["TotalNumberOfEventsSeen"] == 5

    asked = time.monotonic()
    redis_client.publish(control_channel(name), json.dumps({"command": "pause"}))
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - asked < 1.5
    assert outcome["a"].status == "stopped" and outcome["a"].reason == "pause"
    assert reports[-1]["final"] is True
    # the lease is free again: another worker can take the pipeline over
    third = _managed(config, stack, redis_client, "worker-c", [])
    third.stop.set()
    assert third.run().status == "stopped"
