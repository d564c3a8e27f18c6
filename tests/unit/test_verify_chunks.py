"""Verify's chunk reader (connectors/core/verify_chunks.py): chunks read in order in a thread of their own, no more
rows read ahead than its budget allows, a read's error raised where the rows are taken."""

from __future__ import annotations

import threading
import time

import pytest

from connectors.core.snapshot.chunks import Plan
from connectors.core.verify_chunks import ChunkReader


class CountingView:
    """A table of `chunks` chunks of ten one-character rows; records which chunks the main thread had taken when
    each read began."""

    def __init__(self, chunks: int, fail_at: int | None = None):
        self.bounds = list(range(0, 10 * chunks + 1, 10))
        self.fail_at = fail_at
        self.taken = 0
        self.taken_at_read: list[int] = []
        self.thread = None

    def plan(self, table, chunk_size):
        return Plan(self.bounds, self.bounds[-1], "fixed")

    def read_rows(self, chunk):
        self.thread = threading.current_thread()
        self.taken_at_read.append(self.taken)
        if chunk.index == self.fail_at:
            raise RuntimeError("the source went away")
        return [(str(n), "x") for n in range(chunk.lower, chunk.upper)]


def take_all(reader: ChunkReader, view: CountingView) -> list[list]:
    chunks = reader.chunks()
    taken = []
    for _ in chunks:
        time.sleep(0.01)  # a slow comparison: the reader could run ahead
        taken.append(reader.rows())
        view.taken += 1
    return taken


def test_chunks_come_in_order_read_in_another_thread_no_further_ahead_than_the_budget():
    view = CountingView(6)
    reader = ChunkReader(view, "t", 10, budget=1)  # one chunk's rows (20 characters) fill it
    try:
        rows = take_all(reader, view)
    finally:
        reader.close()
    assert [row[0][0] for row in rows] == ["0", "10", "20", "30", "40", "50"]
    assert view.thread is not threading.current_thread()
    # chunk i was read once every chunk before it but the last one was taken (the budget holds one chunk)
    assert all(taken >= index - 1 for index, taken in enumerate(view.taken_at_read)), view.taken_at_read


def test_a_large_budget_lets_the_whole_table_be_read_before_any_comparison():
    view = CountingView(5)
    reader = ChunkReader(view, "t", 10, budget=1 << 20)
    try:
        deadline = time.monotonic() + 10
        while len(view.taken_at_read) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert view.taken_at_read == [0, 0, 0, 0, 0]
        assert len(take_all(reader, view)) == 5
    finally:
        reader.close()


def test_a_failed_read_is_raised_where_its_rows_are_taken_and_close_ends_the_thread():
    view = CountingView(4, fail_at=2)
    reader = ChunkReader(view, "t", 10, budget=1 << 20)
    chunks = reader.chunks()
    assert len(chunks) == 4
    reader.rows(), reader.rows()
    with pytest.raises(RuntimeError, match="went away"):
        reader.rows()
    reader.close()
    assert not view.thread.is_alive()
