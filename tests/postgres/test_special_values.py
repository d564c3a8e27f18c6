"""PostgreSQL's special and extreme values through the whole connector into the real Kafka, as Debezium writes them:
a snapshot row and the same row streamed, under each decimal.handling.mode.

- numeric NaN / ±Infinity: precise has no form for them, so the value is null with a warning (Debezium logs its
  conversion failure and leaves the field null); the pipeline goes on (before, it failed on every restart). double
  writes JsonConverter's "NaN" / "Infinity" strings, string Debezium's NAN / POSITIVE_INFINITY names.
- dates and timestamps: 4713-01-01 BC (PostgreSQL's first day) on the proleptic Gregorian calendar as PostgreSQL
  counts it, ±infinity as Debezium's sentinels, the microseconds of the last timestamps and of the longest
  intervals held to int64's range (Java's saturating conversions) instead of numbers no Java consumer can read.
"""

from __future__ import annotations

import json

import pytest

from tests.postgres.test_source import Running, pg_config
from tests.type_check import records_at_least

pytestmark = [pytest.mark.integration]

INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
TABLE = """
CREATE TABLE specials (id int PRIMARY KEY, n numeric, n2 numeric(10,2), f float8, d date, ts timestamp,
                       ts3 timestamp(3), tstz timestamptz, iv interval)
"""
ROWS = [
    "(1, 'NaN', 'NaN', 'NaN', '4713-01-01 BC', '4713-01-01 00:00:00 BC', '4713-01-01 00:00:00 BC', "
    "'4713-01-01 00:00:00+00 BC', '-178000000 years')",
    "(2, 'Infinity', 'NaN', 'Infinity', 'infinity', 'infinity', 'infinity', 'infinity', '178000000 years')",
    "(3, '-Infinity', 'NaN', '-Infinity', '-infinity', '-infinity', '-infinity', '-infinity', '1 day')",
    "(4, 1.5, 1.5, 1.5, '5874897-12-31', '294276-12-31 23:59:59.999999', '294276-12-31 23:59:59.999', "
    "'294276-12-31 23:59:59.999999+00', '-1 day')",
]
FIRST_DAY_US = -210863520000000000  # 4713-01-01 BC: SELECT extract(epoch FROM timestamp '4713-01-01 00:00:00 BC')
TEMPORAL = {
    1: {"d": FIRST_DAY_US // 86_400_000_000, "ts": FIRST_DAY_US, "ts3": FIRST_DAY_US // 1000,
        "tstz": "-4712-01-01T00:00:00.000000Z", "iv": INT64_MIN},
    # Debezium's sentinels: PGStatement.DATE_POSITIVE/NEGATIVE_INFINITY read as microseconds, LocalDate
    # -5877611-06-21 / -22 for dates (java.time's toEpochDay), the text for timestamptz
    2: {"d": -2147472692, "ts": 9223372036825200000, "ts3": 9223372036825200, "tstz": "infinity",
        "iv": INT64_MAX},
    3: {"d": -2147472691, "ts": -9223372036832400000, "ts3": -9223372036832400, "tstz": "-infinity",
        "iv": 86_400_000_000},
    4: {"d": 2145042905, "ts": INT64_MAX, "ts3": 9224318015999999, "tstz": "+294276-12-31T23:59:59.999999Z",
        "iv": -86_400_000_000},
}


def b64_unscaled(value: int) -> str:
    import base64

    return base64.b64encode(value.to_bytes((value + (value < 0)).bit_length() // 8 + 1, "big", signed=True)).decode()


NUMBERS = {
    "precise": {1: (None, None), 2: (None, None), 3: (None, None),
                4: ({"scale": 1, "value": b64_unscaled(15)}, b64_unscaled(150))},
    "double": {1: ("NaN", "NaN"), 2: ("Infinity", "NaN"), 3: ("-Infinity", "NaN"), 4: (1.5, 1.5)},
    "string": {1: ("NAN", "NAN"), 2: ("POSITIVE_INFINITY", "NAN"), 3: ("NEGATIVE_INFINITY", "NAN"), 4: ("1.5", "1.50")},
}
FLOATS = {1: "NaN", 2: "Infinity", 3: "-Infinity", 4: 1.5}


@pytest.mark.parametrize("mode", list(NUMBERS))
def test_special_and_extreme_values_through_the_snapshot_and_the_stream(pg_db, stack, unique_name, mode, caplog):
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    topic = f"{name}.public.specials"
    pg_db.execute(TABLE)
    pg_db.execute(f"INSERT INTO specials VALUES {', '.join(ROWS)}")  # noqa: S608 - constants
    running = Running(pg_config(pg_db, name, **{"decimal.handling.mode": mode}), bootstrap)
    try:
        records_at_least(running, bootstrap, topic, len(ROWS))  # the snapshot's
        pg_db.execute("UPDATE specials SET id = id + 10")  # each row streamed: a delete, a tombstone, a create
        records = records_at_least(running, bootstrap, topic, len(ROWS) * 4)
    finally:
        running.stop()
    assert not running.runner.errors
    afters = [json.loads(r.value)["after"] for r in records if r.value is not None]
    afters = [a for a in afters if a is not None]
    assert len(afters) == len(ROWS) * 2
    for after in afters:
        row = after["id"] % 10
        n, n2 = NUMBERS[mode][row]
        expected = {"id": after["id"], "n": n, "n2": n2, "f": FLOATS[row], **TEMPORAL[row]}
        for column, value in expected.items():  # one by one, so a failure names the column
            assert after[column] == value, (after["id"], column)
    if mode == "precise":
        warned = [r.getMessage() for r in caplog.records if "decimal.handling.mode=precise" in r.getMessage()]
        assert any("column n holds NaN" in m for m in warned) and any("column n holds -Infinity" in m
                                                                      for m in warned)
