"""A binlog.RowsRun's queued rows (`(run, row)` tuples) through MySqlEventBuilder: what `build_changes` writes from the
event's bytes is what `build` of each row gives, its positions are those of the rows' RowChanges, and a batch in
which a run's rows do not follow one another as the change reader queues them (a row of another run between) still
gives each row once. Built from bytes made here (a table of an INT key and a VARCHAR), no server."""

from __future__ import annotations

import struct
import time

import pytest
from pymysqlreplication.constants import FIELD_TYPE

from connectors.mysql import compiled_rows, envelope, source
from connectors.mysql.binlog import BinlogPosition, ColumnInfo, RowsRun, TableSchema
from connectors.mysql.config import MySqlConfig
from connectors.mysql.source import MySqlEventBuilder, ServerSource
from tests.compiled_modules import require_built
from tests.unit.test_mysql_lag_basis import BASE

SCHEMA = TableSchema("db", "t", (ColumnInfo("id", FIELD_TYPE.LONG, False, primary=True),
                                 ColumnInfo("label", FIELD_TYPE.VARCHAR, True, charset="utf8", max_length=80)),
                     key_order=("id",), defaults_known=True)


def _run(op: str, ids: list[int], pos: int) -> RowsRun:
    """A rows event of `op` for the rows `ids` (an update moves no key: before and after share the id)."""
    layout = compiled_rows.layout(SCHEMA)

    def image(key: int, label: str) -> bytes:
        text = label.encode()
        return b"\x00" + struct.pack("<i", key) + bytes([len(text)]) + text

    body = b"".join(image(key, "before") + image(key, "after é") if op == "u" else image(key, f"row {key}")
                    for key in ids)
    present = b"\x03"
    count = compiled_rows.compiled.count_rows(body, layout, present, present if op == "u" else None)
    assert count == len(ids)
    return RowsRun(op, SCHEMA, body, layout, present, present if op == "u" else None, count, 0, "0-1-7",
                   "b.000001", pos, 1, 1_700_000_000, 3, None, BinlogPosition("b.000001", 4, "0-1-6"), 0, 0)


@pytest.fixture
def fixed_time(monkeypatch):
    clock = type("Clock", (), {"time_ns": staticmethod(lambda: 1_700_000_000_123_456_789),
                               "time": staticmethod(time.time), "monotonic": staticmethod(time.monotonic)})
    monkeypatch.setattr(source, "time", clock)
    monkeypatch.setattr(envelope, "time", clock)


@pytest.mark.parametrize("op", ["c", "u", "d"])
def test_rows_out_of_their_order_are_each_written_once(op, fixed_time):
    require_built(compiled_rows.compiled, "connectors/mysql/_binrows")
    first, second = _run(op, [1, 2, 3, 4, 5], 100), _run(op, [6, 7], 200)
    batch = [(first, 0), (first, 1), (second, 0), (first, 2), (second, 1)]
    config = MySqlConfig.from_properties(BASE)
    together, alone = MySqlEventBuilder(config), MySqlEventBuilder(config)
    messages: list = []
    built = together.build_changes(batch, messages)
    assert built.payload == sum(len(message.key or b"") + len(message.value or b"") for message in messages)
    expected = [message for item in batch for message in alone.build(item)[1]]
    assert messages == expected
    assert len(messages) == len(batch) * (2 if op == "d" else 1)
    assert built.by_operation == {op: len(batch)} and built.first is batch[0] and built.last is batch[-1]
    assert ServerSource.position_after_changes(batch, None).binlog == second.row_change(1).position
    assert second.row_change(1).position == BinlogPosition("b.000001", 4, "0-1-6", 1, 0)
    assert first.row_change(2).position == BinlogPosition("b.000001", 4, "0-1-6", 0, 3)
