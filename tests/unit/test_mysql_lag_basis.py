"""MySQL/MariaDB lag without the 0-1 s sawtooth of whole-second binlog times: a change described within its binlog
second is measured from its arrival, a later one from the end of its second; the basis says which."""

from __future__ import annotations

from types import SimpleNamespace

from connectors.mysql import source
from connectors.mysql.config import MySqlConfig
from connectors.mysql.position import BinlogPosition
from connectors.mysql.source import MySqlEventBuilder, lag_source_time

BASE = {"name": "c", "topic.prefix": "c", "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "database.hostname": "127.0.0.1", "database.user": "u", "database.server.id": "5"}


def test_within_its_second_the_lag_is_measured_from_arrival():
    for offset_ms in (0, 10, 500, 999):  # anywhere in the second: no sawtooth, the basis moves with arrival
        assert lag_source_time(1_700_000_000, 1_700_000_000_000 + offset_ms) == (
            1_700_000_000_000 + offset_ms, source.ARRIVAL_LAG_BASIS)


def test_after_its_second_the_lag_is_measured_from_the_end_of_it():
    assert lag_source_time(1_700_000_000, 1_700_000_007_250) == (1_700_000_000_999, source.BINLOG_LAG_BASIS)
    assert lag_source_time(None, 1_700_000_000_000) == (None, None)


def test_the_builder_describes_a_fresh_change_with_sub_second_source_time(monkeypatch):
    config = MySqlConfig.from_properties(BASE)
    builder = MySqlEventBuilder(config)
    monkeypatch.setattr(source, "time", SimpleNamespace(time=lambda: 1_700_000_000.437))
    change = SimpleNamespace(position=BinlogPosition(file="b.000001", pos=4), ts_sec=1_700_000_000, op="c")
    described = builder.describe(change)
    assert described.source_ms == 1_700_000_000_437 and described.lag_basis == source.ARRIVAL_LAG_BASIS
