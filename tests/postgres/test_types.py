"""Debezium's PostgreSQL type mapping, per type and per handling mode, from pgoutput's text values (no server).

Expected values follow Debezium's documentation of the PostgreSQL connector's data types (e.g. TIMESTAMP
'2018-06-20 15:13:16.945104' → MicroTimestamp 1529507596945104) and are computed here independently of the code
under test where they can be (datetime for epoch days/micros, int.to_bytes for unscaled decimals).
"""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, date, datetime

import pytest

from connectors.events.json_converter import schema_json, value_json
from connectors.postgres import types as t
from connectors.postgres.pgoutput import UNCHANGED_TOAST
from connectors.postgres.rows import RowColumn, RowMapper
from connectors.postgres.temporal import zoned_timestamp_text
from connectors.postgres.types import ColumnType, TypeMappingError, TypeSettings, builtin, column_mapping

DEFAULT = TypeSettings()
VSD = "io.debezium.data.VariableScaleDecimal"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unscaled(n: int) -> str:
    return b64(n.to_bytes((n + (n < 0)).bit_length() // 8 + 1, "big", signed=True))


def numeric_typmod(precision: int, scale: int) -> int:
    return ((precision << 16) | scale) + 4


def epoch_days(d: date) -> int:
    return (d - date(1970, 1, 1)).days


def epoch_micros(dt: datetime) -> int:
    delta = dt.replace(tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def mapped(column_type: ColumnType, text: str, settings: TypeSettings = DEFAULT):
    mapping = column_mapping(column_type, settings)
    assert mapping is not None
    schema = json.loads(schema_json(mapping.schema))
    return schema, json.loads(value_json(mapping.schema, mapping.convert(text)))


CASES = [
    # (column type, text, schema type, schema name, JSON value)
    (builtin(t.BOOL), "t", "boolean", None, True),
    (builtin(t.BOOL), "f", "boolean", None, False),
    (builtin(t.INT2), "-32768", "int16", None, -32768),
    (builtin(t.INT4), "2147483647", "int32", None, 2147483647),
    (builtin(t.INT8), "-9223372036854775808", "int64", None, -9223372036854775808),
    (builtin(t.OID), "4294967295", "int64", None, 4294967295),
    (builtin(t.FLOAT4), "1.5", "float", None, 1.5),
    (builtin(t.FLOAT8), "1e-07", "double", None, 1e-07),
    (builtin(t.FLOAT8), "NaN", "double", None, "NaN"),
    (builtin(t.FLOAT8), "-Infinity", "double", None, "-Infinity"),
    (builtin(t.BPCHAR, 7), "ab ", "string", None, "ab "),
    (builtin(t.VARCHAR, 14), "héllo", "string", None, "héllo"),
    (builtin(t.TEXT), "line\nbreak", "string", None, "line\nbreak"),
    (builtin(t.NAME), "pg_class", "string", None, "pg_class"),
    (builtin(t.CHAR), "x", "string", None, "x"),
    (builtin(t.BYTEA), "\\x00ff10", "bytes", None, b64(b"\x00\xff\x10")),
    (builtin(t.JSON), '{"a": [1, 2]}', "string", "io.debezium.data.Json", '{"a": [1, 2]}'),
    (builtin(t.JSONB), '{"a": 2, "b": 1}', "string", "io.debezium.data.Json", '{"a": 2, "b": 1}'),
    (builtin(t.XML), "<a>x</a>", "string", "io.debezium.data.Xml", "<a>x</a>"),
    (builtin(t.UUID), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "string", "io.debezium.data.Uuid",
     "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    (builtin(t.INET), "192.168.0.1/24", "string", None, "192.168.0.1/24"),
    (builtin(t.CIDR), "10.0.0.0/8", "string", None, "10.0.0.0/8"),
    (builtin(t.MACADDR), "08:00:2b:01:02:03", "string", None, "08:00:2b:01:02:03"),
    (builtin(t.MACADDR8), "08:00:2b:01:02:03:04:05", "string", None, "08:00:2b:01:02:03:04:05"),
    (builtin(t.INT4RANGE), "[1,10)", "string", None, "[1,10)"),
    (builtin(t.TSTZRANGE), '["2020-01-01 00:00:00+00",)', "string", None, '["2020-01-01 00:00:00+00",)'),
    (builtin(t.DATERANGE), "[2020-01-01,2020-02-01)", "string", None, "[2020-01-01,2020-02-01)"),
    (builtin(t.TSVECTOR), "'a' 'cat' 'fat'", "string", "io.debezium.data.Tsvector", "'a' 'cat' 'fat'"),
    (builtin(t.BIT, 1), "1", "boolean", None, True),
    (builtin(t.BIT, 10), "1000000001", "bytes", "io.debezium.data.Bits", b64((513).to_bytes(2, "little"))),
    (builtin(t.VARBIT), "101", "bytes", "io.debezium.data.Bits", b64(b"\x05")),
    (builtin(t.VARBIT, 5), "00000", "bytes", "io.debezium.data.Bits", ""),
    (builtin(t.NUMERIC, numeric_typmod(10, 2)), "1234.50", "bytes", "org.apache.kafka.connect.data.Decimal",
     unscaled(123450)),
    (builtin(t.NUMERIC, numeric_typmod(5, 0)), "42", "bytes", "org.apache.kafka.connect.data.Decimal", unscaled(42)),
    (builtin(t.NUMERIC), "12345.6700", "struct", "io.debezium.data.VariableScaleDecimal",
     {"scale": 2, "value": unscaled(1234567)}),
    (builtin(t.NUMERIC), "100", "struct", VSD, {"scale": 0, "value": unscaled(100)}),
    (builtin(t.NUMERIC), "-0.000", "struct", VSD, {"scale": 0, "value": unscaled(0)}),
    (builtin(t.MONEY), "-$1,234.56", "bytes", "org.apache.kafka.connect.data.Decimal", unscaled(-123456)),
    (builtin(t.MONEY), "$0.07", "bytes", "org.apache.kafka.connect.data.Decimal", unscaled(7)),
    (builtin(t.DATE), "2024-02-29", "int32", "io.debezium.time.Date", epoch_days(date(2024, 2, 29))),
    (builtin(t.DATE), "0001-01-01", "int32", "io.debezium.time.Date", epoch_days(date(1, 1, 1))),
    (builtin(t.DATE), "0001-12-31 BC", "int32", "io.debezium.time.Date", epoch_days(date(1, 1, 1)) - 1),
    (builtin(t.TIME), "13:14:15.123456", "int64", "io.debezium.time.MicroTime", 47655123456),
    (builtin(t.TIME, 3), "13:14:15.123", "int32", "io.debezium.time.Time", 47655123),
    (builtin(t.TIME, 0), "24:00:00", "int32", "io.debezium.time.Time", 86400000),
    (builtin(t.TIMESTAMP), "2018-06-20 15:13:16.945104", "int64", "io.debezium.time.MicroTimestamp", 1529507596945104),
    (builtin(t.TIMESTAMP, 3), "2018-06-20 15:13:16.945", "int64", "io.debezium.time.Timestamp", 1529507596945),
    (builtin(t.TIMESTAMP), "infinity", "int64", "io.debezium.time.MicroTimestamp", 9223372036825200000),
    (builtin(t.TIMESTAMP), "-infinity", "int64", "io.debezium.time.MicroTimestamp", -9223372036832400000),
    (builtin(t.TIMESTAMP), "1900-01-01 00:00:00", "int64", "io.debezium.time.MicroTimestamp",
     epoch_micros(datetime(1900, 1, 1))),
    (builtin(t.TIMESTAMPTZ), "2018-06-20 15:13:16.945104+02", "string", "io.debezium.time.ZonedTimestamp",
     "2018-06-20T13:13:16.945104Z"),
    (builtin(t.TIMESTAMPTZ), "2018-06-20 15:13:16.5+05:30", "string", "io.debezium.time.ZonedTimestamp",
     "2018-06-20T09:43:16.500000Z"),
    (builtin(t.TIMESTAMPTZ, 0), "2018-06-20 15:13:16+00", "string", "io.debezium.time.ZonedTimestamp",
     "2018-06-20T15:13:16Z"),
    (builtin(t.TIMESTAMPTZ, 3), "2018-06-20 00:30:00.1-01", "string", "io.debezium.time.ZonedTimestamp",
     "2018-06-20T01:30:00.100Z"),
    (builtin(t.TIMESTAMPTZ), "infinity", "string", "io.debezium.time.ZonedTimestamp", "infinity"),
    (builtin(t.TIMESTAMPTZ), "2018-06-20 15:13:16.50+00", "string", "io.debezium.time.ZonedTimestamp",
     "2018-06-20T15:13:16.500000Z"),
    (builtin(t.TIMESTAMPTZ, 3), "0044-03-15 12:00:00.123456+00", "string", "io.debezium.time.ZonedTimestamp",
     "0044-03-15T12:00:00.123Z"),
    (builtin(t.TIMESTAMPTZ, 0), "0044-03-15 12:00:00+00 BC", "string", "io.debezium.time.ZonedTimestamp",
     "-0043-03-15T12:00:00Z"),
    (builtin(t.TIMETZ), "13:14:15.5+02", "string", "io.debezium.time.ZonedTime", "11:14:15.5Z"),
    (builtin(t.TIMETZ), "01:00:00-08", "string", "io.debezium.time.ZonedTime", "09:00:00Z"),
    (builtin(t.INTERVAL), "1 year 2 mons 3 days 04:05:06.78", "int64", "io.debezium.time.MicroDuration",
     # ((14 months x 365.25/12 + 3 days) x 86400 + 14706.78 s) in microseconds
     37091106780000),
    (builtin(t.INTERVAL), "-00:00:01.5", "int64", "io.debezium.time.MicroDuration", -1500000),
]


@pytest.mark.parametrize(("column_type", "text", "schema_type", "name", "expected"), CASES)
def test_default_mapping(column_type, text, schema_type, name, expected):
    schema, value = mapped(column_type, text)
    assert schema["type"] == schema_type
    assert schema.get("name") == name
    assert schema["optional"] is True
    assert value == expected


def test_schema_parameters_and_versions():
    decimal = json.loads(schema_json(column_mapping(builtin(t.NUMERIC, numeric_typmod(10, 2)), DEFAULT).schema))
    assert decimal["version"] == 1
    assert decimal["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    money = json.loads(schema_json(column_mapping(builtin(t.MONEY), DEFAULT).schema))
    assert money["parameters"] == {"scale": "2"}
    assert json.loads(schema_json(column_mapping(builtin(t.BIT, 10), DEFAULT).schema))["parameters"] == {"length": "10"}
    assert json.loads(schema_json(column_mapping(builtin(t.VARBIT), DEFAULT).schema))["parameters"] == {
        "length": "2147483647"
    }
    required = column_mapping(builtin(t.INT4), DEFAULT, optional=False)
    assert schema_json(required.schema) == '{"type":"int32","optional":false}'


def test_enum_domain_and_extension_types():
    mood = ColumnType(16400, -1, "mood", "e", enum_labels=("sad", "meh", "ok", "happy"))
    schema, value = mapped(mood, "ok")
    assert schema == {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
                      "parameters": {"allowed": "sad,meh,ok,happy"}}
    assert value == "ok"
    price = ColumnType(16500, -1, "price", "d", base=builtin(t.NUMERIC, numeric_typmod(8, 3)))
    schema, value = mapped(price, "12.500")
    assert schema["parameters"] == {"scale": "3", "connect.decimal.precision": "8"} and value == unscaled(12500)
    hstore = ColumnType(16600, -1, "hstore")
    schema, value = mapped(hstore, '"a"=>"1", "b"=>NULL, "q\\"k"=>"x y"')
    assert schema["name"] == "io.debezium.data.Json"
    assert json.loads(value) == {"a": "1", "b": None, 'q"k': "x y"}
    schema, value = mapped(hstore, '"a"=>"1", "b"=>NULL', TypeSettings(hstore_handling_mode="map"))
    assert schema["type"] == "map" and schema["values"] == {"type": "string", "optional": True}
    assert value == {"a": "1", "b": None}
    assert mapped(ColumnType(16700, -1, "citext"), "MiXeD") == ({"type": "string", "optional": True}, "MiXeD")
    assert mapped(ColumnType(16800, -1, "ltree"), "Top.Science")[0]["name"] == "io.debezium.data.Ltree"


def test_result_oid_is_a_domains_base_type():
    """What a query's row description reports, for which snapshots register their text loader."""
    price = ColumnType(16500, -1, "price", "d", base=builtin(t.NUMERIC, numeric_typmod(8, 3)))
    nested = ColumnType(16501, -1, "nested", "d", base=price)
    assert (price.result_oid, nested.result_oid) == (t.NUMERIC, t.NUMERIC)
    assert builtin(t.DATE).result_oid == t.DATE and ColumnType(16400, -1, "mood", "e").result_oid == 16400


def test_arrays():
    schema, value = mapped(builtin(1007), "{1,NULL,3}")
    assert schema == {"type": "array", "items": {"type": "int32", "optional": True}, "optional": True}
    assert value == [1, None, 3]
    assert mapped(builtin(1009), '{"a b","c\\"d",NULL,"NULL"}')[1] == ["a b", 'c"d', None, "NULL"]
    assert mapped(builtin(1231, numeric_typmod(6, 2)), "{1.50,2.00}")[1] == [unscaled(150), unscaled(200)]
    assert mapped(builtin(1185), '{"2018-06-20 15:13:16.945104+02"}')[1] == ["2018-06-20T13:13:16.945104Z"]
    assert mapped(builtin(1182), "{2024-02-29}")[1] == [epoch_days(date(2024, 2, 29))]
    assert mapped(builtin(1001), '{"\\\\x01ff"}')[1] == [b64(b"\x01\xff")]
    assert mapped(builtin(1007), "{}")[1] == []
    assert mapped(builtin(1007), "[0:1]={7,8}")[1] == [7, 8]
    mood = ColumnType(16400, -1, "mood", "e", enum_labels=("sad", "happy"))
    mood_array = ColumnType(16401, -1, "_mood", "b", element=mood)
    schema, value = mapped(mood_array, "{sad,happy}")
    assert schema["items"]["optional"] is False  # as Debezium builds enum arrays
    assert value == ["sad", "happy"]
    for unsupported in (791, 1003, 1187, 1563, 143, 1017):  # money[], name[], interval[], varbit[], xml[], point[]
        assert column_mapping(builtin(unsupported), DEFAULT) is None
        assert column_mapping(builtin(unsupported), TypeSettings(include_unknown_datatypes=True)) is None


def test_decimal_handling_modes():
    double, string = TypeSettings(decimal_handling_mode="double"), TypeSettings(decimal_handling_mode="string")
    assert mapped(builtin(t.NUMERIC), "12345.6700", double) == ({"type": "double", "optional": True}, 12345.67)
    assert mapped(builtin(t.NUMERIC), "12345.6700", string) == ({"type": "string", "optional": True}, "12345.6700")
    assert mapped(builtin(t.NUMERIC), "NaN", string)[1] == "NAN"
    assert mapped(builtin(t.NUMERIC), "Infinity", string)[1] == "POSITIVE_INFINITY"
    assert mapped(builtin(t.NUMERIC), "NaN", double)[1] == "NaN"
    assert mapped(builtin(t.MONEY), "-$1,234.56", double)[1] == -1234.56
    assert mapped(builtin(t.MONEY), "-$1,234.56", string)[1] == "-1234.56"
    money3 = TypeSettings(money_fraction_digits=3)
    assert mapped(builtin(t.MONEY), "$1.50", money3)[1] == unscaled(1500)
    # precise: as Debezium, null with a warning; a NOT NULL column cannot hold it
    assert column_mapping(builtin(t.NUMERIC), DEFAULT, column="price").convert("NaN") is None
    mapping = column_mapping(builtin(t.NUMERIC), DEFAULT, optional=False, column="price")
    with pytest.raises(TypeMappingError, match="column price holds NaN.*decimal.handling.mode.*NOT NULL"):
        mapping.convert("NaN")


def test_time_precision_modes():
    micro = TypeSettings(time_precision_mode="adaptive_time_microseconds")
    connect = TypeSettings(time_precision_mode="connect")
    assert mapped(builtin(t.TIME, 3), "13:14:15.123", micro)[0]["name"] == "io.debezium.time.MicroTime"
    assert mapped(builtin(t.TIME, 3), "13:14:15.123", micro)[1] == 47655123000
    assert mapped(builtin(t.TIMESTAMP, 3), "2018-06-20 15:13:16.945", micro)[0]["name"] == "io.debezium.time.Timestamp"
    schema, value = mapped(builtin(t.DATE), "2024-02-29", connect)
    assert schema["name"] == "org.apache.kafka.connect.data.Date" and value == epoch_days(date(2024, 2, 29))
    schema, value = mapped(builtin(t.TIME), "13:14:15.123456", connect)
    assert (schema["type"], schema["name"], value) == ("int32", "org.apache.kafka.connect.data.Time", 47655123)
    schema, value = mapped(builtin(t.TIMESTAMP), "2018-06-20 15:13:16.945104", connect)
    assert (schema["type"], schema["name"]) == ("int64", "org.apache.kafka.connect.data.Timestamp")
    assert value == 1529507596945
    # zone-aware types do not depend on the mode
    assert mapped(builtin(t.TIMESTAMPTZ), "2018-06-20 15:13:16+00", connect)[1] == "2018-06-20T15:13:16.000000Z"


def test_binary_and_interval_modes():
    for mode, expected in (("base64", "AP8Q"), ("base64-url-safe", "AP8Q"), ("hex", "00ff10")):
        schema, value = mapped(builtin(t.BYTEA), "\\x00ff10", TypeSettings(binary_handling_mode=mode))
        assert (schema["type"], value) == ("string", expected)
    assert mapped(builtin(t.BYTEA), "\\xfbff", TypeSettings(binary_handling_mode="base64-url-safe"))[1] == "-_8="
    string = TypeSettings(interval_handling_mode="string")
    schema, value = mapped(builtin(t.INTERVAL), "1 year 2 mons 3 days 04:05:06.78", string)
    assert (schema["name"], value) == ("io.debezium.time.Interval", "P1Y2M3DT4H5M6.78S")
    assert mapped(builtin(t.INTERVAL), "-1 years -2 mons +3 days -04:05:06", string)[1] == "P-1Y-2M3DT-4H-5M-6S"
    assert mapped(builtin(t.INTERVAL), "00:00:00", string)[1] == "P0Y0M0DT0H0M0S"


def test_unknown_types():
    pg_lsn = ColumnType(3220, -1, "pg_lsn")
    assert column_mapping(pg_lsn, DEFAULT) is None
    schema, value = mapped(pg_lsn, "0/16B3748", TypeSettings(include_unknown_datatypes=True))
    assert (schema["type"], value) == ("bytes", b64(b"0/16B3748"))


def test_settings_are_validated_with_the_property_named():
    with pytest.raises(TypeMappingError, match="decimal.handling.mode='exact'"):
        TypeSettings(decimal_handling_mode="exact")
    with pytest.raises(TypeMappingError, match="time.precision.mode"):
        TypeSettings.from_properties({"time.precision.mode": "nanos"})
    with pytest.raises(TypeMappingError, match="include.unknown.datatypes"):
        TypeSettings.from_properties({"include.unknown.datatypes": "yes"})
    with pytest.raises(TypeMappingError, match="money.fraction.digits"):
        TypeSettings.from_properties({"money.fraction.digits": "two"})
    assert TypeSettings.from_properties({"binary.handling.mode": "hex"}).binary_handling_mode == "hex"


def test_row_mapper_skips_unmapped_columns_and_fills_unchanged_toast(caplog):
    columns = [
        RowColumn("id", builtin(t.INT4), optional=False),
        RowColumn("body", builtin(t.TEXT)),
        RowColumn("blob", builtin(t.BYTEA)),
        RowColumn("area", ColumnType(603, name="box")),
        RowColumn("tags", builtin(1009)),
    ]
    with caplog.at_level("WARNING", logger="connectors.postgres.rows"):
        rows = RowMapper("p.public.t.Value", columns, DEFAULT, table="public.t")
    assert rows.column_names == ["id", "body", "blob", "tags"]
    assert [r.getMessage() for r in caplog.records] == [
        "column public.t.area of type box is left out of the change events: set include.unknown.datatypes=true to "
        "carry its text as bytes, or name it in column.exclude.list to leave it out without this warning"]
    value = rows.value(("1", UNCHANGED_TOAST, UNCHANGED_TOAST, "(1,2),(0,0)", UNCHANGED_TOAST))
    assert value == {"id": 1, "body": "__debezium_unavailable_value", "blob": b"__debezium_unavailable_value",
                     "tags": ["__debezium_unavailable_value"]}
    text = value_json(rows.schema, value)
    assert json.loads(text)["blob"] == b64(b"__debezium_unavailable_value")
    with pytest.raises(TypeMappingError, match="p.public.t.Value.id: cannot convert 'x'"):
        rows.value(("x", None, None, None, None))


def test_row_mapper_applies_the_column_rules():
    from connectors.core.columns import ColumnRules

    domain = ColumnType(90001, name="label", kind="d", base=builtin(t.TEXT))
    columns = [RowColumn("id", builtin(t.INT4), False), RowColumn("secret", builtin(t.TEXT)),
               RowColumn("body", builtin(t.TEXT)), RowColumn("doc", builtin(t.JSON)),
               RowColumn("title", builtin(t.VARCHAR)), RowColumn("tag", domain), RowColumn("ref", builtin(t.UUID))]
    rules = ColumnRules(exclude=(r"public\.t\.secret",), masks={r"public\.t\.(body|ref)": 3},
                        truncates={r"public\.t\..*": 2})
    rows = RowMapper("p.public.t.Value", columns, DEFAULT, column_rules=rules, table="public.t")
    assert rows.column_names == ["id", "body", "doc", "title", "tag", "ref"] and rows.positions == {0, 2, 3, 4, 5, 6}
    fields = {f.name: f.schema for f in rows.schema.fields}
    assert (fields["ref"].name, fields["doc"].name) == (None, "io.debezium.data.Json")  # a mask's schema is plain
    uuid = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert rows.value(("1", "s", "text", '{"a": 1}', "title", "tagged", uuid)) == {
        "id": 1, "body": "***", "doc": '{"a": 1}', "title": "ti", "tag": "ta", "ref": "***"}
    toast = rows.value(("1", None, UNCHANGED_TOAST, UNCHANGED_TOAST, UNCHANGED_TOAST, None, None))
    assert toast == {"id": 1, "body": "***", "doc": "__debezium_unavailable_value",
                     "title": "__debezium_unavailable_value", "tag": None, "ref": None}


def test_row_mapper_marks_the_schemas_of_the_columns_a_rule_changes():
    """Debezium's column mappers' parameters: `masked` for a mask or hash, `truncateLength` for a truncation that can
    cut (the declared length unknown or longer), for the rule whose value change is applied here; the key schema takes
    the row's fields."""
    from connectors.core.columns import ColumnHash, ColumnRules
    from connectors.secrets import Secret

    mood = ColumnType(90002, name="mood", kind="e", enum_labels=("ok", "sad"))
    columns = [RowColumn("id", builtin(t.VARCHAR, 10 + 4), False), RowColumn("body", builtin(t.TEXT)),
               RowColumn("code", builtin(t.VARCHAR, 3 + 4)), RowColumn("name", builtin(t.VARCHAR, 8 + 4)),
               RowColumn("doc", builtin(t.JSON)), RowColumn("mood", mood), RowColumn("n", builtin(t.INT4)),
               RowColumn("hashed", builtin(t.BPCHAR, 6 + 4)), RowColumn("xml", builtin(t.XML))]
    rules = ColumnRules(masks={r"public\.t\.(id|mood)": 3}, truncates={r"public\.t\..*": 3},
                        hashes=(ColumnHash("SHA-256", Secret("s"), 1, (r"public\.t\.(hashed|n|doc)",)),))
    rows = RowMapper("p.public.t.Value", columns, DEFAULT, column_rules=rules, table="public.t")
    params = {f.name: f.schema.params for f in rows.schema.fields}
    assert params == {"id": {"masked": "true"}, "body": {"truncateLength": "3"}, "code": {},
                      "name": {"truncateLength": "3"}, "doc": {}, "mood": {"masked": "true"}, "n": {},
                      "hashed": {"masked": "true"}, "xml": {"truncateLength": "3"}}
    fields = {f.name: f.schema for f in rows.schema.fields}
    assert fields["mood"].name is None  # a masked enum is a plain string, no longer io.debezium.data.Enum
    assert json.loads(schema_json(rows.schema))["fields"][0] == {
        "type": "string", "optional": False, "parameters": {"masked": "true"}, "field": "id"}
    value = rows.value(("k", "text", "abc", "abcdefgh", '{"a": 1}', "ok", "5", "abc   ", "<a/>"))
    assert value["id"] == "***" and value["body"] == "tex" and value["doc"] == '{"a": 1}' and value["n"] == 5
    assert len(value["hashed"]) == 6 and value["xml"] == "<a/"


@pytest.mark.parametrize("width", [None, 0, 1, 3, 6, 9])
def test_zoned_timestamps_in_utc_read_as_text_match_the_arithmetic(width):
    """A server in UTC sends `…+00`; those are rewritten as text. The same instants with the offset written as
    `-00` (same instant, parsed and computed) must come out the same."""
    rng = random.Random(width)
    for _ in range(2000):
        fraction = rng.choice(["", "." + f"{rng.randrange(10**6):06d}"[:rng.randint(1, 6)]])
        text = (f"{rng.randint(1, 9999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}{fraction}")
        for zone in ("+00", "+00:00", "+00:00:00"):
            computed = zoned_timestamp_text(text + zone.replace("+", "-"), width)
            assert zoned_timestamp_text(text + zone, width) == computed, (text + zone, width)
