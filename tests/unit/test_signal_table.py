"""What a row of Debezium's signal table is to an incremental snapshot (connectors.core.snapshot.signal_table), and
how a keyed row change is told (connectors.core.snapshot.incremental.row_event): one reading for the SQL sources."""

from __future__ import annotations

from connectors.core.snapshot.chunks import Chunk
from connectors.core.snapshot.incremental import ROW, SIGNAL, WATERMARK_CLOSE, WATERMARK_OPEN, StreamEvent, row_event
from connectors.core.snapshot.signal_table import (
    WINDOW_CLOSE,
    WINDOW_OPEN,
    signal_event,
    window_data,
    windows_data_prefix,
)


def test_a_watermark_row_names_the_window_its_data_was_written_for():
    data = window_data("cdc-wm-1", "snap-1", Chunk("inventory.orders", 3, 7, 10, 20, False))
    assert signal_event({"id": "a-open", "type": WINDOW_OPEN, "data": data}) == StreamEvent(WATERMARK_OPEN, "cdc-wm-1")
    assert signal_event({"id": "a-close", "type": WINDOW_CLOSE, "data": data}) == StreamEvent(WATERMARK_CLOSE,
                                                                                              "cdc-wm-1")


def test_a_watermark_whose_data_is_not_a_window_has_none():
    for data in (None, "not json", "[1, 2]", "3"):
        assert signal_event({"id": "x", "type": WINDOW_OPEN, "data": data}) == StreamEvent(WATERMARK_OPEN, None)


def test_any_other_row_is_a_request_as_written():
    row = {"id": "ad-hoc-1", "type": "execute-snapshot", "data": '{"data-collections": ["public.orders"]}'}
    assert signal_event(row) == StreamEvent(SIGNAL, "ad-hoc-1", signal=row)


def test_a_row_change_keeps_the_old_key_only_when_the_row_moved():
    assert row_event("db.t", (2,), (1,)) == StreamEvent(ROW, (2,), "db.t", old_key=(1,))
    assert row_event("db.t", (2,), (2,)) == StreamEvent(ROW, (2,), "db.t")
    assert row_event("db.t", (2,), None) == StreamEvent(ROW, (2,), "db.t")  # an insert
    assert row_event("db.t", None, (1,)) == StreamEvent(ROW, (1,), "db.t")  # a delete


def test_the_stale_windows_prefix_matches_the_data_of_their_watermarks_only():
    chunk = Chunk("inventory.orders", 0, 0, None, None, True)
    prefix = windows_data_prefix("cdc-wm-1-")
    assert window_data("cdc-wm-1-" + "0" * 32, "snap", chunk).startswith(prefix)
    assert not window_data("cdc-wm-2-" + "0" * 32, "snap", chunk).startswith(prefix)
