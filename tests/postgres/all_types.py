"""The all-types PostgreSQL table and the values Debezium's documentation gives for each of its columns, shared by
the type tests through the slot (test_types_live) and through the whole connector into Kafka (test_types_connector).
"""

from __future__ import annotations

import base64
import struct
from datetime import date

DDL = """
CREATE EXTENSION hstore;
CREATE EXTENSION citext;
CREATE EXTENSION ltree;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok';
CREATE DOMAIN price AS numeric(8,3);
CREATE DOMAIN short_text AS varchar(5);
CREATE TABLE all_types (
  id int PRIMARY KEY,
  c_bool boolean, c_int2 smallint, c_int4 integer, c_int8 bigint, c_oid oid, c_float4 real, c_float8 double precision,
  c_numeric numeric, c_numeric_p numeric(10,2), c_numeric_p0 numeric(5), c_money money,
  c_numeric_big numeric, c_numeric_wide numeric(40,5),
  c_char char(3), c_varchar varchar(10), c_text text, c_name name, c_qchar "char", c_bytea bytea,
  c_date date, c_time time, c_time3 time(3), c_timetz timetz, c_timestamp timestamp, c_timestamp3 timestamp(3),
  c_timestamptz timestamptz, c_timestamptz0 timestamptz(0), c_interval interval,
  c_uuid uuid, c_json json, c_jsonb jsonb, c_xml xml,
  c_inet inet, c_cidr cidr, c_macaddr macaddr, c_macaddr8 macaddr8,
  c_bit1 bit(1), c_bit10 bit(10), c_varbit varbit, c_varbit5 varbit(5),
  c_int4range int4range, c_int8range int8range, c_numrange numrange, c_tsrange tsrange, c_tstzrange tstzrange,
  c_daterange daterange, c_tsvector tsvector,
  c_mood mood, c_price price, c_short short_text, c_hstore hstore, c_citext citext, c_ltree ltree,
  c_int_arr int[], c_text_arr text[], c_numeric_arr numeric(6,2)[], c_mood_arr mood[], c_tstz_arr timestamptz[],
  c_date_arr date[], c_bytea_arr bytea[], c_money_arr money[],
  c_point point, c_lsn pg_lsn,
  c_required text NOT NULL
);
CREATE PUBLICATION pub FOR TABLE all_types;
"""

FULL_ROW = """
INSERT INTO all_types VALUES (
  {id}, true, -32768, 2147483647, -9223372036854775808, 4294967295, 1.5, 1e-7,
  12345.6700, 1234.5, 42, -1234.56,
  1e40, 12345678901234567890123456789012345.6789,
  'ab', 'héllo', E'line\\nbreak', 'pg_class', 'x', '\\x00ff10',
  '2024-02-29', '13:14:15.123456', '13:14:15.123', '13:14:15.5+02', '2018-06-20 15:13:16.945104',
  '2018-06-20 15:13:16.945', '2018-06-20 15:13:16.945104+02', '2018-06-20 15:13:16+02',
  '1 year 2 months 3 days 4 hours 5 minutes 6.78 seconds',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": [1, 2]}', '{"b":1,"a":2}', '<a>x</a>',
  '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05',
  B'1', B'1000000001', B'101', B'00000',
  '[1,10)', '(1,10]', '[1.5,2.5]', '[2020-01-01 00:00,2020-01-02 00:00)', '[2020-01-01 00:00+00,)',
  '[2020-01-01,2020-02-01)', 'a fat cat',
  'ok', 12.5, 'abc', '"a"=>"1", "b"=>NULL', 'MiXeD', 'Top.Science',
  '{1,NULL,3}', ARRAY['a b', 'c"d', NULL], '{1.5,2}', '{sad,happy}', '{"2018-06-20 15:13:16.945104+02"}',
  '{2024-02-29}', ARRAY['\\x01ff'::bytea], '{1.00}',
  '(1,2)', '0/16B3748',
  'required'
)
"""


def full_row(row_id: int) -> str:
    """ROW_1's INSERT with another id: a value of every type."""
    return FULL_ROW.replace("{id}", str(row_id), 1)


def null_row(row_id: int) -> str:
    """A row with NULL wherever a column allows it."""
    return f"INSERT INTO all_types (id, c_required) VALUES ({row_id}, '')"  # noqa: S608 - an int


ROW_1 = full_row(1)
ROW_2 = null_row(2)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unscaled(n: int) -> str:
    return b64(n.to_bytes((n + (n < 0)).bit_length() // 8 + 1, "big", signed=True))


def days(d: date) -> int:
    return (d - date(1970, 1, 1)).days


# Debezium's values for ROW_1 with the default settings (JsonConverter payload, schemas.enable=false)
EXPECTED_DEFAULT = {
    "id": 1, "c_bool": True, "c_int2": -32768, "c_int4": 2147483647, "c_int8": -9223372036854775808,
    "c_oid": 4294967295, "c_float4": 1.5, "c_float8": 1e-07,
    "c_numeric": {"scale": 2, "value": unscaled(1234567)}, "c_numeric_p": unscaled(123450),
    "c_numeric_p0": unscaled(42), "c_money": unscaled(-123456),
    # more digits than Python's default decimal context keeps (28)
    "c_numeric_big": {"scale": 0, "value": unscaled(10**40)},
    "c_numeric_wide": unscaled(1234567890123456789012345678901234567890),
    "c_char": "ab ", "c_varchar": "héllo", "c_text": "line\nbreak", "c_name": "pg_class", "c_qchar": "x",
    "c_bytea": b64(b"\x00\xff\x10"),
    "c_date": days(date(2024, 2, 29)), "c_time": 47655123456, "c_time3": 47655123, "c_timetz": "11:14:15.5Z",
    "c_timestamp": 1529507596945104, "c_timestamp3": 1529507596945,
    "c_timestamptz": "2018-06-20T13:13:16.945104Z", "c_timestamptz0": "2018-06-20T13:13:16Z",
    "c_interval": 37091106780000,
    "c_uuid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "c_json": '{"a": [1, 2]}', "c_jsonb": '{"a": 2, "b": 1}',
    "c_xml": "<a>x</a>",
    "c_inet": "192.168.0.1/24", "c_cidr": "10.0.0.0/8", "c_macaddr": "08:00:2b:01:02:03",
    "c_macaddr8": "08:00:2b:01:02:03:04:05",
    "c_bit1": True, "c_bit10": b64((513).to_bytes(2, "little")), "c_varbit": b64(b"\x05"), "c_varbit5": "",
    "c_int4range": "[1,10)", "c_int8range": "[2,11)", "c_numrange": "[1.5,2.5]",
    "c_tsrange": '["2020-01-01 00:00:00","2020-01-02 00:00:00")', "c_tstzrange": '["2020-01-01 00:00:00+00",)',
    "c_daterange": "[2020-01-01,2020-02-01)", "c_tsvector": "'a' 'cat' 'fat'",
    "c_mood": "ok", "c_price": unscaled(12500), "c_short": "abc", "c_hstore": '{"a":"1","b":null}',
    "c_citext": "MiXeD", "c_ltree": "Top.Science",
    "c_int_arr": [1, None, 3], "c_text_arr": ["a b", 'c"d', None], "c_numeric_arr": [unscaled(150), unscaled(200)],
    "c_mood_arr": ["sad", "happy"], "c_tstz_arr": ["2018-06-20T13:13:16.945104Z"],
    "c_date_arr": [days(date(2024, 2, 29))], "c_bytea_arr": [b64(b"\x01\xff")],
    # io.debezium.data.geometry.Point: the coordinates and their WKB (byte order 1, type 1, x, y), no SRID
    "c_point": {"x": 1.0, "y": 2.0, "wkb": b64(struct.pack("<BIdd", 1, 1, 1.0, 2.0)), "srid": None},
    "c_required": "required",
}
# money[] and pg_lsn have no Debezium schema: the columns are left out of the events
LEFT_OUT = {"c_money_arr", "c_lsn"}


def expected_nulls(row_id: int, columns=EXPECTED_DEFAULT) -> dict:
    """null_row's values of `columns`: null everywhere but the key and the NOT NULL column."""
    return {name: (row_id if name == "id" else "" if name == "c_required" else None) for name in columns}


# the other modes, as connector properties and as TypeSettings keywords, and the columns whose values they change
OTHER_MODES = {
    "decimal.handling.mode": "string", "time.precision.mode": "connect", "binary.handling.mode": "hex",
    "interval.handling.mode": "string", "hstore.handling.mode": "map", "include.unknown.datatypes": "true",
}
OTHER_MODES_SETTINGS = {
    "decimal_handling_mode": "string", "time_precision_mode": "connect", "binary_handling_mode": "hex",
    "interval_handling_mode": "string", "hstore_handling_mode": "map", "include_unknown_datatypes": True,
}
OTHER_MODES_CHANGED = {
    "c_numeric": "12345.6700", "c_numeric_p": "1234.50", "c_numeric_p0": "42", "c_money": "-1234.56",
    "c_price": "12.500", "c_numeric_arr": ["1.50", "2.00"],
    "c_numeric_big": "1" + "0" * 40, "c_numeric_wide": "12345678901234567890123456789012345.67890",
    "c_time": 47655123, "c_time3": 47655123, "c_timestamp": 1529507596945, "c_timestamp3": 1529507596945,
    "c_bytea": "00ff10", "c_bytea_arr": ["01ff"], "c_interval": "P1Y2M3DT4H5M6.78S",
    "c_hstore": {"a": "1", "b": None},
    "c_lsn": b"0/16B3748".hex(),  # an unknown type: its text's bytes, as binary
}
# decimal.handling.mode=double
DOUBLE_CHANGED = {
    "c_numeric": 12345.67, "c_numeric_p": 1234.5, "c_numeric_p0": 42.0, "c_money": -1234.56, "c_price": 12.5,
    "c_numeric_arr": [1.5, 2.0], "c_numeric_big": 1e40, "c_numeric_wide": 1.2345678901234568e34,
}


def connect_schema(type_: str, name: str | None = None, parameters: dict | None = None, optional: bool = True,
                   **rest) -> dict:
    """A Kafka Connect schema as JsonConverter writes it (a logical name carries version 1)."""
    schema = {"type": type_, "optional": optional, **rest}
    if name:
        schema.update(name=name, version=1)
    if parameters:
        schema["parameters"] = parameters
    return schema


def decimal(scale: int, precision: int | None = None) -> dict:
    parameters = {"scale": str(scale)}
    if precision is not None:
        parameters["connect.decimal.precision"] = str(precision)
    return connect_schema("bytes", "org.apache.kafka.connect.data.Decimal", parameters)


def array_of(items: dict) -> dict:
    return connect_schema("array", items=items)


def named(type_: str, name: str, **parameters) -> dict:
    return connect_schema(type_, name, parameters or None)


VARIABLE_SCALE_DECIMAL = connect_schema(
    "struct", "io.debezium.data.VariableScaleDecimal", doc="Variable scaled decimal",
    fields=[{"type": "int32", "optional": False, "field": "scale"},
            {"type": "bytes", "optional": False, "field": "value"}])
MOOD = {"allowed": "sad,meh,ok,happy"}  # enumsortorder, not alphabetical
# the Value schema's field of each column under the default modes (JsonConverter's form, without "field")
EXPECTED_SCHEMAS = {
    "id": connect_schema("int32", optional=False),
    "c_bool": connect_schema("boolean"), "c_int2": connect_schema("int16"), "c_int4": connect_schema("int32"),
    "c_int8": connect_schema("int64"), "c_oid": connect_schema("int64"), "c_float4": connect_schema("float"),
    "c_float8": connect_schema("double"),
    "c_numeric": VARIABLE_SCALE_DECIMAL,
    "c_numeric_p": decimal(2, 10), "c_numeric_p0": decimal(0, 5), "c_money": decimal(2),
    "c_numeric_big": VARIABLE_SCALE_DECIMAL, "c_numeric_wide": decimal(5, 40),
    "c_char": connect_schema("string"), "c_varchar": connect_schema("string"), "c_text": connect_schema("string"),
    "c_name": connect_schema("string"), "c_qchar": connect_schema("string"), "c_bytea": connect_schema("bytes"),
    "c_date": named("int32", "io.debezium.time.Date"), "c_time": named("int64", "io.debezium.time.MicroTime"),
    "c_time3": named("int32", "io.debezium.time.Time"), "c_timetz": named("string", "io.debezium.time.ZonedTime"),
    "c_timestamp": named("int64", "io.debezium.time.MicroTimestamp"),
    "c_timestamp3": named("int64", "io.debezium.time.Timestamp"),
    "c_timestamptz": named("string", "io.debezium.time.ZonedTimestamp"),
    "c_timestamptz0": named("string", "io.debezium.time.ZonedTimestamp"),
    "c_interval": named("int64", "io.debezium.time.MicroDuration"),
    "c_uuid": named("string", "io.debezium.data.Uuid"), "c_json": named("string", "io.debezium.data.Json"),
    "c_jsonb": named("string", "io.debezium.data.Json"), "c_xml": named("string", "io.debezium.data.Xml"),
    "c_inet": connect_schema("string"), "c_cidr": connect_schema("string"), "c_macaddr": connect_schema("string"),
    "c_macaddr8": connect_schema("string"),
    "c_bit1": connect_schema("boolean"), "c_bit10": named("bytes", "io.debezium.data.Bits", length="10"),
    "c_varbit": named("bytes", "io.debezium.data.Bits", length="2147483647"),
    "c_varbit5": named("bytes", "io.debezium.data.Bits", length="5"),
    **{f"c_{r}": connect_schema("string") for r in ("int4range", "int8range", "numrange", "tsrange", "tstzrange",
                                                     "daterange")},
    "c_tsvector": named("string", "io.debezium.data.Tsvector"),
    "c_mood": named("string", "io.debezium.data.Enum", **MOOD), "c_price": decimal(3, 8),  # the domain's numeric
    "c_short": connect_schema("string"), "c_hstore": named("string", "io.debezium.data.Json"),
    "c_citext": connect_schema("string"), "c_ltree": named("string", "io.debezium.data.Ltree"),
    "c_int_arr": array_of(connect_schema("int32")), "c_text_arr": array_of(connect_schema("string")),
    "c_numeric_arr": array_of(decimal(2, 6)),
    # Debezium builds an enum array's items as Enum.builder(values): not optional
    "c_mood_arr": array_of(connect_schema("string", "io.debezium.data.Enum", MOOD, optional=False)),
    "c_tstz_arr": array_of(named("string", "io.debezium.time.ZonedTimestamp")),
    "c_date_arr": array_of(named("int32", "io.debezium.time.Date")),
    "c_bytea_arr": array_of(connect_schema("bytes")),
    "c_point": connect_schema(
        "struct", "io.debezium.data.geometry.Point", doc="Geometry (POINT)",
        fields=[{"type": "double", "optional": False, "field": "x"},
                {"type": "double", "optional": False, "field": "y"},
                {"type": "bytes", "optional": True, "field": "wkb"},
                {"type": "int32", "optional": True, "field": "srid"}]),
    "c_required": connect_schema("string", optional=False),
}
OTHER_MODES_SCHEMAS = {
    **{name: connect_schema("string") for name in ("c_numeric", "c_numeric_p", "c_numeric_p0", "c_money", "c_price",
                                                    "c_numeric_big", "c_numeric_wide",
                                                    "c_bytea", "c_lsn")},
    "c_date": named("int32", "org.apache.kafka.connect.data.Date"),
    "c_time": named("int32", "org.apache.kafka.connect.data.Time"),
    "c_time3": named("int32", "org.apache.kafka.connect.data.Time"),
    "c_timestamp": named("int64", "org.apache.kafka.connect.data.Timestamp"),
    "c_timestamp3": named("int64", "org.apache.kafka.connect.data.Timestamp"),
    "c_interval": named("string", "io.debezium.time.Interval"),
    "c_hstore": connect_schema("map", keys={"type": "string", "optional": False},
                               values={"type": "string", "optional": True}),
    "c_numeric_arr": array_of(connect_schema("string")),
    "c_date_arr": array_of(named("int32", "org.apache.kafka.connect.data.Date")),
    "c_bytea_arr": array_of(connect_schema("string")),
}
DOUBLE_SCHEMAS = {
    **{name: connect_schema("double") for name in ("c_numeric", "c_numeric_p", "c_numeric_p0", "c_money", "c_price",
                                                    "c_numeric_big", "c_numeric_wide")},
    "c_numeric_arr": array_of(connect_schema("double")),
}
# binary.handling.mode=base64-url-safe, time.precision.mode=adaptive_time_microseconds, money.fraction.digits=3
MICROSECOND_MODES = {"binary.handling.mode": "base64-url-safe", "time.precision.mode": "adaptive_time_microseconds",
                     "money.fraction.digits": "3"}
MICROSECOND_CHANGED = {
    "c_bytea": "AP8Q", "c_bytea_arr": ["Af8="],  # as base64: no '+' or '/' to tell them apart
    "c_time3": 47655123000,  # every time column is a MicroTime
    "c_money": unscaled(-1234560),
}
MICROSECOND_SCHEMAS = {
    "c_bytea": connect_schema("string"), "c_bytea_arr": array_of(connect_schema("string")),
    "c_time3": named("int64", "io.debezium.time.MicroTime"),
    "c_money": decimal(3),
}
