"""Change streams through pymongo's watch(): every event kind, resuming, images, batches and limits."""

from __future__ import annotations

import time

import pytest
from bson.int64 import Int64
from bson.timestamp import Timestamp
from pymongo.errors import OperationFailure


def _drain(stream, n, timeout=5.0):
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        ev = stream.try_next()
        if ev is not None:
            out.append(ev)
    return out


def test_insert_update_replace_delete_events(coll):
    with coll.watch() as s:
        coll.insert_one({"_id": 1, "a": 1, "arr": [1, 2]})
        coll.update_one({"_id": 1}, {"$set": {"b": 2, "a": 5}, "$unset": {"gone": ""}, "$push": {"arr": 3}})
        coll.replace_one({"_id": 1}, {"x": 1})
        coll.delete_one({"_id": 1})
        ins, upd, rep, dele = _drain(s, 4)
    ns = {"db": coll.database.name, "coll": coll.name}
    assert list(ins) == ["_id", "operationType", "clusterTime", "wallTime", "fullDocument", "ns", "documentKey"]
    assert ins["operationType"] == "insert" and ins["fullDocument"] == {"_id": 1, "a": 1, "arr": [1, 2]}
    assert ins["ns"] == ns and ins["documentKey"] == {"_id": 1}
    assert list(upd) == ["_id", "operationType", "clusterTime", "wallTime", "ns", "documentKey", "updateDescription"]
    assert upd["updateDescription"] == {"updatedFields": {"a": 5, "b": 2, "arr.2": 3}, "removedFields": [],
                                        "truncatedArrays": []}
    assert rep["operationType"] == "replace" and rep["fullDocument"] == {"_id": 1, "x": 1}
    assert list(dele) == ["_id", "operationType", "clusterTime", "wallTime", "ns", "documentKey"]
    assert dele["documentKey"] == {"_id": 1}
    tokens = [e["_id"]["_data"] for e in (ins, upd, rep, dele)]
    assert tokens == sorted(tokens) and len(set(tokens)) == 4
    times = [e["clusterTime"] for e in (ins, upd, rep, dele)]
    assert times == sorted(times) and isinstance(times[0], Timestamp)


def test_update_description_shapes(coll):
    coll.insert_one({"_id": 1, "a": {"b": 1, "c": 2}, "arr": [1, 2, 3, 4], "n": 1})
    with coll.watch() as s:
        coll.update_one({"_id": 1}, {"$unset": {"a.b": 1}, "$set": {"new.deep": 1}})
        coll.update_one({"_id": 1}, {"$pop": {"arr": 1}})
        coll.update_one({"_id": 1}, [{"$set": {"arr": {"$slice": ["$arr", 1]}}}])
        coll.update_one({"_id": 1}, {"$set": {"arr.0": 9}})
        e1, e2, e3, e4 = _drain(s, 4)
    assert e1["updateDescription"] == {"updatedFields": {"new": {"deep": 1}}, "removedFields": ["a.b"],
                                       "truncatedArrays": []}
    assert e2["updateDescription"]["updatedFields"] == {"arr": [1, 2, 3]}
    assert e3["updateDescription"]["truncatedArrays"] == [{"field": "arr", "newSize": 1}]
    assert e4["updateDescription"]["updatedFields"] == {"arr.0": 9}


def test_noop_update_produces_no_event(coll):
    coll.insert_one({"_id": 1, "a": 1})
    with coll.watch() as s:
        coll.update_one({"_id": 1}, {"$set": {"a": 1}})
        coll.insert_one({"_id": 2})
        (ev,) = _drain(s, 1)
    assert ev["operationType"] == "insert"


def test_full_document_modes_and_pre_images(db):
    db.create_collection("img", changeStreamPreAndPostImages={"enabled": True})
    db.create_collection("plain")
    img, plain = db.img, db.plain
    img.insert_one({"_id": 1, "v": 1})
    plain.insert_one({"_id": 1, "v": 1})
    with img.watch(full_document="required", full_document_before_change="required") as s:
        img.update_one({"_id": 1}, {"$inc": {"v": 1}})
        img.delete_one({"_id": 1})
        upd, dele = _drain(s, 2)
    assert upd["fullDocument"] == {"_id": 1, "v": 2}
    assert upd["fullDocumentBeforeChange"] == {"_id": 1, "v": 1}
    assert dele["fullDocumentBeforeChange"] == {"_id": 1, "v": 2}
    with plain.watch(full_document="updateLookup", full_document_before_change="whenAvailable") as s:
        plain.update_one({"_id": 1}, {"$inc": {"v": 1}})
        (upd,) = _drain(s, 1)
    assert upd["fullDocument"] == {"_id": 1, "v": 2}
    assert upd["fullDocumentBeforeChange"] is None
    with plain.watch(full_document_before_change="required") as s:
        plain.update_one({"_id": 1}, {"$inc": {"v": 1}})
        with pytest.raises(OperationFailure) as info:
            _drain(s, 1)
    assert info.value.code == 47


def test_collmod_enables_pre_images(db):
    db.c.insert_one({"_id": 1, "v": 1})
    db.command("collMod", "c", changeStreamPreAndPostImages={"enabled": True})
    with db.c.watch(full_document_before_change="required") as s:
        db.c.replace_one({"_id": 1}, {"v": 2})
        (ev,) = _drain(s, 1)
    assert ev["fullDocumentBeforeChange"] == {"_id": 1, "v": 1}


def test_drop_and_rename_invalidate_collection_streams(db):
    db.a.insert_one({"x": 1})
    db.b.insert_one({"x": 1})
    with db.a.watch() as s:
        db.a.drop()
        drop, inv = _drain(s, 2)
        assert not s.alive
    assert drop["operationType"] == "drop" and drop["ns"] == {"db": db.name, "coll": "a"}
    assert inv["operationType"] == "invalidate" and list(inv) == ["_id", "operationType", "clusterTime", "wallTime"]
    assert inv["clusterTime"] == drop["clusterTime"]
    with db.b.watch() as s:
        db.b.rename("b2")
        ren, inv = _drain(s, 2)
    assert ren["operationType"] == "rename" and ren["to"] == {"db": db.name, "coll": "b2"}
    assert inv["operationType"] == "invalidate"
    # startAfter an invalidate starts a new stream after it; resumeAfter is refused
    with db.b.watch(start_after=inv["_id"]) as s2:
        db.b.insert_one({"after": True})
        events = _drain(s2, 1)
    assert [e["operationType"] for e in events] == ["insert"]
    with pytest.raises(OperationFailure) as info:
        db.b.watch(resume_after=inv["_id"])
    assert info.value.code == 260


def test_database_and_cluster_streams(client, db):
    with db.watch() as dbs, client.watch() as cs:
        db.x.insert_one({"_id": 1})
        db.y.insert_one({"_id": 2})
        client.admin.command("ping")
        client.drop_database(db.name)
        dev = _drain(dbs, 5)
        cev = _drain(cs, 5)
    assert [e["operationType"] for e in dev] == ["insert", "insert", "drop", "drop", "dropDatabase"] or \
        [e["operationType"] for e in dev][:2] == ["insert", "insert"]
    kinds = [e["operationType"] for e in dev]
    assert kinds.count("drop") == 2 and "dropDatabase" in kinds
    with db.watch() as again:
        pass
    del again
    assert [e["operationType"] for e in cev][:2] == ["insert", "insert"]
    assert cev[-1]["operationType"] == "dropDatabase" and cev[-1]["ns"] == {"db": db.name}


def test_db_stream_ends_with_invalidate_on_drop_database(client, db):
    db.x.insert_one({"_id": 1})
    with db.watch() as s:
        client.drop_database(db.name)
        evs = _drain(s, 3)
        assert [e["operationType"] for e in evs] == ["drop", "dropDatabase", "invalidate"]


def test_resume_after_and_start_at_operation_time(coll):
    with coll.watch() as s:
        coll.insert_many([{"_id": i} for i in range(5)])
        evs = _drain(s, 5)
    with coll.watch(resume_after=evs[1]["_id"]) as s:
        assert [e["documentKey"]["_id"] for e in _drain(s, 3)] == [2, 3, 4]
    with coll.watch(start_at_operation_time=evs[3]["clusterTime"]) as s:
        assert [e["documentKey"]["_id"] for e in _drain(s, 2)] == [3, 4]


def test_post_batch_resume_token_on_every_batch(client, db):
    other = db.other
    with db.watched.watch(max_await_time_ms=50) as s:
        assert s.try_next() is None
        first = s.resume_token
        assert first is not None
        other.insert_one({"x": 1})          # not visible to this stream, but moves its high-water mark
        assert s.try_next() is None
        assert s.resume_token["_data"] > first["_data"]
        reply = db.command("aggregate", "watched", pipeline=[{"$changeStream": {}}], cursor={})
    assert "postBatchResumeToken" in reply["cursor"]
    more = db.command("getMore", reply["cursor"]["id"], collection="watched", maxTimeMS=10)
    assert list(more["cursor"]) == ["nextBatch", "postBatchResumeToken", "id", "ns"]


def test_max_await_time_is_honoured(coll):
    with coll.watch(max_await_time_ms=300) as s:
        t0 = time.monotonic()
        assert s.try_next() is None
        assert 0.25 <= time.monotonic() - t0 < 2


def test_await_returns_as_soon_as_events_arrive(coll, rs):
    import threading

    with coll.watch(max_await_time_ms=5000) as s:
        threading.Timer(0.2, lambda: coll.insert_one({"late": 1})).start()
        t0 = time.monotonic()
        ev = s.next()
        assert ev["fullDocument"]["late"] == 1 and time.monotonic() - t0 < 2


def test_transactions_are_one_apply_ops_with_lsid(client, db):
    db.t.insert_one({"_id": 0})
    with db.t.watch() as s:
        with client.start_session() as session:
            with session.start_transaction():
                db.t.insert_one({"_id": 1}, session=session)
                db.t.update_one({"_id": 0}, {"$set": {"x": 1}}, session=session)
                db.t.delete_one({"_id": 1}, session=session)
            lsid = session.session_id
        evs = _drain(s, 3)
    assert [e["operationType"] for e in evs] == ["insert", "update", "delete"]
    assert len({e["clusterTime"] for e in evs}) == 1
    for e in evs:
        assert e["lsid"]["id"] == lsid["id"] and isinstance(e["txnNumber"], Int64)
        assert list(e)[:3] == ["txnNumber", "lsid", "_id"]
    entry = client.local["oplog.rs"].find_one({"o.applyOps": {"$exists": True}}, sort=[("$natural", -1)])
    assert entry["op"] == "c" and entry["ns"] == "admin.$cmd" and len(entry["o"]["applyOps"]) == 3
    assert entry["lsid"]["id"] == lsid["id"]


def test_expanded_events(db):
    with db.watch(show_expanded_events=True) as s:
        db.create_collection("e")
        db.e.create_index("k")
        db.command("collMod", "e", changeStreamPreAndPostImages={"enabled": True})
        db.e.drop_index("k_1")
        db.e.insert_one({"_id": 1})
        evs = _drain(s, 5)
    assert [e["operationType"] for e in evs] == ["create", "createIndexes", "modify", "dropIndexes", "insert"]
    assert all("collectionUUID" in e for e in evs)
    assert evs[1]["operationDescription"]["indexes"][0]["name"] == "k_1"
    assert evs[0]["operationDescription"]["idIndex"]["name"] == "_id_"


def test_match_and_project_after_change_stream(coll):
    with coll.watch([{"$match": {"operationType": "insert", "fullDocument.keep": True}},
                     {"$project": {"fullDocument": 1}}]) as s:
        coll.insert_many([{"keep": False}, {"keep": True, "n": 1}])
        coll.delete_many({})
        (ev,) = _drain(s, 1)
        assert s.try_next() is None
    assert set(ev) == {"_id", "fullDocument"} and ev["fullDocument"]["n"] == 1
    with coll.watch([{"$project": {"_id": 0}}]) as s:
        coll.insert_one({"x": 1})
        with pytest.raises(OperationFailure) as info:
            _drain(s, 1)
    assert info.value.code == 280


def test_history_lost_when_oplog_is_capped(fresh_rs):
    import pymongo

    client = pymongo.MongoClient(fresh_rs.uri)
    try:
        coll = client.t.c
        with coll.watch() as s:
            coll.insert_one({"_id": 0})
            token = _drain(s, 1)[0]["_id"]
        fresh_rs.set_oplog_limits(max_entries=10)
        coll.insert_many([{"_id": i} for i in range(1, 30)])
        with pytest.raises(OperationFailure) as info:
            coll.watch(resume_after=token)
        assert info.value.code == 286
        assert info.value.details["codeName"] == "ChangeStreamHistoryLost"
        with pytest.raises(OperationFailure) as info:
            coll.watch(start_at_operation_time=Timestamp(1, 1))
        assert info.value.code == 286
    finally:
        client.close()


def test_change_stream_over_many_events_in_batches(coll):
    with coll.watch(batch_size=100) as s:
        coll.insert_many([{"_id": i, "pad": "x" * 100} for i in range(1000)])
        got = _drain(s, 1000, timeout=20)
    assert [e["documentKey"]["_id"] for e in got] == list(range(1000))


def test_secondary_can_serve_change_streams(rs, coll):
    import pymongo

    secondary = next(i for i in range(3) if i != rs.primary_index())
    c = pymongo.MongoClient(rs.member_uri(secondary))
    try:
        with c[coll.database.name][coll.name].watch() as s:
            coll.insert_one({"on": "primary"})
            (ev,) = _drain(s, 1)
        assert ev["fullDocument"]["on"] == "primary"
    finally:
        c.close()


def test_update_lookups_are_not_built_ahead_of_the_getmore(rs, db):
    """The emulator builds a stream's next batch while the client reads the last one; an updateLookup update reads
    the document when its getMore asks for it, as mongod does, never when the batch before it was sent."""
    coll = db.c
    coll.insert_one({"_id": "x", "v": 0})
    with coll.watch(full_document="updateLookup", batch_size=2) as stream:
        coll.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])
        coll.update_one({"_id": "x"}, {"$set": {"v": 1}})
        assert [event["documentKey"]["_id"] for event in _drain(stream, 2)] == [1, 2]
        deadline = time.monotonic() + 10
        while not rs.change_streams_built_ahead():  # the next batch (insert 3 at least) is built ahead
            assert time.monotonic() < deadline, "the emulator built no batch ahead"
            time.sleep(0.01)
        coll.update_one({"_id": "x"}, {"$set": {"v": 2}})
        insert, update = _drain(stream, 2)
    assert insert["documentKey"] == {"_id": 3}
    assert update["operationType"] == "update" and update["fullDocument"] == {"_id": "x", "v": 2}


def test_update_lookup_streams_of_inserts_are_built_ahead(rs, db):
    """Inserts, deletes and replacements of an updateLookup stream are default-option events: built ahead too."""
    coll = db.c
    with coll.watch(full_document="updateLookup", batch_size=2) as stream:
        coll.insert_many([{"_id": n} for n in range(6)])
        assert len(_drain(stream, 2)) == 2
        deadline = time.monotonic() + 10
        while not rs.change_streams_built_ahead():
            assert time.monotonic() < deadline, "the emulator built no batch ahead"
            time.sleep(0.01)
        assert [event["fullDocument"] for event in _drain(stream, 4)] == [{"_id": n} for n in range(2, 6)]
