"""What a connector reading a sharded cluster through mongos reports about it (connectors.mongodb.shard_status):
each shard's primary as mongos sees it, a primary change counted as an election of that shard only, and the chunk
migrations logged since the pipeline started, on an emulated 2-shard cluster."""

from __future__ import annotations

import datetime

import pymongo
import pytest

from connectors import ConnectorError
from connectors.mongodb.shard_status import ShardStatus
from devstack.mongo.sharded_handle import start_sharded_cluster


@pytest.fixture(scope="module")
def sharded():
    handle = start_sharded_cluster(shards=2, members=3, election_timeout=0.3, stepdown_election_delay=0.05,
                                   noop_interval=0)
    yield handle
    handle.stop()


def test_primaries_elections_and_migrations_since_the_start(sharded):
    client = pymongo.MongoClient(sharded.uri, serverSelectionTimeoutMS=10000)
    client.admin.command("enableSharding", "st", primaryShard="shard0")
    client.admin.command("shardCollection", "st.docs", key={"k": 1})
    client.admin.command("split", "st.docs", middle={"k": 10})
    client.admin.command("moveChunk", "st.docs", find={"k": 20}, to="shard1")   # before the pipeline: not counted
    # the pipeline starts after it: the changelog's times are milliseconds, and "now" can fall in the same one
    [moved] = client.config.changelog.find({"what": "moveChunk.commit"})
    started = moved["time"].replace(tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=1)
    status = ShardStatus(started=max(started, datetime.datetime.now(datetime.UTC)))
    first = status.read(client)
    assert [s["name"] for s in first["shards"]] == ["shard0", "shard1"]
    for index, shard in enumerate(first["shards"]):
        assert shard["primary"] == sharded.shard(index).hosts[sharded.shard(index).primary_index()]
        assert shard["members"] == sharded.shard(index).hosts and shard["elections"] == 0
    assert first["migrations"] == 0

    client.admin.command("moveChunk", "st.docs", find={"k": 20}, to="shard0")
    new = sharded.shard(1).step_down(seconds=5)
    second = status.read(client)
    by_name = {s["name"]: s for s in second["shards"]}
    assert by_name["shard1"]["primary"] == sharded.shard(1).hosts[new]
    assert (by_name["shard0"]["elections"], by_name["shard1"]["elections"]) == (0, 1)
    assert second["migrations"] == 1
    assert [(m["ns"], m["to"]) for m in second["recent_migrations"]] == [("st.docs", "shard0")]
    assert status.read(client)["shards"][1]["elections"] == 1   # the same primary read again is no election
    client.close()


def test_a_refusal_is_a_sentence(sharded):
    replica_set = pymongo.MongoClient(sharded.shard(0).uri, serverSelectionTimeoutMS=10000)
    with pytest.raises(ConnectorError, match="reading the sharded cluster's shards and migrations through mongos"):
        ShardStatus().read(replica_set)
    replica_set.close()
