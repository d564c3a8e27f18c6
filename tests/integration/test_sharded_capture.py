"""A sharded cluster captured through mongos (mongodb.connection.mode=sharded, the default): a snapshot read through
mongos, then one change stream in cluster-time order while chunks migrate between shards. Every write gives exactly
one event; a migration gives none."""

from __future__ import annotations

import json
import threading
import time

import pymongo
import pytest

from connectors.mongodb.topology import partitions
from devstack.mongo.sharded_handle import start_sharded_cluster
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import RunningConnector, connector_config, values, wait_for_events

pytestmark = pytest.mark.integration
SPLITS = (100, 200, 300)


@pytest.fixture(scope="module")
def sharded():
    handle = start_sharded_cluster(shards=2, members=3, election_timeout=0.3, stepdown_election_delay=0.05,
                                   noop_interval=0.5)
    yield handle
    handle.stop()


def _name(unique_name: str) -> str:
    return "sh" + unique_name.replace("-", "")[-12:]


def _sharded_collection(client, db: str):
    """db.docs sharded on k in four chunks, two on each shard."""
    client.admin.command("enableSharding", db, primaryShard="shard0")
    client.admin.command("shardCollection", f"{db}.docs", key={"k": 1})
    for point in SPLITS:
        client.admin.command("split", f"{db}.docs", middle={"k": point})
    for point in (200, 300):
        client.admin.command("moveChunk", f"{db}.docs", find={"k": point}, to="shard1")


class ChunkMover(threading.Thread):
    """Moves the collection's chunks back and forth between the shards until stopped."""

    def __init__(self, cluster, ns: str):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.client = pymongo.MongoClient(cluster.uri)
        self.ns = ns
        self.stop = threading.Event()
        self.moves = 0

    def run(self):
        points = [0, *SPLITS]     # one key inside each chunk, in chunk order
        i = 0
        while not self.stop.is_set():
            point = points[i % len(points)]
            current = self.cluster.chunks(self.ns)[i % len(points)]["shard"]
            target = "shard1" if current == "shard0" else "shard0"
            self.client.admin.command("moveChunk", self.ns, find={"k": point}, to=target)
            self.moves += 1
            i += 1
            time.sleep(0.02)
        self.client.close()


def test_capture_through_mongos_while_chunks_migrate(stack, sharded, unique_name):
    name = _name(unique_name)
    client = pymongo.MongoClient(sharded.uri)
    _sharded_collection(client, name)
    docs = client[name].docs
    docs.insert_many([{"_id": i, "k": (i * 4) % 400} for i in range(100)])

    config = connector_config(name, sharded.uri, database__include__list=name)
    assert [(p.name, p.through_mongos) for p in partitions(config)] == [(name, True)]
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming(timeout=60)

    mover = ChunkMover(sharded, f"{name}.docs")
    mover.start()
    try:
        for i in range(100, 200):
            docs.insert_one({"_id": i, "k": (i * 4 + 1) % 400})
            if i % 2 == 0:
                docs.update_one({"_id": (i - 100) // 2}, {"$set": {"v": i}})  # ids 0..49, none deleted
            if i % 5 == 0:
                docs.delete_one({"_id": i - 50})
            time.sleep(0.005)
    finally:
        mover.stop.set()
        mover.join(30)
    assert mover.moves >= 5 and sharded.migrations() >= 5
    assert docs.count_documents({}) == 180 and docs.count_documents({"v": {"$exists": True}}) == 50

    topic = f"{name}.{name}.docs"
    expected = 100 + 100 + 50 + 20
    records = wait_for_events(stack.kafka_bootstrap, topic, expected, timeout=90)
    time.sleep(2)  # anything extra (a migration's insert or delete) would arrive now
    records = read_topic(stack.kafka_bootstrap, topic)
    running.finish()

    events = values(records)
    ops = [e["op"] for e in events]
    assert len(events) == expected, {op: ops.count(op) for op in set(ops)}
    assert ops.count("r") == 100 and ops.count("c") == 100 and ops.count("u") == 50 and ops.count("d") == 20
    created = [json.loads(e["after"])["_id"] for e in events if e["op"] == "c"]
    assert created == list(range(100, 200))      # in write order: one stream in cluster-time order
    deleted = [json.loads(r.key)["id"] for r, e in zip([r for r in records if r.value is not None], events,
                                                       strict=True) if e["op"] == "d"]
    assert deleted == [str(i - 50) for i in range(100, 200) if i % 5 == 0]

    offsets = read_topic(stack.kafka_bootstrap, config.offset_storage_topic)
    keys = {r.key for r in offsets if r.key and name in r.key.decode()}
    assert json.dumps([name, {"server_id": name}], separators=(",", ":")).encode() in keys


def test_replica_set_mode_reads_each_shard_directly(sharded):
    """mongodb.connection.mode=replica_set keeps the Debezium 2.x layout: one partition per shard's replica set."""
    config = connector_config("shmodes", sharded.uri, mongodb__connection__mode="replica_set")
    found = partitions(config)
    assert [(p.name, p.through_mongos) for p in found] == [("shard0", False), ("shard1", False)]
    assert all(p.client_options["replicaSet"] == p.name and len(p.hosts) == 3 for p in found)
