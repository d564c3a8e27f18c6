"""The compiled writers of DOUBLE, FLOAT, DECIMAL, DATE, DATETIME, TIMESTAMP, TIME and YEAR columns (WRITE_DOUBLE,
WRITE_FLOAT, WRITE_DECIMAL, WRITE_DATE, WRITE_MICROS, WRITE_MILLIS, WRITE_ZONED, WRITE_MICROTIME, WRITE_MILLITIME,
WRITE_YEAR: connectors/mysql/_binrows, chosen by envelope.TableEvents) write what the columns' own Python writers
write (types.py's conversion, then JsonConverter's text): the values a SELECT or the binlog decoder gives (doubles at
their limits, NaN and infinities, negative zero; 32-bit floats, and doubles past their range; decimals of every scale
up to DECIMAL(65,30), negative, zero, negative zero, in the forms str(Decimal) writes; dates and datetimes before
1970, at the limits of their range, with every fraction width; timestamps at the epoch (the zero value) and as a
SELECT reads them; negative times; YEAR 0), NULLs (written as `null` by the module for nullable columns: WRITE_NULL)
and values of other types (written by the column's writer), under every time.precision.mode and
decimal.handling.mode, as rows (write_row) and keys (write_key); tests/mariadb/test_built_together.py compares what
write_run writes from real events' bytes. Without the module the test skips, except in CI."""

from __future__ import annotations

import datetime
import decimal
import random
import struct

import pytest
from pymysqlreplication.constants import FIELD_TYPE

from connectors.mysql import compiled_rows
from connectors.mysql.binlog import ColumnInfo, TableSchema
from connectors.mysql.compiled_rows import (
    WRITE_CALL,
    WRITE_DATE,
    WRITE_DECIMAL,
    WRITE_DOUBLE,
    WRITE_FLOAT,
    WRITE_MICROS,
    WRITE_MICROTIME,
    WRITE_MILLIS,
    WRITE_MILLITIME,
    WRITE_NULL,
    WRITE_YEAR,
    WRITE_ZONED,
)
from connectors.mysql.config import MySqlConfig
from connectors.mysql.envelope import TableEvents
from connectors.mysql.types import SelectedTimestamp
from tests.compiled_modules import require_built

BASE = {"name": "m1", "database.hostname": "db", "database.user": "cdc", "database.server.id": "5400",
        "topic.prefix": "srv", "schemas.enable": "true"}
DECIMALS = {"d0": (18, 0), "d2": (12, 2), "d5": (5, 5), "d9": (20, 9), "d30": (65, 30), "d10": (38, 10)}
TABLE = TableSchema("shop", "wide", (
    ColumnInfo("id", FIELD_TYPE.LONG, False, primary=True),
    ColumnInfo("db", FIELD_TYPE.DOUBLE, True),
    ColumnInfo("fl", FIELD_TYPE.FLOAT, True),
    *(ColumnInfo(name, FIELD_TYPE.NEWDECIMAL, True, precision=p, scale=s) for name, (p, s) in DECIMALS.items()),
    ColumnInfo("da", FIELD_TYPE.DATE, True),
    *(ColumnInfo(f"t{fsp}", FIELD_TYPE.DATETIME2, True, fsp=fsp) for fsp in range(7)),
    *(ColumnInfo(f"s{fsp}", FIELD_TYPE.TIMESTAMP2, True, fsp=fsp) for fsp in range(7)),
    *(ColumnInfo(f"h{fsp}", FIELD_TYPE.TIME2, True, fsp=fsp) for fsp in (0, 3, 6)),
    ColumnInfo("y", FIELD_TYPE.YEAR, True),
    ColumnInfo("sr", FIELD_TYPE.TIMESTAMP2, False, fsp=2),
))
EPOCH = datetime.datetime(1970, 1, 1)


def _python(values: dict, writers: tuple) -> str:
    return "{" + "".join(prefix + write(values.get(name)) for name, prefix, _, write in writers) + "}"


def _outcome(write, *args):
    try:
        return write(*args)
    except Exception as error:  # noqa: BLE001 - compared with the other way's
        return type(error)


def _double(rng: random.Random):
    return rng.choice([0.0, -0.0, 1.0, -1.5, 0.1, 1 / 3, 1e7, 9999999.0, 1e-3, 9.99e-4, 123456789.125, 5e-324,
                       -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, float("nan"), float("inf"),
                       float("-inf"), 100.0, 1e21, 4.35, rng.uniform(-1e6, 1e6),
                       rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30),
                       struct.unpack("<d", rng.randbytes(8))[0]])


def _float(rng: random.Random):
    single = struct.unpack("<f", rng.randbytes(4))[0]  # a FLOAT's value as the binlog gives it
    return rng.choice([single, single, 0.0, -0.0, 1.1, 0.1, 1e-45, 1.4e-45, 3.4028234663852886e38, 3.5e38, -1e39,
                       1.17549435e-38, 16777217.0, 1e7, 9999999.0, 1e-3, 123.456, float("nan"), float("inf"),
                       rng.uniform(-1e6, 1e6)])


def _decimal(rng: random.Random, precision: int, scale: int):
    whole = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, precision - scale)))
    fraction = "".join(rng.choice("0123456789") for _ in range(scale))
    text = rng.choice(["", "-"]) + (whole or "0") + ("." + fraction if scale else "")
    value = decimal.Decimal(text)
    return rng.choice([value, value, decimal.Decimal("-0." + "0" * scale) if scale else decimal.Decimal("-0"),
                       decimal.Decimal(0).scaleb(-scale), decimal.Decimal(1).scaleb(-scale),
                       decimal.Decimal("9" * (precision - scale) + ("." + "9" * scale if scale else "")),
                       -decimal.Decimal("9" * (precision - scale) + ("." + "9" * scale if scale else "")),
                       decimal.Decimal("0." + "0" * (scale - 1) + "1") if scale else decimal.Decimal(1)])


def _date(rng: random.Random) -> datetime.date:
    return rng.choice([datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1969, 12, 31),
                       datetime.date(1970, 1, 1), datetime.date(1900, 3, 1), datetime.date(2000, 2, 29),
                       datetime.date(rng.randint(1, 9999), rng.randint(1, 12), rng.randint(1, 28))])


def _datetime(rng: random.Random, fsp: int) -> datetime.datetime:
    micro = int(f"{rng.randrange(10**6):06d}"[:fsp].ljust(6, "0")) if fsp else 0
    return rng.choice([datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59, micro),
                       datetime.datetime(1969, 12, 31, 23, 59, 59, micro), EPOCH,
                       datetime.datetime(1960, 5, 6, 7, 8, 9, 1),
                       datetime.datetime(rng.randint(1, 9999), rng.randint(1, 12), rng.randint(1, 28),
                                         rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), micro)])


def _timestamp(rng: random.Random, fsp: int) -> datetime.datetime:
    micro = int(f"{rng.randrange(10**6):06d}"[:fsp].ljust(6, "0")) if fsp else 0
    value = rng.choice([EPOCH, EPOCH.replace(microsecond=micro), datetime.datetime(2038, 1, 19, 3, 14, 7, micro),
                        datetime.datetime(rng.randint(1971, 2037), rng.randint(1, 12), rng.randint(1, 28),
                                          rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), micro)])
    # a SELECT's value (the snapshot's): Debezium's JDBC form, which the column's writer writes
    return SelectedTimestamp.of(value) if rng.random() < 0.2 else value


def _time(rng: random.Random, fsp: int) -> datetime.timedelta:
    micro = int(f"{rng.randrange(10**6):06d}"[:fsp].ljust(6, "0")) if fsp else 0
    value = datetime.timedelta(hours=rng.randint(0, 838), minutes=rng.randint(0, 59), seconds=rng.randint(0, 59),
                               microseconds=micro)
    return rng.choice([value, -value, datetime.timedelta(0), datetime.timedelta(microseconds=-1),
                       -datetime.timedelta(hours=838, minutes=59, seconds=59)])


def _other(rng: random.Random, value):
    return rng.choice([None, None, 1, "text", 1.5, decimal.Decimal("1.25"), decimal.Decimal("1E+2"),
                       decimal.Decimal("NaN"), value.normalize() if isinstance(value, decimal.Decimal) else None,
                       datetime.date(2024, 1, 2),
                       datetime.datetime(2024, 1, 2, 3, 4, 5), datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC)])


def _row(rng: random.Random) -> dict:
    row = {"id": rng.randint(-2**31, 2**31 - 1), "db": _double(rng), "fl": _float(rng), "da": _date(rng)}
    row.update({name: _decimal(rng, p, s) for name, (p, s) in DECIMALS.items()})
    row.update({f"t{fsp}": _datetime(rng, fsp) for fsp in range(7)})
    row.update({f"s{fsp}": _timestamp(rng, fsp) for fsp in range(7)})
    row.update({f"h{fsp}": _time(rng, fsp) for fsp in (0, 3, 6)})
    row.update({"y": rng.choice([1900, 1901, 2155, 2024]), "sr": _timestamp(rng, 2)})
    return {name: _other(rng, value) if rng.random() < 0.02 else value for name, value in row.items()}


@pytest.mark.parametrize("props", [{}, {"time.precision.mode": "connect"}, {"decimal.handling.mode": "double"},
                                   {"decimal.handling.mode": "string"}])
def test_the_compiled_writers_write_what_the_columns_writers_write(props):
    require_built(compiled_rows.compiled, "connectors/mysql/_binrows")
    events = TableEvents(MySqlConfig.from_properties({**BASE, **props}), TABLE)
    kinds = {name: kind & ~WRITE_NULL for name, _, kind, _ in events._writers}  # noqa: SLF001 - under test
    # every column but the key and `sr` is nullable without a default: its writer writes None as null, and so does
    # the module
    assert {name for name, _, kind, _ in events._writers if kind & WRITE_NULL} == set(kinds) - {"id", "sr"}  # noqa: SLF001
    assert kinds["db"] == WRITE_DOUBLE
    assert kinds["fl"] == WRITE_FLOAT
    assert kinds["da"] == WRITE_DATE
    assert kinds["t6"] == (WRITE_MILLIS if props.get("time.precision.mode") else WRITE_MICROS)
    assert kinds["t3"] == WRITE_MILLIS
    assert kinds["s5"] == WRITE_ZONED | 5 << 8
    assert kinds["h3"] == (WRITE_MILLITIME if props.get("time.precision.mode") else WRITE_MICROTIME)
    assert kinds["y"] == WRITE_YEAR
    assert kinds["d30"] == (WRITE_DECIMAL | 30 << 8 if not props.get("decimal.handling.mode") else WRITE_CALL)
    rng = random.Random(5)
    written = 0
    for _ in range(3000):
        values = _row(rng)
        expected = _outcome(_python, values, events._writers)  # noqa: SLF001
        if expected is ValueError or expected is TypeError or isinstance(expected, type):
            assert _outcome(compiled_rows.write_row, values, events._writers) is expected  # noqa: SLF001
            continue
        assert compiled_rows.write_row(values, events._writers) == expected, values  # noqa: SLF001
        written += 1
    assert written > 1000


def test_decimal_keys_are_written_as_the_python_way_writes_them():
    require_built(compiled_rows.compiled, "connectors/mysql/_binrows")
    table = TableSchema("shop", "priced", (ColumnInfo("price", FIELD_TYPE.NEWDECIMAL, False, precision=65, scale=30,
                                                      primary=True),
                                           ColumnInfo("day", FIELD_TYPE.DATE, False, primary=True)))
    events = TableEvents(MySqlConfig.from_properties(BASE), table)
    rng = random.Random(3)
    for _ in range(500):
        values = {"price": _decimal(rng, 65, 30), "day": _date(rng)}
        expected = _outcome(lambda v: events._key_bytes(_python(v, events._key_writers)), values)  # noqa: SLF001
        assert _outcome(events._key_json, values) == expected, values  # noqa: SLF001
