"""Every type end to end on the real server: a table with a column of each type, rows inserted, read back through
ReplicationStream (pgoutput text values), mapped with the catalog's types and nullability, and written as
JsonConverter payloads, compared with the values Debezium's documentation gives for each type."""

from __future__ import annotations

import base64
import json
import time
from datetime import date

import pytest

from connectors.events.json_converter import schema_json, value_json
from connectors.postgres import pgoutput as p
from connectors.postgres.catalog import table_columns
from connectors.postgres.replication import ReplicationStream
from connectors.postgres.rows import RowColumn, RowMapper
from connectors.postgres.types import TypeSettings

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

ROW_1 = """
INSERT INTO all_types VALUES (
  1, true, -32768, 2147483647, -9223372036854775808, 4294967295, 1.5, 1e-7,
  12345.6700, 1234.5, 42, -1234.56,
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
ROW_2 = "INSERT INTO all_types (id, c_required) VALUES (2, '')"


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
    "c_required": "required",
}
# money[], point and pg_lsn have no Debezium schema: the columns are left out of the events
LEFT_OUT = {"c_money_arr", "c_point", "c_lsn"}


def read_transactions(stream: ReplicationStream, count: int, timeout: float = 30.0) -> list[p.Message]:
    seen: list[p.Message] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen.extend(wal.message for wal in stream.read(timeout=0.5))
        if sum(isinstance(m, p.Commit) for m in seen) >= count:
            return seen
    raise AssertionError(f"fewer than {count} transactions within {timeout}s: {seen}")


@pytest.fixture
def captured(pg_db):
    """(catalog columns, Relation message, inserted tuples) of ROW_1 and ROW_2 read from the slot."""
    conn = pg_db.connect()
    with conn.cursor() as cur:
        cur.execute(DDL)
    stream = ReplicationStream(pg_db.dsn, pg_db.name + "_types", ["pub"])
    try:
        stream.start(stream.create_slot(export_snapshot=False).consistent_point)
        with conn.cursor() as cur:
            cur.execute(ROW_1)
            cur.execute(ROW_2)
        messages = read_transactions(stream, 2)
    finally:
        stream.close()
    relation = next(m for m in messages if isinstance(m, p.Relation))
    with conn.cursor() as cur:
        columns = table_columns(cur, relation.relation_id)
    conn.close()
    inserts = [m.new for m in messages if isinstance(m, p.Insert)]
    return columns, relation, inserts


def mapper(columns, settings: TypeSettings) -> RowMapper:
    row_columns = [RowColumn(c.name, c.type, optional=not c.not_null) for c in columns]
    return RowMapper("test.public.all_types.Value", row_columns, settings)


def test_every_type_as_debezium_writes_it(captured):
    columns, relation, (row_1, row_2) = captured
    assert [(c.name, c.type_oid, c.type_modifier) for c in relation.columns] == [
        (c.name, c.type.oid, c.type.type_modifier) for c in columns
    ]
    assert [c.primary_key_position for c in columns if c.primary_key_position] == [1]
    rows = mapper(columns, TypeSettings())
    assert set(c.name for c in columns) - set(rows.column_names) == LEFT_OUT
    payload = json.loads(value_json(rows.schema, rows.value(row_1)))
    assert payload == EXPECTED_DEFAULT
    for name, expected in EXPECTED_DEFAULT.items():  # one by one too, so a failure names the column
        assert payload[name] == expected, name
    nulls = json.loads(value_json(rows.schema, rows.value(row_2)))
    assert nulls == {name: (2 if name == "id" else "" if name == "c_required" else None) for name in EXPECTED_DEFAULT}


def test_schemas_of_the_real_columns(captured):
    columns, _, _ = captured
    fields = {f["field"]: f for f in json.loads(schema_json(mapper(columns, TypeSettings()).schema))["fields"]}
    assert fields["id"] == {"type": "int32", "optional": False, "field": "id"}
    assert fields["c_required"] == {"type": "string", "optional": False, "field": "c_required"}
    assert fields["c_float4"]["type"] == "float" and fields["c_float8"]["type"] == "double"
    assert fields["c_mood"]["parameters"] == {"allowed": "sad,meh,ok,happy"}  # enumsortorder, not alphabetical
    assert fields["c_price"]["parameters"] == {"scale": "3", "connect.decimal.precision": "8"}  # from the domain
    assert fields["c_numeric_p"]["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    assert fields["c_numeric"]["name"] == "io.debezium.data.VariableScaleDecimal"
    assert fields["c_bit10"]["parameters"] == {"length": "10"} and fields["c_varbit"]["parameters"] == {
        "length": "2147483647"
    }
    expected_names = {
        "c_date": "io.debezium.time.Date", "c_time": "io.debezium.time.MicroTime", "c_time3": "io.debezium.time.Time",
        "c_timetz": "io.debezium.time.ZonedTime", "c_timestamp": "io.debezium.time.MicroTimestamp",
        "c_timestamp3": "io.debezium.time.Timestamp", "c_timestamptz": "io.debezium.time.ZonedTimestamp",
        "c_interval": "io.debezium.time.MicroDuration", "c_uuid": "io.debezium.data.Uuid",
        "c_json": "io.debezium.data.Json", "c_jsonb": "io.debezium.data.Json", "c_xml": "io.debezium.data.Xml",
        "c_hstore": "io.debezium.data.Json", "c_ltree": "io.debezium.data.Ltree", "c_mood": "io.debezium.data.Enum",
        "c_tsvector": "io.debezium.data.Tsvector", "c_money": "org.apache.kafka.connect.data.Decimal",
    }
    assert {name: fields[name].get("name") for name in expected_names} == expected_names
    assert fields["c_tstz_arr"]["items"] == {
        "type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "version": 1
    }


def test_every_type_under_the_other_modes(captured):
    columns, _, (row_1, _) = captured
    settings = TypeSettings(
        decimal_handling_mode="string", time_precision_mode="connect", binary_handling_mode="hex",
        interval_handling_mode="string", hstore_handling_mode="map", include_unknown_datatypes=True,
    )
    rows = mapper(columns, settings)
    payload = json.loads(value_json(rows.schema, rows.value(row_1)))
    changed = {
        "c_numeric": "12345.6700", "c_numeric_p": "1234.50", "c_numeric_p0": "42", "c_money": "-1234.56",
        "c_price": "12.500", "c_numeric_arr": ["1.50", "2.00"],
        "c_time": 47655123, "c_time3": 47655123, "c_timestamp": 1529507596945, "c_timestamp3": 1529507596945,
        "c_bytea": "00ff10", "c_bytea_arr": ["01ff"], "c_interval": "P1Y2M3DT4H5M6.78S",
        "c_hstore": {"a": "1", "b": None},
        "c_point": b"(1,2)".hex(), "c_lsn": b"0/16B3748".hex(),
    }
    assert payload == {**EXPECTED_DEFAULT, **changed}
    double = mapper(columns, TypeSettings(decimal_handling_mode="double"))
    doubles = json.loads(value_json(double.schema, double.value(row_1)))
    assert (doubles["c_numeric"], doubles["c_money"], doubles["c_price"]) == (12345.67, -1234.56, 12.5)
