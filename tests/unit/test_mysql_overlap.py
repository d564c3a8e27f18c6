"""The stream's filter after a MySQL/MariaDB snapshot whose chunks were read in views of their own
(connectors/mysql/overlap.py): which changes a chunk read later holds (key ranges, positions across a binlog
rotation, GTIDs when the file is unknown), key changes split in halves, expiry, the offset record; where a chunk
was read kept by the core (progress JSON, chunk marker, a task's result)."""

from __future__ import annotations

import json

import pymysql
import pytest

from connectors import ConnectorError
from connectors.core.snapshot.chunks import Chunk
from connectors.core.snapshot.executors import ChunkResult, ChunkTask, result_from_json
from connectors.core.snapshot.markers import ChunkMarkers
from connectors.core.snapshot.progress import CollectionProgress
from connectors.core.snapshot.self_committing import result_json
from connectors.mysql.binlog import BinlogPosition, ColumnInfo, RowChange, TableSchema
from connectors.mysql.config import MySqlConfig
from connectors.mysql.overlap import ActiveOverlap, BinlogPlace, ReadPoint, SnapshotOverlap, overlap_of
from connectors.mysql.position import OVERLAP_FIELD, MySqlPosition, MySqlSnapshotProgress
from connectors.mysql.source import ServerPartition, ServerSource

SCHEMA = TableSchema("shop", "items", (ColumnInfo("id", 3, False, primary=True), ColumnInfo("v", 3, False)))
OTHER = TableSchema("shop", "other", SCHEMA.columns)
START = ReadPoint("bin.000009", 900, "0-1-10")


def change(op: str, before_id: int | None, after_id: int | None, file: str | None, pos: int,
           gtid: str | None = None, schema: TableSchema = SCHEMA) -> RowChange:
    before = {"id": before_id, "v": 1} if before_id is not None else None
    after = {"id": after_id, "v": 2} if after_id is not None else None
    return RowChange(op, schema, before, after, gtid, file or "", pos, 0, 1, 0, None, None,
                     BinlogPosition(file=file, pos=pos if file else None, gtids=None))


def progress() -> list[CollectionProgress]:
    """shop.items: chunks [1,100) read at bin.000010:500, [100,200) at the stream's start (nothing to drop),
    [200,300] at bin.000011:40 (after a rotation)."""
    items = CollectionProgress("shop.items", [[1], [100], [200], [300]], [True, True, True])
    items.reads = {0: {"file": "bin.000010", "pos": 500, "gtids": "0-1-20", "key": ["id"]},
                   1: {"file": "bin.000009", "pos": 900, "gtids": "0-1-10", "key": ["id"]},
                   2: {"file": "bin.000011", "pos": 40, "gtids": "0-1-30", "key": ["id"]}}
    return [items, CollectionProgress("shop.other", [[1], [50]], [True])]


def test_positions_order_across_a_rotation():
    assert BinlogPlace.of("bin.000009", 999_999) < BinlogPlace.of("bin.000010", 4)
    assert BinlogPlace.of("bin.000010", 4) < BinlogPlace.of("bin.000010", 5)
    with pytest.raises(ConnectorError):
        BinlogPlace.of("nonumber", 4)


def test_a_change_a_later_chunk_holds_is_dropped_and_every_other_passes():
    overlap = overlap_of(START, progress())
    assert set(overlap.tables) == {"shop.items"} and overlap.until == ReadPoint("bin.000011", 40, "0-1-30")
    assert len(overlap.tables["shop.items"].ranges) == 2  # the chunk read at the start needs no filter
    dropped = [change("u", 5, 5, "bin.000009", 950), change("u", 99, 99, "bin.000010", 499),
               change("d", 50, None, "bin.000010", 100), change("c", None, 60, "bin.000010", 100),
               change("u", 300, 300, "bin.000010", 9000), change("c", None, 250, "bin.000011", 39)]
    for c in dropped:
        assert overlap.apply(c) is None, c
    passing = [change("u", 5, 5, "bin.000010", 500),  # at P_k: after the chunk's view
               change("u", 100, 100, "bin.000009", 950),  # in the chunk read at the start
               change("u", 150, 150, "bin.000010", 100),
               change("u", 301, 301, "bin.000009", 950),  # beyond the last chunk (upper 300 included)
               change("c", None, 0, "bin.000009", 950),  # before the first
               change("u", 250, 250, "bin.000011", 40),
               change("u", 5, 5, "bin.000009", 950, schema=OTHER)]
    for c in passing:
        assert overlap.apply(c) is c, c


def test_a_key_change_keeps_the_half_no_chunk_holds():
    overlap = overlap_of(START, progress())
    moved_out = overlap.apply(change("u", 5, 150, "bin.000009", 950))  # old key in a later chunk, new one not
    assert moved_out.op == "c" and moved_out.before is None and moved_out.after["id"] == 150
    moved_in = overlap.apply(change("u", 150, 5, "bin.000009", 950))
    assert moved_in.op == "d" and moved_in.after is None and moved_in.before["id"] == 150
    assert overlap.apply(change("u", 5, 250, "bin.000009", 950)) is None


def test_without_a_binlog_file_the_gtid_places_the_change():
    overlap = overlap_of(START, progress())
    assert overlap.apply(change("u", 5, 5, None, 0, gtid="0-1-20")) is None  # in the view at 0-1-20
    kept = change("u", 5, 5, None, 0, gtid="0-1-21")
    assert overlap.apply(kept) is kept
    with pytest.raises(ConnectorError):
        overlap.apply(change("u", 5, 5, None, 0))


def test_the_filter_expires_once_the_stream_passes_the_last_chunk_and_survives_json():
    overlap = overlap_of(START, progress())
    assert SnapshotOverlap.from_json(overlap.to_json()) == overlap
    assert not overlap.passed("bin.000011", 39) and overlap.passed("bin.000011", 40)
    active = ActiveOverlap()
    active.current = overlap
    assert active.apply(change("u", 250, 250, "bin.000011", 39)) is None
    assert active.kept_at("bin.000011", 39) is overlap
    late = change("u", 250, 250, "bin.000011", 41)
    assert active.apply(late) is late
    assert active.kept_at("bin.000011", 39) is overlap, "an earlier offset still being committed keeps the filter"
    assert active.kept_at("bin.000011", 41) is None


def test_the_offset_record_keeps_the_filter_until_its_position_passes_it():
    snapshot = MySqlSnapshotProgress(collections=progress(),
                                     start_fields={"file": "bin.000009", "pos": 900, "gtids": "0-1-10"})
    position = snapshot.stream_position()
    assert position.overlap == overlap_of(START, progress())
    source = ServerSource(MySqlConfig(name="c", topic_prefix="c"), ServerPartition("c"))
    document = source.offset_record(position).document
    assert MySqlPosition.from_json(document).overlap == position.overlap
    source.overlap.current = position.overlap  # the stream opened there
    before = MySqlPosition(BinlogPosition("bin.000010", 7, "0-1-15"))
    after = MySqlPosition(BinlogPosition("bin.000011", 40, "0-1-30"))
    assert OVERLAP_FIELD in source.offset_record(before).document
    assert OVERLAP_FIELD not in source.offset_record(after).document
    assert MySqlPosition.from_json(source.offset_record(after).document).overlap is None


def test_no_chunk_read_later_means_no_filter():
    items = CollectionProgress("shop.items", [[1], [100]], [True])
    assert overlap_of(START, [items]) is None
    items.reads = {0: {"file": "bin.000009", "pos": 900, "gtids": "", "key": ["id"]}}
    assert overlap_of(START, [items]) is None


def test_where_chunks_were_read_survives_the_progress_json_and_rides_in_the_marker():
    items = progress()[0]
    assert CollectionProgress.from_json(json.loads(json.dumps(items.to_json()))) == items
    assert "reads" not in progress()[1].to_json()
    marker = ChunkMarkers("unused:9092", "c.offsets").message("c", "c", "s1", 3, 10, items.reads[0])
    assert json.loads(marker.value)["read"] == items.reads[0]
    task = ChunkTask("c", "c", "s1", Chunk("shop.items", 0, 3, [1], [100], False), 0)
    result = ChunkResult(task, 10, None, committed=True, read=items.reads[0])
    assert result_from_json(task, result_json(result)).read == items.reads[0]


def test_string_keys_are_compared_by_the_server_under_their_collation():
    """A resumed snapshot's chunks of a (VARCHAR, INT) key (order "server") are one range (next to each other, one
    view); the server is asked which range holds a key, once per key, each string under its column's collation."""
    codes = TableSchema("shop", "codes", (ColumnInfo("code", 15, False, charset="utf8", collation="utf8mb4_unicode_ci",
                                                     primary=True), ColumnInfo("n", 3, False, primary=True)))
    progress = CollectionProgress("shop.codes", [["a", 1], ["k", 1], ["p", 1], ["z", 9]], [True] * 3)
    later = {"file": "bin.000010", "pos": 500, "gtids": "0-1-20", "key": ["code", "n"], "order": "server"}
    progress.reads = {1: later, 2: later}
    overlap = overlap_of(START, [progress])
    assert overlap.server_ordered == {"shop.codes"}
    [held] = overlap.tables["shop.codes"].ranges
    assert (held.lower, held.upper, held.upper_inclusive) == (("k", 1), ("z", 9), True)
    assert SnapshotOverlap.from_json(json.loads(json.dumps(overlap.to_json()))) == overlap
    asked: list[tuple[str, list]] = []

    class Cursor:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def execute(self, query, params):
            asked.append((query, params))
            self.found = 1 if params[0] == "m" else 0

        def fetchone(self):
            return (self.found,)

    class Connection:
        def cursor(self):
            return Cursor()

        def close(self):
            pass

    def row_change(code: str) -> RowChange:
        row = {"code": code, "n": 1}
        return RowChange("u", codes, row, row, None, "bin.000010", 100, 0, 1, 0, None, None,
                         BinlogPosition(file="bin.000010", pos=100, gtids=None))

    active = ActiveOverlap(Connection)
    active.current = overlap
    assert active.apply(row_change("m")) is None and active.apply(row_change("m")) is None
    assert active.apply(row_change("b")) is not None
    assert len(asked) == 2, "a key's answer is kept"
    query, params = asked[0]
    assert query == ("SELECT CASE WHEN (CONVERT(%s USING utf8mb4) COLLATE utf8mb4_unicode_ci, %s) >= "
                     "(CONVERT(%s USING utf8mb4) COLLATE utf8mb4_unicode_ci, %s) AND "
                     "(CONVERT(%s USING utf8mb4) COLLATE utf8mb4_unicode_ci, %s) <= "
                     "(CONVERT(%s USING utf8mb4) COLLATE utf8mb4_unicode_ci, %s) THEN 1 ELSE 0 END")
    assert params == ["m", 1, "k", 1, "m", 1, "z", 9]
    unconnected = ActiveOverlap()
    unconnected.current = overlap
    assert unconnected.apply(row_change("m")) is not None, "without the server, the change passes"

    def failing(error: Exception):
        class Refusing(Connection):
            def cursor(self):
                raise error
        failing_overlap = ActiveOverlap(Refusing)
        failing_overlap.current = overlap
        return failing_overlap

    with pytest.raises(pymysql.err.OperationalError):
        failing(pymysql.err.OperationalError(2013, "Lost connection")).apply(row_change("m"))
    refused = pymysql.err.OperationalError(1273, "Unknown collation")
    assert failing(refused).apply(row_change("m")) is not None, "a refused query: the change passes"
