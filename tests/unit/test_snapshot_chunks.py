"""Chunk bounds and queries across BSON type brackets, chunk tasks and snapshot progress through the offset record."""

from __future__ import annotations

import datetime
import json

import pytest
from bson import Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Timestamp

from connectors.kafka.offset_record import OffsetRecord
from connectors.mongodb.snapshots.bson_order import bracket, sort_key
from connectors.mongodb.snapshots.chunks import Chunk, chunks_of, range_query, with_filter
from connectors.mongodb.snapshots.executors import ChunkTask
from connectors.mongodb.snapshots.progress import CollectionProgress, SnapshotProgress


def test_sort_key_follows_the_server_order_across_and_within_brackets():
    # embedded documents compare element by element: value type first, then field name, then value
    ordered = [
        MinKey(), None, float("-inf"), -3, 0, Int64(1), 1.5, Decimal128("2"), 3, "", "A", "a", "ab", "é",
        {}, {"a": 1}, {"a": 1, "b": 0}, {"b": 0}, {"a": "x"}, Binary(b"z", 0), Binary(b"\x00\x00", 0),
        Binary(b"\x00\x00", 5), ObjectId("0" * 24), ObjectId("f" * 24), False, True,
        datetime.datetime(1960, 1, 1), datetime.datetime(2024, 1, 1), Timestamp(1, 5), Timestamp(2, 0), MaxKey(),
    ]
    assert sorted(ordered, key=sort_key) == ordered
    assert sort_key(1) == sort_key(Int64(1)) == sort_key(1.0) == sort_key(Decimal128("1"))
    assert bracket(True) != bracket(1)


def test_range_query_stays_inside_type_brackets():
    assert range_query(5, 10, False) == {"_id": {"$gte": 5, "$lt": 10}}
    assert range_query(2.5, Decimal128("9"), True) == {"_id": {"$gte": 2.5, "$lte": Decimal128("9")}}
    oid = ObjectId()
    assert range_query(7, oid, False) == {"$or": [
        {"_id": {"$gte": 7}},
        {"_id": {"$type": ["string", "symbol", "object", "array", "binData"]}},
        {"_id": {"$lt": oid}},
    ]}
    assert range_query("z", {"a": 1}, True) == {"$or": [{"_id": {"$gte": "z"}}, {"_id": {"$lte": {"a": 1}}}]}
    assert range_query(MinKey(), 3, False)["$or"][0] == {"_id": {"$type": "minKey"}}
    assert range_query(True, MaxKey(), True)["$or"][-1] == {"_id": {"$type": "maxKey"}}
    with pytest.raises(ValueError):
        range_query("a", 1, False)
    assert with_filter({"_id": 1}, {"x": 2}) == {"$and": [{"x": 2}, {"_id": 1}]}
    assert with_filter({"_id": 1}, None) == {"_id": 1}


def test_chunks_of_bounds():
    chunks = chunks_of("d.c", [1, 5, 9], 10)
    assert [(c.number, c.lower, c.upper, c.upper_inclusive) for c in chunks] == [(10, 1, 5, False), (11, 5, 9, True)]
    assert [c.label for c in chunks] == ["d.c#1/2", "d.c#2/2"]
    assert chunks_of("d.c", [4, 4], 0)[0].query() == {"_id": {"$gte": 4, "$lte": 4}}
    assert chunks_of("d.c", [], 0) == []


def test_chunk_task_round_trips_bson_bounds():
    chunk = Chunk("d.c", 2, 7, {"region": 3, "seq": Int64(9)}, Decimal128("1.5"), False, 9)
    task = ChunkTask("conn", "rs0", "sid", chunk, Timestamp(100, 3), {"status": "A"}, True)
    back = ChunkTask.from_json(task.to_json())
    assert back == task
    assert type(back.chunk.lower["seq"]) is Int64
    assert back.transactional_id == "conn.rs0.chunk-7"


def test_progress_round_trips_through_the_offset_record():
    oid = ObjectId()
    progress = SnapshotProgress(
        id="abc", resume_token={"_data": "82AA"}, cluster_time=Timestamp(5, 1), started_ms=123, planned=True,
        collections=[
            CollectionProgress("d.a", [oid, "k", {"x": 1}, datetime.datetime(2020, 1, 1)], [True, False, True], 7,
                               100, "splitVector"),
            CollectionProgress("d.empty", [], [], 0, 0, "empty"),
        ],
    )
    record = OffsetRecord("c", "rs0", snapshot=progress.to_json())
    loaded = OffsetRecord.from_kafka(record.key, record.to_value())
    back = SnapshotProgress.from_json(loaded.snapshot)
    assert back.planned and back.id == "abc" and back.cluster_time == Timestamp(5, 1)
    assert back.collections[0].bounds[0] == oid and back.collections[0].done == [True, False, True]
    assert [c.number for c in back.chunks()] == [0, 1, 2]
    assert back.final_chunk().index == 2 and back.chunks_done == 2 and back.chunk_count == 3
    back.mark_done(back.chunks()[1], 5)
    assert back.collections[0].rows == 12 and back.chunks_done == 3


def test_older_progress_layouts_start_a_new_snapshot():
    old = {"resume_token": {"_data": "82"}, "collections": ["d.a"], "index": 0, "last_id": 5}
    assert not SnapshotProgress.from_json(old).planned


def test_rows_per_chunk_bounds_a_chunk_in_bytes_too():
    from connectors.core.snapshot.chunks import rows_per_chunk

    assert rows_per_chunk(8192, 32 << 20, 300) == 8192  # small rows: the rows' bound
    assert rows_per_chunk(8192, 32 << 20, 1 << 20) == 32  # 1 MB rows
    assert rows_per_chunk(8192, 32 << 20, 64 << 20) == 1  # a row over the bound: one a chunk
    assert rows_per_chunk(8192, 0, 1 << 20) == 8192  # no bound in bytes
    assert rows_per_chunk(8192, 32 << 20, 0) == 8192  # size unknown


@pytest.mark.parametrize("count", [1, 2, 3, 7, 8, 9, 100])
@pytest.mark.parametrize("factor", [1, 2, 3, 8, 200])
def test_thinned_bounds_cover_every_key_once(count, factor):
    from connectors.core.snapshot.chunks import thinned

    bounds = list(range(0, 10 * count + 1, 10))  # `count` chunks of ten keys
    kept = thinned(bounds, factor)
    assert kept[0] == bounds[0] and kept[-1] == bounds[-1] and kept == sorted(set(kept))
    assert len(kept) - 1 == (count if factor <= 1 else -(-count // factor))
    seen = [key for chunk in chunks_of("d.c", kept, 0) for key in range(bounds[-1] + 1)
            if chunk.lower <= key < chunk.upper or (chunk.upper_inclusive and key == chunk.upper)]
    assert seen == list(range(bounds[-1] + 1))


def test_plan_bytes_is_the_bounds_json():
    from connectors.core.snapshot.chunks import plan_bytes

    assert plan_bytes([["1"], ["20"]]) == len('[["1"], ["20"]]')
    assert plan_bytes([ObjectId("0" * 24)]) == 28  # a value JSON does not know: its str, quoted


def test_reads_are_kept_grouped_and_read_back_from_either_form():
    read_a = {"lsn": 1234, "key": ["id"]}
    read_b = {"lsn": 5678, "key": ["id"], "order": "server"}
    reads = {0: read_a, 1: read_a, 2: read_a, 4: read_a, 5: read_b, 6: read_b, 9: read_a}
    collection = CollectionProgress("s.t", list(range(11)), [False] * 10, reads=reads)
    value = collection.to_json()
    assert value["reads"] == {"0-2,4,9": read_a, "5-6": read_b}
    assert CollectionProgress.from_json(value).reads == reads
    old_form = {**value, "reads": {str(index): read for index, read in reads.items()}}  # one key a chunk
    assert CollectionProgress.from_json(old_form).reads == reads
    many = CollectionProgress("s.t", list(range(30_001)), [False] * 30_000,
                              reads=dict.fromkeys(range(30_000), read_a))
    assert len(json.dumps(many.to_json()["reads"])) < 100  # one view's reads: one entry, not 30,000
