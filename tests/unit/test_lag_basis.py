"""Lag is computed from the most precise source time (wallTime, ms, when the event has it) when a batch is committed."""

from __future__ import annotations

import datetime
import time

from bson.datetime_ms import DatetimeMS

from connectors.core.metrics import StreamingMetrics
from connectors.mongodb.source import wall_time_ms


def test_wall_time_keeps_its_milliseconds():
    moment = datetime.datetime(2026, 11, 23, 19, 0, 0, 123000, tzinfo=datetime.UTC)
    assert wall_time_ms(moment) == 1795460400123
    assert wall_time_ms(moment.replace(tzinfo=None)) == 1795460400123  # naive = UTC, as bson decodes
    assert wall_time_ms(DatetimeMS(253402300800000)) == 253402300800000  # year 10000


def test_lag_and_its_basis_are_reported():
    metrics = StreamingMetrics("c", "rs0")
    source_ms = int(time.time() * 1000) - 250
    metrics.record_events({"c": 1}, {}, {})
    assert metrics.snapshot()["MilliSecondsBehindSource"] is None  # seen, not yet committed
    metrics.record_committed(source_ms, lag_basis="wallTime")
    snapshot = metrics.snapshot()
    assert snapshot["LagBasis"] == "wallTime"
    assert 250 <= snapshot["MilliSecondsBehindSource"] < 60_000
