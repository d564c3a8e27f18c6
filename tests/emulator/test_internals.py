"""Unit checks of the emulator's engines: query matching, update diffs, event encoding, tokens."""

from __future__ import annotations

import datetime
import random

import bson
import pytest
from bson.int64 import Int64
from bson.timestamp import Timestamp

from devstack.mongo import tokens
from devstack.mongo.bsonutil import MISSING, encode_in_order, hash_key, sort_key
from devstack.mongo.changestream import ChangeStreamCursor, StreamSpec, diff_to_description
from devstack.mongo.errors import CommandError
from devstack.mongo.oplog import Entry, Op
from devstack.mongo.query import compile_filter
from devstack.mongo.storage import Collection, new_uuid
from devstack.mongo.update import apply_operators, compute_diff


@pytest.mark.parametrize(("flt", "doc", "expected"), [
    ({"a": 1}, {"a": [1, 2]}, True),
    ({"a": None}, {}, True),
    ({"a": {"$gt": 1}}, {"a": "x"}, False),                 # type bracketing
    ({"a.b": 2}, {"a": [{"b": 1}, {"b": 2}]}, True),
    ({"a.1": 5}, {"a": [4, 5]}, True),
    ({"a": {"$gt": 1, "$lt": 3}}, {"a": [0, 5]}, True),     # each operator may match a different element
    ({"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}}, {"a": [0, 5]}, False),
    ({"a": {"$ne": 1}}, {"a": [1, 2]}, False),
    ({"a": {"$size": 2}}, {"a": [1, 2]}, True),
    ({"a": {"$type": "long"}}, {"a": Int64(1)}, True),
    ({"a": True}, {"a": 1}, False),                          # true is not 1
    ({"a": 1}, {"a": 1.0}, True),
    ({"a": {"b": 1, "c": 2}}, {"a": {"c": 2, "b": 1}}, False),   # documents compare in field order
])
def test_query_semantics(flt, doc, expected):
    assert compile_filter(flt)(doc) is expected


def test_sort_order_across_types():
    values = [{"a": 1}, "s", 2.5, None, True, [1], Timestamp(1, 1), datetime.datetime(2020, 1, 1), 1]
    ordered = sorted(values, key=sort_key)
    assert ordered[0] is None and ordered[1:3] == [1, 2.5] and ordered[3] == "s"
    assert isinstance(ordered[-1], Timestamp)


@pytest.mark.parametrize(("doc", "update", "diff", "description"), [
    ({"_id": 1, "a": 1}, {"$set": {"b": 2, "a": 5}},
     {"u": {"a": 5}, "i": {"b": 2}}, {"updatedFields": {"a": 5, "b": 2}, "removedFields": [], "truncatedArrays": []}),
    ({"_id": 1, "a": {"b": 1}}, {"$unset": {"a.b": 1}},
     {"sa": {"d": {"b": False}}}, {"updatedFields": {}, "removedFields": ["a.b"], "truncatedArrays": []}),
    ({"_id": 1, "arr": [1]}, {"$push": {"arr": {"$each": [2, 3]}}},
     {"sarr": {"a": True, "u1": 2, "u2": 3}},
     {"updatedFields": {"arr.1": 2, "arr.2": 3}, "removedFields": [], "truncatedArrays": []}),
    ({"_id": 1, "arr": [1, 2]}, {"$pop": {"arr": 1}},
     {"u": {"arr": [1]}}, {"updatedFields": {"arr": [1]}, "removedFields": [], "truncatedArrays": []}),
    ({"_id": 1}, {"$set": {"x.y.z": 1}},
     {"i": {"x": {"y": {"z": 1}}}}, {"updatedFields": {"x": {"y": {"z": 1}}}, "removedFields": [],
                                     "truncatedArrays": []}),
    ({"_id": 1, "old": 1}, {"$rename": {"old": "new"}},
     {"d": {"old": False}, "i": {"new": 1}},
     {"updatedFields": {"new": 1}, "removedFields": ["old"], "truncatedArrays": []}),
])
def test_update_diffs_and_descriptions(doc, update, diff, description):
    new, got = apply_operators(doc, update)
    assert got == diff
    assert diff_to_description(got, False) == description


def test_noop_update_has_no_diff_and_fields_are_created_in_sorted_order():
    assert apply_operators({"_id": 1, "a": 1}, {"$set": {"a": 1}})[1] is None
    new, _ = apply_operators({"_id": 1}, {"$set": {"z": 1, "b": 1}})
    assert list(new) == ["_id", "b", "z"]
    with pytest.raises(CommandError) as info:
        apply_operators({"_id": 1}, {"$set": {"a": 1}, "$inc": {"a.b": 1}})
    assert info.value.code == 40


def test_pipeline_diff_truncates_arrays():
    assert compute_diff({"_id": 1, "a": [1, 2, 3]}, {"_id": 1, "a": [1]}) == {"sa": {"a": True, "l": 1}}


def test_fast_event_encoding_matches_the_general_path():
    cur = ChangeStreamCursor.__new__(ChangeStreamCursor)
    cur.spec = StreamSpec({}, "db", "c")
    cur.stages = []
    for o, kind in (({"_id": 1, "a": 2}, "i"), ({"_id": "k", "n": {"q": [1, 2]}}, "i"), ({"_id": 7, "x": 1}, "u")):
        op = Op(kind, "db.c", new_uuid(), o=o, o2={"_id": o["_id"]})
        entry = Entry(Timestamp(100, 2), 1, datetime.datetime(2024, 1, 2, 3, 4, 5, 678000), op=op)
        token, fast = cur._fast_crud(entry, op, 0, False)
        slow = cur._crud_event(entry, op, 0, False)
        assert fast == encode_in_order(slow)
        assert token == slow["_id"]
        assert bson.decode(fast)["operationType"] == ("insert" if kind == "i" else "replace")


def test_tokens_order_like_events():
    a = tokens.make_event_token(Timestamp(10, 1))
    b = tokens.make_event_token(Timestamp(10, 1), txn_op_index=1)
    c = tokens.make_event_token(Timestamp(10, 1), txn_op_index=1, from_invalidate=True)
    hwm = tokens.make_hwm_token(Timestamp(10, 1))
    d = tokens.make_event_token(Timestamp(10, 2))
    assert hwm["_data"] < a["_data"] < b["_data"] < c["_data"] < d["_data"]
    assert tokens.decode_token(c).from_invalidate and tokens.decode_token(b).txn_op_index == 1


def _within(value, low, low_incl: bool, high, high_incl: bool) -> bool:
    key = sort_key(value)
    above = low is MISSING or (key >= sort_key(low) if low_incl else key > sort_key(low))
    below = high is MISSING or (key <= sort_key(high) if high_incl else key < sort_key(high))
    return above and below


def test_the_id_order_stays_right_through_inserts_in_and_out_of_order_deletes_and_stores():
    rng = random.Random(7)
    coll = Collection("db", "c")
    ids: set = set()
    next_id = 0
    for step in range(3000):
        action = rng.random()
        if action < 0.6:  # mostly in order, as ObjectIds and counters come
            next_id += rng.randrange(1, 4)
            new = next_id if rng.random() < 0.9 else rng.choice([rng.randrange(-50, next_id), f"s{rng.randrange(99)}"])
            if new in ids:
                continue
            doc = {"_id": new}
            if rng.random() < 0.8:
                coll.insert(doc)
            else:
                coll.store(hash_key(new), doc)
            ids.add(new)
        elif action < 0.7 and ids:
            gone = rng.choice(sorted(ids, key=sort_key))
            coll.delete(coll.get(gone))
            ids.discard(gone)
        else:
            expected = sorted(ids, key=sort_key)
            low = rng.choice([MISSING, *expected[:5], rng.randrange(-60, next_id + 5)])
            high = rng.choice([MISSING, rng.randrange(-60, next_id + 5), "s50"])
            low_incl, high_incl, reverse = rng.random() < 0.5, rng.random() < 0.5, rng.random() < 0.5
            skip, limit = rng.choice([0, 0, 1, 3]), rng.choice([0, 0, 1, 2, 10])
            wanted = [value for value in expected if _within(value, low, low_incl, high, high_incl)]
            if reverse:
                wanted.reverse()
            wanted = wanted[skip:skip + limit] if limit else wanted[skip:]
            got = coll.id_range(low, low_incl, high, high_incl, reverse=reverse, skip=skip, limit=limit)
            assert [doc["_id"] for doc in got] == wanted, step


def test_an_oplog_entry_takes_its_wall_time_and_its_cluster_time_from_one_clock_reading(monkeypatch):
    """Read apart, a second could begin between the two readings: the entry's wallTime (what a Debezium event's
    source.ts_ms carries) then named the second before its cluster time's, and Verify counted a change made after
    its view as covered by it."""
    from devstack.mongo import replset
    from devstack.mongo.config import EmulatorConfig

    rs = replset.ReplicaSet(EmulatorConfig(members=1), [27017])
    readings = iter([1_800_000_000.9999995, 1_800_000_001.0000001] * 2)
    monkeypatch.setattr(replset.time, "time", lambda: next(readings))
    entry = rs.log_noop("boundary")
    assert entry.wall_ms // 1000 == entry.ts.time
