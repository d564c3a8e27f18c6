"""The emulated sharded cluster through pymongo: mongos handshake, sharding administration, routed CRUD, chunk
migrations (`fromMigrate` in the oplog, no change event), merged change streams and their resume tokens, and
transactions across shards."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid

import pymongo
import pytest
from bson.int64 import Int64
from pymongo.read_concern import ReadConcern

from devstack.mongo.sharded_handle import start_sharded_cluster


@pytest.fixture(scope="module")
def cluster():
    handle = start_sharded_cluster(shards=2, members=3, election_timeout=0.3, stepdown_election_delay=0.05,
                                   noop_interval=0)
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def mongos(cluster):
    client = pymongo.MongoClient(cluster.uri, serverSelectionTimeoutMS=10000)
    yield client
    client.close()


@pytest.fixture
def ns(mongos):
    db = "s_" + uuid.uuid4().hex[:8]
    yield db
    mongos.drop_database(db)


def _shard_client(cluster, i):
    return pymongo.MongoClient(cluster.shard(i).uri, serverSelectionTimeoutMS=10000)


def _ranged(mongos, db, coll="c", split_at=50):
    """`db.coll` sharded on k, chunks [min, 50) on shard0 and [50, max) on shard1."""
    mongos.admin.command("enableSharding", db, primaryShard="shard0")
    mongos.admin.command("shardCollection", f"{db}.{coll}", key={"k": 1})
    mongos.admin.command("split", f"{db}.{coll}", middle={"k": split_at})
    mongos.admin.command("moveChunk", f"{db}.{coll}", find={"k": split_at}, to="shard1")


def _events(stream, n, timeout=10.0):
    out, deadline = [], time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        event = stream.try_next()
        if event is not None:
            out.append(event)
    return out


def test_mongos_handshake_is_a_router(cluster, mongos):
    hello = mongos.admin.command("hello")
    assert hello["msg"] == "isdbgrid"
    assert "setName" not in hello and "hosts" not in hello
    assert mongos.topology_description.topology_type_name == "Sharded"
    shards = mongos.admin.command("listShards")["shards"]
    assert [s["_id"] for s in shards] == ["shard0", "shard1"]
    assert shards[0]["host"].startswith("shard0/") and len(shards[0]["host"].split(",")) == 3
    assert [d["_id"] for d in mongos.config.shards.find()] == ["shard0", "shard1"]


def test_ranged_collection_routes_by_shard_key(cluster, mongos, ns):
    _ranged(mongos, ns)
    coll = mongos[ns].c
    coll.insert_many([{"_id": i, "k": i} for i in range(0, 100, 10)])
    on0 = sorted(d["k"] for d in _shard_client(cluster, 0)[ns].c.find())
    on1 = sorted(d["k"] for d in _shard_client(cluster, 1)[ns].c.find())
    assert on0 == [0, 10, 20, 30, 40] and on1 == [50, 60, 70, 80, 90]
    assert coll.count_documents({}) == 10
    assert [d["k"] for d in coll.find().sort("k", -1).limit(3)] == [90, 80, 70]
    assert coll.update_one({"k": 70}, {"$set": {"x": 1}}).modified_count == 1           # targeted
    assert coll.update_many({}, {"$inc": {"n": 1}}).modified_count == 10                 # broadcast
    assert coll.delete_many({"k": {"$lt": 20}}).deleted_count == 2
    assert coll.find_one_and_update({"k": 90}, {"$set": {"y": 2}}, return_document=True)["y"] == 2
    assert sorted(coll.distinct("k")) == [20, 30, 40, 50, 60, 70, 80, 90]
    assert list(coll.aggregate([{"$match": {"k": {"$gte": 50}}}, {"$count": "n"}])) == [{"n": 5}]
    chunks = list(mongos.config.chunks.find({"uuid": mongos.config.collections.find_one({"_id": f"{ns}.c"})["uuid"]}))
    assert sorted(c["shard"] for c in chunks) == ["shard0", "shard1"]


def test_hashed_collection_spreads_documents(cluster, mongos, ns):
    mongos.admin.command("enableSharding", ns)
    mongos.admin.command("shardCollection", f"{ns}.h", key={"_id": "hashed"})
    mongos[ns].h.insert_many([{"_id": i} for i in range(200)])
    counts = [_shard_client(cluster, i)[ns].h.count_documents({}) for i in range(2)]
    assert sum(counts) == 200 and min(counts) > 30
    assert mongos[ns].h.find_one({"_id": 123}) == {"_id": 123}
    assert mongos[ns].h.count_documents({}) == 200


def test_move_chunk_logs_from_migrate_and_emits_no_event(cluster, mongos, ns):
    _ranged(mongos, ns)
    coll = mongos[ns].c
    with coll.watch() as stream:
        coll.insert_many([{"_id": i, "k": i} for i in range(10)])
        moved = mongos.admin.command("moveChunk", f"{ns}.c", find={"k": 0}, to="shard1")
        assert moved["docsMoved"] == 10
        coll.insert_one({"_id": 100, "k": 5})
        events = _events(stream, 12, timeout=3)
    assert [e["operationType"] for e in events] == ["insert"] * 11
    assert [e["documentKey"]["_id"] for e in events] == list(range(10)) + [100]
    donor = _shard_client(cluster, 0).local["oplog.rs"]
    recipient = _shard_client(cluster, 1).local["oplog.rs"]
    assert donor.count_documents({"ns": f"{ns}.c", "op": "d", "fromMigrate": True}) == 10
    assert recipient.count_documents({"ns": f"{ns}.c", "op": "i", "fromMigrate": True}) == 10
    assert _shard_client(cluster, 0)[ns].c.count_documents({}) == 0
    assert coll.count_documents({}) == 11


def test_merged_stream_is_in_cluster_time_order_and_resumes_on_mongos(cluster, mongos, ns):
    _ranged(mongos, ns)
    coll = mongos[ns].c
    keys = [5, 55, 6, 56, 7, 57, 8, 58]
    with coll.watch() as stream:
        for k in keys:
            coll.insert_one({"_id": k, "k": k})
        events = _events(stream, len(keys))
    assert [e["documentKey"]["_id"] for e in events] == keys
    times = [e["clusterTime"] for e in events]
    assert times == sorted(times)
    with coll.watch(resume_after=events[3]["_id"]) as stream:
        rest = _events(stream, 4)
    assert [e["documentKey"]["_id"] for e in rest] == keys[4:]
    with coll.watch(start_after=events[6]["_id"]) as stream:
        assert [e["documentKey"]["_id"] for e in _events(stream, 1)] == keys[7:]


def test_post_batch_resume_token_advances_and_resumes(cluster, mongos, ns):
    _ranged(mongos, ns)
    db = mongos[ns]
    reply = db.command("aggregate", "c", pipeline=[{"$changeStream": {}}], cursor={})
    first = reply["cursor"]["postBatchResumeToken"]
    db.c.insert_one({"_id": 1, "k": 1})
    db.other.insert_one({"_id": 2})      # not in this stream: the token still moves past it
    more = db.command("getMore", reply["cursor"]["id"], collection="c", maxTimeMS=500)
    assert [e["documentKey"] for e in more["cursor"]["nextBatch"]] == [{"k": 1, "_id": 1}]
    db.other.insert_one({"_id": 3})
    idle = db.command("getMore", reply["cursor"]["id"], collection="c", maxTimeMS=200)
    assert idle["cursor"]["nextBatch"] == []
    pbrt = idle["cursor"]["postBatchResumeToken"]
    assert first["_data"] < more["cursor"]["postBatchResumeToken"]["_data"] < pbrt["_data"]
    db.c.insert_one({"_id": 60, "k": 60})
    with db.c.watch(resume_after=pbrt) as stream:
        assert [e["documentKey"]["_id"] for e in _events(stream, 1)] == [60]


def test_database_and_cluster_streams(cluster, mongos, ns):
    _ranged(mongos, ns)
    db = mongos[ns]
    with db.watch() as dbs, mongos.watch() as everything:
        db.c.insert_one({"_id": 1, "k": 1})
        db.c.insert_one({"_id": 2, "k": 99})
        db.plain.insert_one({"_id": 3})
        got_db = _events(dbs, 3)
        got_all = [e for e in _events(everything, 3) if e["ns"]["db"] == ns]
    assert [(e["ns"]["coll"], e["documentKey"]["_id"]) for e in got_db] == [("c", 1), ("c", 2), ("plain", 3)]
    assert [e["documentKey"]["_id"] for e in got_all] == [1, 2, 3]


def test_drop_through_mongos_emits_one_drop_and_invalidate(cluster, mongos, ns):
    _ranged(mongos, ns)
    coll = mongos[ns].c
    coll.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 70}])
    with coll.watch() as stream:
        coll.drop()
        events = _events(stream, 2, timeout=3)
        assert [e["operationType"] for e in events] == ["drop", "invalidate"]


def test_transaction_across_shards_is_atomic(cluster, mongos, ns):
    _ranged(mongos, ns)
    coll = mongos[ns].c
    coll.insert_many([{"_id": 1, "k": 1, "v": 0}, {"_id": 2, "k": 99, "v": 0}])
    seen_partial = []
    stop = threading.Event()

    def reader():
        observer = pymongo.MongoClient(cluster.uri)
        while not stop.is_set():
            values = {d["_id"]: d["v"] for d in observer[ns].c.find()}
            if len(set(values.values())) > 1:
                seen_partial.append(values)
        observer.close()

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(1, 21):
            with mongos.start_session() as session, session.start_transaction(read_concern=ReadConcern("snapshot")):
                coll.update_one({"k": 1}, {"$set": {"v": n}}, session=session)
                coll.update_one({"k": 99}, {"$set": {"v": n}}, session=session)
    finally:
        stop.set()
        thread.join()
    assert seen_partial == []
    assert {d["_id"]: d["v"] for d in coll.find()} == {1: 20, 2: 20}
    with mongos.start_session() as session:
        session.start_transaction()
        coll.insert_one({"_id": 3, "k": 3}, session=session)
        coll.insert_one({"_id": 4, "k": 77}, session=session)
        session.abort_transaction()
    assert coll.count_documents({"_id": {"$in": [3, 4]}}) == 0


def test_stream_survives_a_shard_step_down(cluster, mongos, ns):
    _ranged(mongos, ns)
    coll = mongos[ns].c
    with coll.watch() as stream:
        coll.insert_one({"_id": 1, "k": 1})
        cluster.shard(0).step_down(seconds=1)
        coll.insert_one({"_id": 2, "k": 2})
        coll.insert_one({"_id": 3, "k": 80})
        assert [e["documentKey"]["_id"] for e in _events(stream, 3)] == [1, 2, 3]


def test_balancer_moves_chunks_when_on(cluster, mongos, ns):
    mongos.admin.command("enableSharding", ns, primaryShard="shard0")
    mongos.admin.command("shardCollection", f"{ns}.b", key={"k": 1})
    for k in (10, 20, 30, 40):
        mongos.admin.command("split", f"{ns}.b", middle={"k": k})
    mongos[ns].b.insert_many([{"_id": i, "k": i} for i in range(50)])
    with mongos[ns].b.watch() as stream:
        mongos.admin.command("balancerStart")
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                shards = [c["shard"] for c in cluster.chunks(f"{ns}.b")]
                if abs(shards.count("shard0") - shards.count("shard1")) <= 1:
                    break
                time.sleep(0.1)
        finally:
            mongos.admin.command("balancerStop")
        assert abs(shards.count("shard0") - shards.count("shard1")) <= 1
        mongos[ns].b.insert_one({"_id": 99, "k": 99})
        assert [e["documentKey"]["_id"] for e in _events(stream, 2, timeout=3)] == [99]
    assert mongos[ns].b.count_documents({}) == 51


def test_document_key_carries_the_shard_key_as_mongod_logs_it(cluster, mongos, ns):
    _ranged(mongos, ns)
    coll = mongos[ns].c
    with coll.watch() as stream:
        coll.insert_one({"_id": "x", "k": Int64(60)})
        coll.update_one({"_id": "x"}, {"$set": {"v": 1}})
        coll.replace_one({"k": 60}, {"k": 60, "v": 2})
        coll.delete_one({"_id": "x"})
        events = _events(stream, 4)
    assert [list(e["documentKey"].items()) for e in events] == [[("k", 60), ("_id", "x")]] * 4
    oplog = _shard_client(cluster, 1).local["oplog.rs"]
    entry = oplog.find_one({"ns": f"{ns}.c", "op": "d"})
    assert list(entry["o"].items()) == [("k", 60), ("_id", "x")]
    mongos[ns].plain.insert_one({"_id": 1, "k": 1})       # unsharded: documentKey is _id alone
    assert _shard_client(cluster, 0).local["oplog.rs"].find_one({"ns": f"{ns}.plain"})["o2"] == {"_id": 1}


def test_cli_starts_a_sharded_cluster(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "devstack", "mongo", "--shards", "2", "--members", "3",
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        uri = proc.stdout.readline().strip()
        assert uri.startswith("mongodb://") and "replicaSet" not in uri
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=15000)
        assert client.admin.command("hello")["msg"] == "isdbgrid"
        assert len(client.admin.command("listShards")["shards"]) == 2
        client.close()
    finally:
        proc.terminate()
        proc.wait(30)


def test_conn_pool_stats_names_each_shards_primary_as_the_router_sees_it(cluster, mongos):
    """mongos' connPoolStats `replicaSets`: every member of every shard and the config server, the primary marked
    `ismaster`; after a step-down it names the new primary."""
    def primaries():
        sets = mongos.admin.command("connPoolStats")["replicaSets"]
        return {name: [h["addr"] for h in rs["hosts"] if h["ismaster"]] for name, rs in sets.items()}

    assert set(primaries()) == {cluster.config_server.name, *cluster.shard_names}
    sets = mongos.admin.command("connPoolStats")["replicaSets"]
    assert [h["addr"] for h in sets["shard0"]["hosts"]] == cluster.shard(0).hosts
    before = primaries()["shard0"]
    assert before == [cluster.shard(0).hosts[cluster.shard(0).primary_index()]]
    cluster.shard(0).step_down(seconds=1)
    after = cluster.shard(0).wait_for_primary(not_index=cluster.shard(0).hosts.index(before[0]))
    assert primaries()["shard0"] == [cluster.shard(0).hosts[after]]
