"""The stream's filter after a resumed PostgreSQL snapshot (connectors/postgres/overlap.py): which row changes the
chunks read in a temporary slot's export hold (integer key ranges, commit LSNs before that export's consistent
point), key changes split in halves, expiry, and the offset record that keeps it until the stream passes it."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest

from connectors.core.snapshot.progress import CollectionProgress
from connectors.postgres.config import PostgresConfig
from connectors.postgres.offsets import before, decode_offset
from connectors.postgres.overlap import SnapshotOverlap, StreamOverlap, overlap_of, tuple_key
from connectors.postgres.position import OVERLAP_FIELD, Position
from connectors.postgres.snapshot import PgSnapshotProgress
from connectors.postgres.source import Database, SlotSource

START = 1000  # the plan's consistent point: where the stream starts
VIEW = 5000  # the resumed snapshot's export's consistent point
COLUMNS = ["label", "id"]  # the key is the tuple's second column


def progress() -> list[CollectionProgress]:
    """public.big: chunks [1,100) and [100,200) read at the start (no read point), [200,300) read at the start
    (an entry at START: nothing to drop), [300,400] read in the resumed snapshot's export. Boundaries are texts, as
    the plan keeps them."""
    big = CollectionProgress("public.big", [["1"], ["100"], ["200"], ["300"], ["400"]], [True] * 4)
    big.reads = {2: {"lsn": START, "key": ["id"]}, 3: {"lsn": VIEW, "key": ["id"]}}
    return [big, CollectionProgress("public.other", [["1"], ["50"]], [True])]


def positions(key: tuple[str, ...]) -> list[int] | None:
    return [COLUMNS.index(k) for k in key] if all(k in COLUMNS for k in key) else None


def row(key: int | None) -> tuple | None:
    return None if key is None else ("x", str(key))


def passing(stream: StreamOverlap, op: str, old: int | None, new: int | None, commit_lsn: int,
            namespace: str = "public.big") -> str | None:
    return stream.passing_op(namespace, op, row(old if old is not None else new), row(new), commit_lsn, positions)


def active() -> StreamOverlap:
    stream = StreamOverlap()
    stream.current = overlap_of(START, progress())
    return stream


def test_only_chunks_read_after_the_start_are_kept_with_integer_bounds():
    overlap = overlap_of(START, progress())
    assert set(overlap.tables) == {"public.big"} and overlap.until == VIEW
    [held] = overlap.tables["public.big"].ranges
    assert (held.lower, held.upper, held.upper_inclusive, held.read) == ((300,), (400,), True, VIEW)
    assert SnapshotOverlap.from_json(overlap.to_json()) == overlap
    assert overlap_of(START, [CollectionProgress("public.big", [["1"], ["9"]], [True])]) is None


def test_a_change_the_later_chunk_holds_is_dropped_and_every_other_passes():
    stream = active()
    assert passing(stream, "u", 350, 350, VIEW - 8) is None
    assert passing(stream, "d", 400, None, START) is None, "the last chunk's upper bound is inclusive"
    assert passing(stream, "c", None, 300, VIEW - 8) is None
    assert passing(stream, "u", 150, 150, VIEW - 8) == "u", "a chunk read at the start holds none of it"
    assert passing(stream, "c", None, 401, VIEW - 8) == "c", "past the plan"
    assert passing(stream, "u", 350, 350, VIEW) == "u", "committed at the export's point: not in it"
    assert passing(stream, "u", 350, 350, VIEW - 8, "public.other") == "u"


def test_a_key_moved_across_a_held_range_passes_as_its_other_half():
    stream = active()
    assert passing(stream, "u", 350, 500, VIEW - 8) == "c"
    assert passing(stream, "u", 150, 350, VIEW - 8) == "d"
    assert passing(stream, "u", 310, 320, VIEW - 8) is None


def test_keys_that_are_not_integers_or_columns_not_in_the_tuple_pass():
    stream = active()
    assert stream.passing_op("public.big", "u", ("x", None), ("x", None), VIEW - 8, positions) == "u"
    assert stream.passing_op("public.big", "u", ("x", "3a"), ("x", "3a"), VIEW - 8, positions) == "u"
    assert stream.passing_op("public.big", "u", row(350), row(350), VIEW - 8, lambda key: None) == "u"
    assert tuple_key(("a", "12", "-7"), [1, 2]) == (12, -7) and tuple_key(None, [0]) is None


def test_the_filter_expires_once_commits_reach_the_exports_point():
    stream = active()
    assert stream.kept_at(VIEW - 8) is stream.current
    assert stream.kept_at(VIEW) is None and StreamOverlap().kept_at(0) is None
    assert stream.filtering and not StreamOverlap().filtering
    assert passing(stream, "u", 350, 350, VIEW) == "u" and not stream.filtering, "the builder stops looking"
    assert stream.kept_at(VIEW - 8) is stream.current, "an offset of an earlier position still keeps the filter"


def test_the_offset_record_keeps_the_filter_until_its_position_passes_it():
    snapshot = PgSnapshotProgress(collections=progress(), lsn=START)
    start = snapshot.stream_position()
    assert start == before(START) and start.overlap == overlap_of(START, progress())
    source = SlotSource(PostgresConfig(name="c", topic_prefix="c"), Database("db"))
    stored = decode_offset(source.offset_record(start).to_value()).position
    assert stored == start and stored.overlap == start.overlap, "the snapshot's stream start carries the filter"
    source.overlap.current = start.overlap  # the stream opened there
    early = Position(VIEW - 8, VIEW - 4, 7, 1, False)
    assert OVERLAP_FIELD in source.offset_record(early).value
    assert decode_offset(source.offset_record(early).to_value()).position.overlap == start.overlap
    assert OVERLAP_FIELD not in source.offset_record(Position(VIEW, VIEW + 8, 8, 1, True)).value
    assert decode_offset(source.offset_record(before(VIEW + 8)).to_value()).position.overlap is None


def test_uuid_keys_compare_by_their_canonical_text_as_the_server_orders_them():
    low, mid, high = ("00000000-0000-0000-0000-00000000000a", "0000000a-0000-0000-0000-000000000000",
                      "f0000000-0000-0000-0000-000000000000")
    assert low < mid < high and uuid.UUID(low).bytes < uuid.UUID(mid).bytes < uuid.UUID(high).bytes
    accounts = CollectionProgress("public.accounts", [[low, "1"], [mid, "1"], [high, "9"]], [True, True])
    accounts.reads = {1: {"lsn": VIEW, "key": ["tenant", "id"]}}
    stream = StreamOverlap()
    stream.current = overlap_of(START, [accounts])
    columns = ["tenant", "id", "name"]

    def key_positions(key):
        return [columns.index(k) for k in key]

    def passes(tenant: str, number: str) -> str | None:
        values = (tenant, number, "n")
        return stream.passing_op("public.accounts", "u", values, values, VIEW - 8, key_positions)

    assert passes("a0000000-0000-0000-0000-000000000000", "5") is None
    assert passes(low, "7") == "u", "in the chunk read at the start"
    assert passes(high, "9") is None and passes(high, "10") == "u", "the last chunk's upper bound is inclusive"
    assert passes("A0000000-0000-0000-0000-000000000000", "5") == "u", "not a canonical uuid: not compared"


def test_keys_only_the_server_compares_keep_their_texts_and_ask_it():
    """A chunk read by a text key (order "server") keeps the plan's texts, "10" and "9" never compared as numbers;
    the server's answer (the row of the range holding the key) is asked once per key."""
    notes = CollectionProgress("public.notes", [["a"], ["10"], ["9"], ["z"]], [True] * 3)
    notes.reads = {1: {"lsn": VIEW, "key": ["code"], "order": "server"},
                   2: {"lsn": VIEW, "key": ["code"], "order": "server"}}
    overlap = overlap_of(START, [notes])
    assert overlap.server_ordered == {"public.notes"} and overlap.until == VIEW
    [held] = overlap.tables["public.notes"].ranges  # two chunks next to each other, read at one point: one range
    assert (held.lower, held.upper, held.upper_inclusive) == (("10",), ("z",), True)
    assert SnapshotOverlap.from_json(overlap.to_json()) == overlap
    stream = StreamOverlap()
    stream.current = overlap
    asked: list[tuple] = []

    class Cursor:
        def execute(self, query, params):
            asked.append(params)
            self.row = (1,) if json.loads(params[0])["code"] == "5" else None
            return self

        def fetchone(self):
            return self.row

    def read_catalog(read):
        return read(Cursor())

    def passes(op: str, old: str | None, new: str | None) -> str | None:
        return stream.passing_op("public.notes", op, (old or new, "x"), (new, "x") if new else None, VIEW - 8,
                                 lambda key: [0], read_catalog)

    assert passes("u", "5", "5") is None and passes("u", "5", "5") is None
    assert len(asked) == 1, "a key's answer is kept"
    assert json.loads(asked[0][1]) == [{"l": {"code": "10"}, "u": {"code": "z"}, "i": True}]
    assert passes("u", "5", "b") == "c" and passes("d", "b", None) == "d"
    assert stream.passing_op("public.notes", "u", ("5", "x"), ("5", "x"), VIEW - 8, lambda key: [0]) == "u", \
        "without the server, they pass"

    def refusing(error: Exception):
        def read_catalog(read):
            raise error
        return read_catalog

    with pytest.raises(psycopg.OperationalError):
        stream.passing_op("public.notes", "u", ("q", "x"), ("q", "x"), VIEW - 8, lambda key: [0],
                          refusing(psycopg.OperationalError("server closed the connection")))
    assert stream.passing_op("public.notes", "u", ("q", "x"), ("q", "x"), VIEW - 8, lambda key: [0],
                             refusing(psycopg.errors.UndefinedTable("gone"))) == "u", "a refused query: it passes"


def test_after_a_truncate_inside_the_window_the_tables_changes_all_pass_and_the_offset_keeps_it():
    """A TRUNCATE committed before the export's point empties the table for a consumer after the chunks read
    later: the rows written since (which those chunks hold) must come again, so from the truncate's commit on
    nothing of that table is dropped; an offset at or after the truncate keeps that, an earlier one does not."""
    stream = active()
    assert passing(stream, "c", None, 350, VIEW - 20) is None
    stream.truncate(["public.big", "public.other"], VIEW - 10)
    assert stream.current.truncated == {"public.big": VIEW - 10}, "only tables with chunks read later"
    assert passing(stream, "u", 350, 350, VIEW - 30) is None, "an earlier commit (a stored offset's replay)"
    assert passing(stream, "c", None, 350, VIEW - 10) == "c", "the truncate's own transaction"
    assert passing(stream, "u", 350, 350, VIEW - 8) == "u"
    assert stream.kept_at(VIEW - 20).truncated == {}
    kept = stream.kept_at(VIEW - 10)
    assert kept.truncated == {"public.big": VIEW - 10} and SnapshotOverlap.from_json(kept.to_json()) == kept
    stream.truncate(["public.big"], VIEW - 5)
    assert stream.current.truncated == {"public.big": VIEW - 10}, "the first truncate counts"
    stream.truncate(["public.big"], VIEW + 5)
    past = StreamOverlap()
    past.current = overlap_of(START, progress())
    past.truncate(["public.big"], VIEW)
    assert past.current.truncated == {}, "a truncate at or after the export's point is the stream's own"
