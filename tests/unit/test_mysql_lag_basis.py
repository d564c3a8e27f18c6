"""MySQL/MariaDB lag without the 0-1 s sawtooth of whole-second binlog times: a change read within its binlog second
is measured from its arrival at the binlog reader (its time in the change queue counts), a later one from the end of
its second; the basis says which."""

from __future__ import annotations

from types import SimpleNamespace

from connectors.core import metrics as metrics_module
from connectors.core.metrics import StreamingMetrics
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


def test_the_lag_counts_from_the_arrival_at_the_reader_not_from_when_the_batch_is_built(monkeypatch):
    """A change read at .100 of its binlog second, waiting in the change queue and built at .600: measured from its
    arrival, the lag includes that wait (committed at .700: 600 ms, not the 100 ms of Kafka alone)."""
    config = MySqlConfig.from_properties(BASE)
    builder = MySqlEventBuilder(config)
    monkeypatch.setattr(source, "time", SimpleNamespace(time=lambda: 1_700_000_000.600))
    change = SimpleNamespace(position=BinlogPosition(file="b.000001", pos=4), ts_sec=1_700_000_000, op="c",
                             arrived_ms=1_700_000_000_100)
    described = builder.describe(change)
    assert described.source_ms == 1_700_000_000_100 and described.lag_basis == source.ARRIVAL_LAG_BASIS
    metrics = StreamingMetrics("c", "c")
    monkeypatch.setattr(metrics_module, "time", SimpleNamespace(time=lambda: 1_700_000_000.700))
    metrics.record_committed(described.source_ms, described.lag_basis)
    assert metrics.ms_behind_source == 600


def test_a_change_read_after_its_second_is_measured_from_the_end_of_it():
    change = SimpleNamespace(position=BinlogPosition(file="b.000001", pos=4), ts_sec=1_700_000_000, op="c",
                             arrived_ms=1_700_000_002_300)
    described = MySqlEventBuilder(MySqlConfig.from_properties(BASE)).describe(change)
    assert described.source_ms == 1_700_000_000_999 and described.lag_basis == source.BINLOG_LAG_BASIS
