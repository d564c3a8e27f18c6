"""`source.snapshot` of snapshot rows and `source.sequence`'s first item, as Debezium 3.6.1 writes them (checked
against Debezium itself by tests/compat/test_postgres_compat.py)."""

from __future__ import annotations

from connectors.core.snapshot.chunks import Chunk
from connectors.postgres.position import Position
from connectors.postgres.snapshot import snapshot_marker
from connectors.postgres.stream import last_commit_end


def chunk(number: int, index: int, count: int) -> Chunk:
    return Chunk("public.t", index, number, None, None, index == count - 1, count)


def markers(first_chunk: Chunk, rows: int, mark_last: bool) -> list[str]:
    return [snapshot_marker(first_chunk, mark_last, row == 0, row == rows - 1) for row in range(rows)]


def test_rows_of_the_first_a_middle_and_the_last_table():
    assert markers(chunk(0, 0, 1), 3, False) == ["first", "true", "last_in_data_collection"]
    assert markers(chunk(1, 0, 1), 3, False) == ["first_in_data_collection", "true", "last_in_data_collection"]
    assert markers(chunk(2, 0, 1), 3, True) == ["first_in_data_collection", "true", "last"]


def test_a_row_that_is_several_takes_debeziums_first_choice():
    assert markers(chunk(0, 0, 1), 1, False) == ["first"]  # first beats last_in_data_collection
    assert markers(chunk(1, 0, 1), 1, False) == ["last_in_data_collection"]
    assert markers(chunk(0, 0, 1), 1, True) == ["last"]


def test_chunks_inside_a_table_mark_only_its_ends():
    assert markers(chunk(3, 0, 3), 2, False) == ["first_in_data_collection", "true"]
    assert markers(chunk(4, 1, 3), 2, False) == ["true", "true"]
    assert markers(chunk(5, 2, 3), 2, False) == ["true", "last_in_data_collection"]


def test_the_last_commit_a_stored_position_gives():
    assert last_commit_end(None) is None
    assert last_commit_end(Position(500, 530, 7, 1, completed=True)) == 530  # a whole transaction: its end
    assert last_commit_end(Position(500, 420, 7, 1, completed=False)) is None  # inside one
    assert last_commit_end(Position(529, 530, completed=True)) is None  # an idle or snapshot position
