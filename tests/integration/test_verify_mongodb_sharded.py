"""Verify on an emulated sharded MongoDB cluster (2 shards of 3 members, through mongos; docs/verify.md): a
connector reading through mongos is compared at one cluster time across the shards; one reading each shard directly
(mongodb.connection.mode=replica_set) is refused with a sentence."""

from __future__ import annotations

import pymongo
import pytest

from bench.write_load import DOCUMENT_OPS, Workload, mongo_writer
from connectors import ConnectorError
from connectors.core.verify import Verifier, VerifyOptions
from connectors.mongodb import verify as mongo_verify
from devstack.mongo.sharded_handle import start_sharded_cluster
from tests.integration.pipeline_harness import RunningConnector, connector_config, wait_for_events
from tests.verify_corruption import after_of, found, latest_event, produce, with_after
from tests.verify_workload import assert_no_false_alarm, verify_repeatedly

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def sharded():
    handle = start_sharded_cluster(shards=2, members=3, noop_interval=0.5)
    yield handle
    handle.stop()


def sharded_collection(client, db: str) -> None:
    """db.docs sharded on _id in two chunks, one on each shard."""
    client.admin.command("enableSharding", db, primaryShard="shard0")
    client.admin.command("shardCollection", f"{db}.docs", key={"_id": 1})
    client.admin.command("split", f"{db}.docs", middle={"_id": 200})
    client.admin.command("moveChunk", f"{db}.docs", find={"_id": 200}, to="shard1")


def test_verify_through_mongos_compares_every_shard_and_names_a_corrupted_key(stack, sharded, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "sv" + unique_name.replace("-", "")[-12:]
    client = pymongo.MongoClient(sharded.uri)
    sharded_collection(client, name)
    docs = client[name]["docs"]
    docs.insert_many([{"_id": n, "qty": n} for n in range(400)])
    config = connector_config(name, sharded.uri, **{"collection.include.list": f"{name}.docs"})
    topic = f"{name}.{name}.docs"
    running = RunningConnector(config, bootstrap).start()
    try:
        wait_for_events(bootstrap, topic, 400, timeout=120)
        docs.update_one({"_id": 10}, {"$set": {"qty": -1}})  # shard0
        docs.delete_one({"_id": 300})  # shard1
        wait_for_events(bootstrap, topic, 402, timeout=60)
        verify = Verifier(config, mongo_verify.partitions(config), bootstrap,
                          VerifyOptions(chunk_size=50, wait_seconds=60))
        clean = verify.run()
        _, value = latest_event(bootstrap, topic, {"id": "250"})
        produce(bootstrap, topic, {"id": "250"}, with_after(value, {**after_of(value), "qty": 2500}))
        corrupted = Verifier(config, mongo_verify.partitions(config), bootstrap,
                             VerifyOptions(chunk_size=50, wait_seconds=60)).run()
    finally:
        running.stop.set()
        running.thread.join(60)
        client.close()
    assert clean.mismatched == 0, clean.to_json()
    assert clean.rows == 399
    assert found(corrupted) == {'{"id":"250"}': "different"}, corrupted.to_json()


def test_a_connector_reading_each_shard_directly_is_refused_with_a_sentence(sharded):
    config = connector_config("svmodes", sharded.uri, mongodb__connection__mode="replica_set")
    with pytest.raises(ConnectorError, match="mongodb.connection.mode=replica_set.*sharded"):
        mongo_verify.partitions(config)


def test_a_write_workload_across_the_shards_raises_no_false_alarm(stack, sharded, unique_name):
    """Inserts, updates and deletes through mongos on both shards at 200 writes/s for 20 s while Verify runs again
    and again: no run reports a difference."""
    bootstrap = stack.kafka_bootstrap
    name = "sw" + unique_name.replace("-", "")[-12:]
    keys = 400
    client = pymongo.MongoClient(sharded.uri)
    sharded_collection(client, name)
    client[name]["docs"].insert_many([{"_id": n, "v": 0} for n in range(keys)])
    config = connector_config(name, sharded.uri, **{"collection.include.list": f"{name}.docs"})
    running = RunningConnector(config, bootstrap).start()

    def verify():
        return Verifier(config, mongo_verify.partitions(config), bootstrap,
                        VerifyOptions(chunk_size=100, wait_seconds=60)).run()

    try:
        wait_for_events(bootstrap, f"{name}.{name}.docs", keys, timeout=120)
        with Workload(mongo_writer(sharded.uri, name, "docs"), keys, per_second=200, ops=DOCUMENT_OPS) as load:
            reports = verify_repeatedly(verify, seconds=20)
    finally:
        running.stop.set()
        running.thread.join(60)
        client.close()
    assert_no_false_alarm(reports, load, min_rows=keys // 3)
