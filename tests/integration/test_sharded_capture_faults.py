"""Capture through mongos while the balancer runs, during the snapshot and the stream, with a shard primary killed
and the mongos restarted mid-stream: every write gives exactly one event, in write order, and a migration none.
The test's own emulated 2-shard cluster."""

from __future__ import annotations

import json
import threading
import time

import pymongo
import pytest
from pymongo.errors import PyMongoError

from devstack.mongo.sharded_handle import start_sharded_cluster
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import RunningConnector, connector_config, values, wait_for_events

pytestmark = pytest.mark.integration
SNAPSHOT_DOCS = 300
WRITES = 300


@pytest.fixture
def sharded():
    handle = start_sharded_cluster(shards=2, members=3, election_timeout=0.3, stepdown_election_delay=0.05,
                                   noop_interval=0.5)
    yield handle
    handle.stop()


def _write(coll, doc: dict) -> None:
    """Inserts `doc`, retrying while mongos restarts or a shard elects (a duplicate key is a retry that landed)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            coll.insert_one(doc)
            return
        except pymongo.errors.DuplicateKeyError:
            return
        except PyMongoError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_balancer_shard_primary_kill_and_mongos_restart(stack, sharded, unique_name):
    name = "shf" + unique_name.replace("-", "")[-12:]
    client = pymongo.MongoClient(sharded.uri, serverSelectionTimeoutMS=30000, retryWrites=True)
    client.admin.command("enableSharding", name, primaryShard="shard0")
    client.admin.command("shardCollection", f"{name}.docs", key={"k": 1})
    for point in range(25, 1000, 25):     # 40 chunks, all on shard0: the balancer has work for the whole test
        client.admin.command("split", f"{name}.docs", middle={"k": point})
    docs = client[name].docs
    docs.insert_many([{"_id": i, "k": (i * 7) % 1000} for i in range(SNAPSHOT_DOCS)])
    client.admin.command("balancerStart")

    config = connector_config(name, sharded.uri, database__include__list=name)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming(timeout=120)
    migrations_at_stream = sharded.migrations()

    faults_done = threading.Event()

    def faults():
        time.sleep(0.5)
        shard = sharded.shard(0)
        old = shard.primary_index()
        shard.kill_member(old)
        shard.wait_for_primary(timeout=30, not_index=old)
        time.sleep(0.5)
        sharded.restart_mongos()
        time.sleep(0.5)
        shard.restart_member(old)
        faults_done.set()

    thread = threading.Thread(target=faults, daemon=True)
    thread.start()
    for i in range(SNAPSHOT_DOCS, SNAPSHOT_DOCS + WRITES):
        _write(docs, {"_id": i, "k": (i * 7) % 1000})
        time.sleep(0.01)
    thread.join(90)
    assert faults_done.is_set()
    assert sharded.migrations() > migrations_at_stream, "the balancer moved no chunk while streaming"

    topic = f"{name}.{name}.docs"
    wait_for_events(stack.kafka_bootstrap, topic, SNAPSHOT_DOCS + WRITES, timeout=180)
    time.sleep(3)  # a migration's insert or delete, or a repeated change, would arrive now
    events = values(read_topic(stack.kafka_bootstrap, topic))
    running.finish()
    client.admin.command("balancerStop")

    ops = [e["op"] for e in events]
    assert len(events) == SNAPSHOT_DOCS + WRITES, {op: ops.count(op) for op in set(ops)}
    assert sorted(json.loads(e["after"])["_id"] for e in events if e["op"] == "r") == list(range(SNAPSHOT_DOCS))
    created = [json.loads(e["after"])["_id"] for e in events if e["op"] == "c"]
    assert created == list(range(SNAPSHOT_DOCS, SNAPSHOT_DOCS + WRITES))   # once each, in write order
    client.close()
