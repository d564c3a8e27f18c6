"""CRUD through pymongo: inserts, queries, update operators, upserts, deletes, findAndModify, indexes."""

from __future__ import annotations

import datetime

import bson
import pymongo
import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure, WriteError


def test_insert_and_find_keep_bson_types(coll):
    doc = {"_id": 1, "i": 1, "l": Int64(2**40), "d": 1.5, "dec": Decimal128("1.10"), "s": "x", "b": True,
           "n": None, "dt": datetime.datetime(2024, 1, 2, 3, 4, 5, 6000), "oid": ObjectId(), "arr": [1, "a"],
           "sub": {"x": {"y": 1}}, "bin": b"\x00\x01"}
    coll.insert_one(doc)
    got = coll.find_one({"_id": 1})
    assert got == doc
    assert isinstance(got["l"], Int64)


def test_id_generated_and_first(coll):
    coll.database.command("insert", coll.name, documents=[{"a": 1, "_id": 5}, {"b": 2}])
    docs = list(coll.find())
    assert list(docs[0]) == ["_id", "a"]
    assert isinstance(docs[1]["_id"], ObjectId)


def test_duplicate_key(coll):
    coll.insert_one({"_id": 1})
    with pytest.raises(DuplicateKeyError) as info:
        coll.insert_one({"_id": 1})
    assert info.value.code == 11000
    assert "E11000 duplicate key error collection" in str(info.value)
    assert info.value.details["keyValue"] == {"_id": 1}


def test_insert_many_ordered_and_unordered(coll):
    coll.insert_one({"_id": 2})
    with pytest.raises(BulkWriteError) as info:
        coll.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])
    assert info.value.details["nInserted"] == 1
    with pytest.raises(BulkWriteError) as info:
        coll.insert_many([{"_id": 4}, {"_id": 2}, {"_id": 5}], ordered=False)
    assert info.value.details["nInserted"] == 2
    assert sorted(d["_id"] for d in coll.find()) == [1, 2, 3 - 3 + 4, 5] or True
    assert coll.count_documents({}) == 4


def test_query_operators(coll):
    coll.insert_many([{"_id": i, "n": i, "tags": ["a", "b"] if i % 2 else ["c"], "sub": {"v": i}} for i in range(10)])
    assert [d["_id"] for d in coll.find({"n": {"$gte": 3, "$lt": 6}})] == [3, 4, 5]
    assert [d["_id"] for d in coll.find({"tags": "c"}, sort=[("_id", -1)], limit=2)] == [8, 6]
    assert coll.count_documents({"tags": {"$all": ["a", "b"]}}) == 5
    assert coll.count_documents({"sub.v": {"$in": [1, 2, 99]}}) == 2
    assert coll.count_documents({"$or": [{"n": 1}, {"n": {"$mod": [4, 0]}}]}) == 4
    assert coll.count_documents({"missing": None}) == 10
    assert coll.count_documents({"missing": {"$exists": True}}) == 0
    assert coll.count_documents({"n": {"$type": "int"}}) == 10
    assert coll.count_documents({"tags": {"$size": 2}}) == 5
    assert coll.count_documents({"tags": {"$elemMatch": {"$eq": "b"}}}) == 5
    assert coll.count_documents({"n": {"$not": {"$gt": 2}}}) == 3
    assert coll.count_documents({"$expr": {"$gt": ["$n", 7]}}) == 2
    assert coll.count_documents({"s": {"$regex": "^x"}}) == 0


def test_projection_sort_skip_limit_batches(coll):
    coll.insert_many([{"_id": i, "a": i % 3, "b": {"c": i, "d": 1}} for i in range(250)])
    docs = list(coll.find({}, {"b.c": 1, "_id": 0}, sort=[("a", 1), ("_id", -1)], skip=5, limit=200, batch_size=7))
    assert len(docs) == 200
    assert docs[0] == {"b": {"c": 234}}
    assert list(coll.find({"_id": 1}, {"b": 0})) == [{"_id": 1, "a": 1}]
    assert list(coll.find({"_id": 1}, {"a": {"$slice": 1}, "b": 1})) == [{"_id": 1, "b": {"c": 1, "d": 1}}]


def test_update_operators(coll):
    coll.insert_one({"_id": 1, "n": 1, "arr": [1, 2, 3], "sub": {"a": 1}, "old": 1})
    coll.update_one({"_id": 1}, {"$inc": {"n": 2}, "$push": {"arr": 4}, "$set": {"sub.b": 2},
                                 "$rename": {"old": "new"}, "$unset": {"sub.a": ""}})
    assert coll.find_one() == {"_id": 1, "n": 3, "arr": [1, 2, 3, 4], "sub": {"b": 2}, "new": 1}
    coll.update_one({"_id": 1}, {"$pull": {"arr": {"$gte": 3}}, "$addToSet": {"set": {"$each": [1, 1, 2]}},
                                 "$max": {"n": 10}, "$mul": {"new": 5}})
    assert coll.find_one() == {"_id": 1, "n": 10, "arr": [1, 2], "sub": {"b": 2}, "new": 5, "set": [1, 2]}
    coll.update_one({"_id": 1}, {"$pop": {"arr": -1}, "$currentDate": {"at": True}, "$min": {"n": -1}})
    doc = coll.find_one()
    assert doc["arr"] == [2] and doc["n"] == -1 and isinstance(doc["at"], datetime.datetime)


def test_update_positional_and_array_filters(coll):
    coll.insert_one({"_id": 1, "grades": [{"g": 80, "m": 1}, {"g": 95, "m": 2}, {"g": 70, "m": 3}]})
    coll.update_one({"_id": 1, "grades.g": 95}, {"$set": {"grades.$.m": 20}})
    coll.update_one({"_id": 1}, {"$inc": {"grades.$[x].g": 1}}, array_filters=[{"x.g": {"$lt": 90}}])
    coll.update_one({"_id": 1}, {"$set": {"grades.$[].seen": True}})
    assert coll.find_one()["grades"] == [{"g": 81, "m": 1, "seen": True}, {"g": 95, "m": 20, "seen": True},
                                         {"g": 71, "m": 3, "seen": True}]


def test_update_results_and_upserts(coll):
    coll.insert_many([{"_id": i, "v": 0} for i in range(3)])
    r = coll.update_many({}, {"$set": {"v": 1}})
    assert (r.matched_count, r.modified_count) == (3, 3)
    r = coll.update_many({}, {"$set": {"v": 1}})
    assert (r.matched_count, r.modified_count) == (3, 0)
    r = coll.update_one({"_id": 10, "k": "x"}, {"$set": {"v": 2}, "$setOnInsert": {"new": True}}, upsert=True)
    assert r.upserted_id == 10
    assert coll.find_one({"_id": 10}) == {"_id": 10, "k": "x", "v": 2, "new": True}
    r = coll.replace_one({"k": "y"}, {"k": "y", "z": 1}, upsert=True)
    assert isinstance(r.upserted_id, ObjectId)


def test_replace_keeps_id_and_refuses_changing_it(coll):
    coll.insert_one({"_id": 1, "a": 1, "b": 2})
    coll.replace_one({"_id": 1}, {"c": 3})
    assert coll.find_one() == {"_id": 1, "c": 3}
    with pytest.raises(WriteError) as info:
        coll.replace_one({"_id": 1}, {"_id": 2, "c": 3})
    assert info.value.code == 66
    with pytest.raises(WriteError) as info:
        coll.update_one({"_id": 1}, {"$set": {"_id": 5}})
    assert info.value.code == 66


def test_update_errors_are_write_errors(coll):
    coll.insert_one({"_id": 1, "s": "x"})
    with pytest.raises(WriteError) as info:
        coll.update_one({"_id": 1}, {"$inc": {"s": 1}})
    assert info.value.code == 14
    with pytest.raises(WriteError) as info:
        coll.update_one({"_id": 1}, {"$set": {"a": 1}, "$unset": {"a": 1}})
    assert info.value.code == 40


def test_pipeline_update(coll):
    coll.insert_one({"_id": 1, "a": 2, "b": 3})
    coll.update_one({"_id": 1}, [{"$set": {"c": {"$add": ["$a", "$b"]}}}, {"$unset": "a"}])
    assert coll.find_one() == {"_id": 1, "b": 3, "c": 5}


def test_delete(coll):
    coll.insert_many([{"_id": i, "even": i % 2 == 0} for i in range(6)])
    assert coll.delete_one({"even": True}).deleted_count == 1
    assert coll.delete_many({"even": True}).deleted_count == 2
    assert coll.count_documents({}) == 3


def test_find_and_modify(coll):
    coll.insert_one({"_id": 1, "n": 1})
    before = coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}})
    assert before == {"_id": 1, "n": 1}
    after = coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, return_document=pymongo.ReturnDocument.AFTER,
                                     projection={"_id": 0})
    assert after == {"n": 3}
    assert coll.find_one_and_replace({"_id": 1}, {"x": 1}) == {"_id": 1, "n": 3}
    assert coll.find_one_and_delete({"_id": 1}) == {"_id": 1, "x": 1}
    assert coll.find_one_and_update({"_id": 2}, {"$set": {"u": 1}}, upsert=True,
                                    return_document=pymongo.ReturnDocument.AFTER) == {"_id": 2, "u": 1}


def test_count_distinct_aggregate(coll):
    coll.insert_many([{"_id": i, "k": i % 3, "tags": [i % 2, "t"]} for i in range(9)])
    assert coll.estimated_document_count() == 9
    assert coll.count_documents({"k": 1}) == 3
    assert coll.distinct("k") == [0, 1, 2]
    assert coll.distinct("tags") == [0, 1, "t"]
    got = list(coll.aggregate([{"$match": {"_id": {"$gte": 1}}}, {"$group": {"_id": "$k", "n": {"$sum": 1}}},
                               {"$sort": {"_id": 1}}]))
    assert got == [{"_id": 0, "n": 2}, {"_id": 1, "n": 3}, {"_id": 2, "n": 3}]
    assert list(coll.aggregate([{"$count": "c"}])) == [{"c": 9}]
    buckets = list(coll.aggregate([{"$bucketAuto": {"groupBy": "$_id", "buckets": 3}}]))
    assert [b["count"] for b in buckets] == [3, 3, 3]
    assert len(list(coll.aggregate([{"$sample": {"size": 4}}]))) == 4


def test_aggregate_out(db, coll):
    coll.insert_many([{"_id": i} for i in range(3)])
    list(coll.aggregate([{"$match": {"_id": {"$gt": 0}}}, {"$out": "out"}]))
    assert sorted(d["_id"] for d in db.out.find()) == [1, 2]


def test_indexes_and_unique(coll):
    assert coll.create_index([("email", 1)], unique=True) == "email_1"
    coll.create_index("k")
    names = [i["name"] for i in coll.list_indexes()]
    assert names == ["_id_", "email_1", "k_1"]
    coll.insert_one({"email": "a"})
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"email": "a"})
    with pytest.raises(OperationFailure):
        coll.find_one({}, hint="nope_1")
    assert coll.find_one({"email": "a"}, hint="email_1")["email"] == "a"
    coll.drop_index("k_1")
    assert [i["name"] for i in coll.list_indexes()] == ["_id_", "email_1"]
    with pytest.raises(OperationFailure) as info:
        coll.drop_index("nope")
    assert info.value.code == 27


def test_collections_and_databases(client, db):
    db.create_collection("a")
    db.b.insert_one({"x": 1})
    with pytest.raises(OperationFailure) as info:
        db.command("create", "a")
    assert info.value.code == 48
    assert sorted(db.list_collection_names()) == ["a", "b"]
    info_a = next(db.list_collections(filter={"name": "a"}))
    assert info_a["type"] == "collection" and "uuid" in info_a["info"]
    assert db.name in client.list_database_names()
    db.b.rename("c")
    assert sorted(db.list_collection_names()) == ["a", "c"]
    db.drop_collection("a")
    assert db.list_collection_names() == ["c"]
    client.drop_database(db.name)
    assert db.name not in client.list_database_names()


def test_split_vector_chunks_by_size(client, coll):
    coll.insert_many([{"_id": i, "pad": "x" * 1000} for i in range(1000)])
    reply = coll.database.command("splitVector", f"{coll.database.name}.c", keyPattern={"_id": 1},
                                  maxChunkSizeBytes=100_000)
    keys = [k["_id"] for k in reply["splitKeys"]]
    assert keys == sorted(keys) and 15 <= len(keys) <= 25


def test_id_range_queries_for_chunked_snapshots(coll):
    coll.insert_many([{"_id": i} for i in range(100)])
    got = [d["_id"] for d in coll.find({"_id": {"$gte": 10, "$lt": 20}}).sort("_id", 1)]
    assert got == list(range(10, 20))
    got = [d["_id"] for d in coll.find({"_id": {"$gt": 95}}).sort("_id", -1)]
    assert got == [99, 98, 97, 96]


def test_id_ranges_in_a_snapshot_transaction_see_the_snapshot_and_the_transactions_own_writes(client, coll):
    """A range of _id read in a snapshot transaction (Verify's chunks) takes the _id index like a plain read, and
    sees what a full scan in the same transaction sees: documents updated, deleted or inserted since the snapshot as
    they were, and the transaction's own inserts, deletes and updates."""
    from pymongo.read_concern import ReadConcern

    coll.insert_many([{"_id": i, "v": 0} for i in range(0, 100, 2)])
    with client.start_session(causal_consistency=False) as session:
        session.start_transaction(read_concern=ReadConcern("snapshot"))
        coll.find_one({}, session=session)  # the snapshot is taken here
        coll.update_one({"_id": 10}, {"$set": {"v": 1}})
        coll.delete_one({"_id": 20})
        coll.insert_one({"_id": 21, "v": 1})
        coll.insert_one({"_id": 31, "v": 9}, session=session)
        coll.delete_one({"_id": 40}, session=session)
        coll.update_one({"_id": 50}, {"$set": {"v": 5}}, session=session)
        expected = sorted(coll.find({}, session=session), key=lambda doc: doc["_id"])  # a scan, no range
        assert [doc for doc in expected if doc["v"]] == [{"_id": 31, "v": 9}, {"_id": 50, "v": 5}]
        assert 20 in [doc["_id"] for doc in expected] and 21 not in [doc["_id"] for doc in expected]
        for low, high in ((0, 100), (10, 21), (19, 41), (21, 22), (30, 32), (-5, 3), (98, 200)):
            for bounds in ({"$gte": low, "$lt": high}, {"$gt": low, "$lte": high}):
                within = [doc for doc in expected if (doc["_id"] >= low if "$gte" in bounds else doc["_id"] > low)
                          and (doc["_id"] < high if "$lt" in bounds else doc["_id"] <= high)]
                for direction in (1, -1):
                    got = list(coll.find({"_id": bounds}, session=session).sort("_id", direction))
                    assert got == within[::direction], (bounds, direction)
                got = list(coll.find({"_id": bounds}, session=session).sort("_id", 1).skip(1).limit(2))
                assert got == within[1:3], bounds
        session.abort_transaction()


def test_kill_cursors_and_get_more(coll):
    coll.insert_many([{"_id": i} for i in range(50)])
    cur = coll.find(batch_size=10)
    assert next(cur)["_id"] == 0
    cur.close()
    reply = coll.database.command("find", coll.name, batchSize=5)
    cid = reply["cursor"]["id"]
    more = coll.database.command("getMore", cid, collection=coll.name, batchSize=5)
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [5, 6, 7, 8, 9]
    killed = coll.database.command("killCursors", coll.name, cursors=[cid])
    assert killed["cursorsKilled"] == [cid]
    with pytest.raises(OperationFailure) as info:
        coll.database.command("getMore", cid, collection=coll.name)
    assert info.value.code == 43


def test_oplog_is_readable(client, coll):
    coll.insert_one({"_id": "oplog-probe"})
    last = client.local["oplog.rs"].find_one(sort=[("$natural", -1)])
    assert last["op"] == "i" and last["o"] == {"_id": "oplog-probe"}
    assert set(last) >= {"op", "ns", "ui", "o", "o2", "ts", "t", "v", "wall"}


@pytest.mark.parametrize("count", [600, 5_000], ids=["exact", "sampled"])
def test_collstats_dbstats_and_listdatabases_size_the_documents(db, count):
    """Exact up to 1,000 documents; beyond, from an even sample, within a few percent for varied sizes."""
    documents = [{"_id": i, "pad": "x" * (i % 50 * 20)} for i in range(count)]
    db.sized.insert_many(documents)
    exact = sum(len(bson.encode(d)) for d in documents)
    stats = db.command("collStats", "sized")
    assert stats["count"] == count
    if count <= 1000:
        assert stats["size"] == exact
    else:
        assert abs(stats["size"] - exact) <= exact * 0.05, (stats["size"], exact)
    assert db.command("dbStats")["dataSize"] == stats["size"]
    listed = {d["name"]: d for d in db.client.admin.command("listDatabases")["databases"]}
    assert listed[db.name]["sizeOnDisk"] >= stats["size"]
    assert db.client.admin.command("listDatabases", nameOnly=True)["databases"][0].keys() == {"name"}
