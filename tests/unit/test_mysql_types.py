"""Debezium's MySQL type mapping, one binlog column type at a time (values as the binlog reader decodes them)."""

from __future__ import annotations

import base64
import datetime
import decimal

import pytest
from pymysqlreplication.constants import FIELD_TYPE as F

from connectors import ConnectorError
from connectors.mysql.binlog import ZERO_DATE, ColumnInfo
from connectors.mysql.types import TypeOptions, mapping


def col(type_code, nullable=True, **kw):
    return ColumnInfo(name="c", type_code=type_code, nullable=nullable, **kw)


def mapped(column, raw, **options):
    m = mapping(column, TypeOptions(**options))
    return m.schema.type, m.schema.name, m.schema.parameters, m.json_value(raw)


@pytest.mark.parametrize("column, raw, expected", [
    (col(F.TINY), -5, ("int16", None, {}, -5)),
    (col(F.TINY, unsigned=True), 255, ("int16", None, {}, 255)),
    (col(F.SHORT), -32768, ("int16", None, {}, -32768)),
    (col(F.SHORT, unsigned=True), 65535, ("int32", None, {}, 65535)),
    (col(F.INT24, unsigned=True), 16777215, ("int32", None, {}, 16777215)),
    (col(F.LONG), 7, ("int32", None, {}, 7)),
    (col(F.LONG, unsigned=True), 4294967295, ("int64", None, {}, 4294967295)),
    (col(F.LONGLONG), -1, ("int64", None, {}, -1)),
    (col(F.LONGLONG, unsigned=True), 2**64 - 2, ("int64", None, {}, -2)),
    (col(F.DOUBLE), 0.1, ("float64", None, {}, 0.1)),
    (col(F.FLOAT), 0.10000000149011612, ("float32", None, {}, 0.1)),
    # FLT_MAX: its shortest text, 3.4028235E38 as Java prints it, is above FLT_MAX and rounds to it
    (col(F.FLOAT), 3.4028234663852886e38, ("float32", None, {}, 3.4028235e38)),
    (col(F.FLOAT), -3.4028234663852886e38, ("float32", None, {}, -3.4028235e38)),
    (col(F.BIT, bits=1), "0", ("boolean", None, {}, False)),
    (col(F.BIT, bits=9), "100000001", ("bytes", "io.debezium.data.Bits", {"length": "9"},
                                      base64.b64encode(b"\x01\x01").decode())),
    (col(F.VARCHAR, charset="utf8mb4"), "😀", ("string", None, {}, "😀")),
    (col(F.BLOB, charset="utf8mb4", length_size=2), "t", ("string", None, {}, "t")),
    (col(F.STRING, charset="binary", max_length=3), b"a", ("bytes", None, {}, base64.b64encode(b"a\0\0").decode())),
    (col(F.BLOB, charset="binary", length_size=2), b"\xff", ("bytes", None, {}, "/w==")),
    (col(F.YEAR), 1999, ("int32", "io.debezium.time.Year", {}, 1999)),
    (col(F.YEAR), 1900, ("int32", "io.debezium.time.Year", {}, 0)),  # YEAR 0000
    (col(F.ENUM, enum_values=("x", "y")), "y", ("string", "io.debezium.data.Enum", {"allowed": "x,y"}, "y")),
    (col(F.SET, set_values=("a", "b", "c")), {"c", "a"},
     ("string", "io.debezium.data.EnumSet", {"allowed": "a,b,c"}, "a,c")),
    (col(F.SET, set_values=("a",)), frozenset(), ("string", "io.debezium.data.EnumSet", {"allowed": "a"}, "")),
    (col(F.JSON, length_size=4), {"a": [1, None]}, ("string", "io.debezium.data.Json", {}, '{"a":[1,null]}')),
    (col(F.DATE), datetime.date(1969, 12, 31), ("int32", "io.debezium.time.Date", {}, -1)),
    (col(F.DATE, nullable=False), ZERO_DATE, ("int32", "io.debezium.time.Date", {}, 0)),
    (col(F.DATE), ZERO_DATE, ("int32", "io.debezium.time.Date", {}, None)),
    (col(F.TIME2, fsp=6), datetime.timedelta(hours=-838, minutes=-59, seconds=-59, microseconds=-1),
     ("int64", "io.debezium.time.MicroTime", {}, -3020399000001)),
    (col(F.TIME2, fsp=0), datetime.timedelta(hours=25), ("int64", "io.debezium.time.MicroTime", {}, 90000000000)),
    (col(F.DATETIME2, fsp=0), datetime.datetime(2018, 6, 20, 6, 37, 3),
     ("int64", "io.debezium.time.Timestamp", {}, 1529476623000)),
    (col(F.DATETIME2, fsp=3), datetime.datetime(1970, 1, 1, 0, 0, 0, 1000),
     ("int64", "io.debezium.time.Timestamp", {}, 1)),
    (col(F.DATETIME2, fsp=6), datetime.datetime(1970, 1, 1, 0, 0, 0, 1),
     ("int64", "io.debezium.time.MicroTimestamp", {}, 1)),
    (col(F.DATETIME2, fsp=6, nullable=False), ZERO_DATE, ("int64", "io.debezium.time.MicroTimestamp", {}, 0)),
    (col(F.TIMESTAMP2, fsp=0), datetime.datetime(2018, 6, 20, 13, 37, 3),
     ("string", "io.debezium.time.ZonedTimestamp", {}, "2018-06-20T13:37:03Z")),
    (col(F.TIMESTAMP2, fsp=6), datetime.datetime(2018, 6, 20, 13, 37, 3, 120000),
     ("string", "io.debezium.time.ZonedTimestamp", {}, "2018-06-20T13:37:03.120000Z")),
    (col(F.TIMESTAMP2, fsp=2), datetime.datetime(1970, 1, 1), ("string", "io.debezium.time.ZonedTimestamp", {}, None)),
    (col(F.TIMESTAMP2, fsp=0, nullable=False), datetime.datetime(1970, 1, 1),
     ("string", "io.debezium.time.ZonedTimestamp", {}, "1970-01-01T00:00:00Z")),
])
def test_default_modes(column, raw, expected):
    assert mapped(column, raw) == expected


def test_decimal_modes():
    column = col(F.NEWDECIMAL, precision=10, scale=3)
    value = decimal.Decimal("-1.500")
    assert mapped(column, value) == ("bytes", "org.apache.kafka.connect.data.Decimal",
                                     {"scale": "3", "connect.decimal.precision": "10"},
                                     base64.b64encode((-1500).to_bytes(2, "big", signed=True)).decode())
    assert mapped(column, decimal.Decimal("0.128"))[3] == base64.b64encode(b"\x00\x80").decode()  # sign byte kept
    assert mapped(column, value, decimal_handling_mode="double") == ("float64", None, {}, -1.5)
    assert mapped(column, value, decimal_handling_mode="string") == ("string", None, {}, "-1.500")


def test_bigint_unsigned_precise():
    schema_type, name, parameters, value = mapped(col(F.LONGLONG, unsigned=True), 2**64 - 1,
                                                  bigint_unsigned_handling_mode="precise")
    assert (schema_type, name, parameters) == ("bytes", "org.apache.kafka.connect.data.Decimal",
                                               {"scale": "0", "connect.decimal.precision": "20"})
    assert int.from_bytes(base64.b64decode(value), "big", signed=True) == 2**64 - 1


@pytest.mark.parametrize("mode, expected", [("base64", "AP8="), ("base64-url-safe", "AP8="), ("hex", "00ff")])
def test_binary_modes(mode, expected):
    assert mapped(col(F.BLOB, charset="binary", length_size=2), b"\x00\xff", binary_handling_mode=mode) == (
        "string", None, {}, expected)


def test_connect_time_precision():
    assert mapped(col(F.TIME2, fsp=3), datetime.timedelta(seconds=-1, microseconds=500),
                  time_precision_mode="connect") == ("int32", "org.apache.kafka.connect.data.Time", {}, -1000)
    assert mapped(col(F.DATETIME2, fsp=6), datetime.datetime(1970, 1, 2), time_precision_mode="connect") == (
        "int64", "org.apache.kafka.connect.data.Timestamp", {}, 86400000)
    assert mapped(col(F.DATE), datetime.date(1970, 1, 2), time_precision_mode="connect")[1:] == (
        "org.apache.kafka.connect.data.Date", {}, 1)


def test_optional_follows_nullability_and_schema_json():
    m = mapping(col(F.DATE, nullable=False))
    assert m.schema.to_json("d") == {"type": "int32", "optional": False, "name": "io.debezium.time.Date",
                                     "version": 1, "field": "d"}
    assert mapping(col(F.LONG)).value(None) is None


def test_mariadb_json_is_longtext():
    m = mapping(col(F.BLOB, charset="utf8mb4", length_size=4))
    assert (m.schema.name, m.json_value('{"a": 1}')) == (None, '{"a": 1}')


def test_bad_mode_names_the_property():
    with pytest.raises(ConnectorError, match="decimal.handling.mode"):
        TypeOptions(decimal_handling_mode="exact")
    with pytest.raises(ConnectorError, match="'c' has a type this connector does not map"):
        mapping(col(-1))  # the catalog's code of a type it does not know
