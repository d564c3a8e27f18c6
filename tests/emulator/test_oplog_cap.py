"""The capped oplog: what a cap keeps, and what an append at the cap costs."""

from __future__ import annotations

import pymongo
import pytest
from bson.timestamp import Timestamp
from pymongo.errors import OperationFailure


@pytest.fixture
def capped_client(fresh_rs):
    client = pymongo.MongoClient(fresh_rs.uri)
    yield client
    client.close()


def _cpu_per_insert(rs, coll, start: int, batches: int = 10, size: int = 1000) -> float:
    """The emulator's CPU seconds per document for `batches` insert_many calls of `size` documents."""
    before = rs.cpu_seconds()
    for b in range(batches):
        coll.insert_many([{"_id": start + b * size + i} for i in range(size)])
    return (rs.cpu_seconds() - before) / (batches * size)


def test_an_append_at_the_cap_costs_the_same_at_a_large_cap(fresh_rs, capped_client):
    """A full oplog drops its oldest entry on each append; done by deleting the list's head it moved every pointer
    of the oplog, so an insert at a cap of 200,000 entries cost several times one at 1,000."""
    coll = capped_client.t.c
    fresh_rs.set_oplog_limits(max_entries=1000)
    coll.insert_many([{"_id": -1 - i} for i in range(2000)])
    small = _cpu_per_insert(fresh_rs, coll, 0)
    fresh_rs.set_oplog_limits(max_entries=200_000)
    for start in range(100_000, 300_000, 10_000):
        coll.insert_many([{"_id": start + i} for i in range(10_000)])
    assert fresh_rs.status()["oplog_entries"] == 200_000
    large = _cpu_per_insert(fresh_rs, coll, 1_000_000)
    assert large < 2.5 * small, f"{large * 1e6:.1f} µs a document at a 200,000-entry cap, {small * 1e6:.1f} at 1,000"


def test_the_cap_keeps_exactly_the_newest_entries_across_many_trims(fresh_rs, capped_client):
    coll = capped_client.t.c
    with coll.watch() as stream:
        coll.insert_one({"_id": "first"})
        old_token = stream.try_next()["_id"]
    fresh_rs.set_oplog_limits(max_entries=50)
    for start in range(0, 5000, 500):
        coll.insert_many([{"_id": start + i} for i in range(500)])
    entries = list(capped_client.local["oplog.rs"].find({}, sort=[("$natural", 1)]))
    assert len(entries) == 50 and fresh_rs.status()["oplog_entries"] == 50
    assert [e["o"]["_id"] for e in entries] == list(range(4950, 5000))
    # a stream starts at the oldest entry kept, and not before it
    with coll.watch(start_at_operation_time=entries[0]["ts"]) as stream:
        assert stream.next()["documentKey"]["_id"] == 4950
    before_first = Timestamp(entries[0]["ts"].time, entries[0]["ts"].inc - 1) if entries[0]["ts"].inc > 1 else \
        Timestamp(entries[0]["ts"].time - 1, 0)
    for resume in ({"resume_after": old_token}, {"start_at_operation_time": before_first}):
        with pytest.raises(OperationFailure) as info:
            coll.watch(**resume)
        assert info.value.code == 286
