"""Kafka Connect schema model and JsonConverter encoding (connectors.events)."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

from connectors.events import logical
from connectors.events import schema as s
from connectors.events.json_converter import (
    envelope,
    java_double,
    java_float,
    schema_json,
    string_json,
    unscaled_bytes,
    value_json,
)
from connectors.events.schema import SchemaError


def test_key_exactly_as_debezium_tutorial_prints_it():
    key = s.struct([("id", s.int32())], name="dbserver1.inventory.customers.Key")
    assert envelope(key, {"id": 1001}) == (
        '{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],'
        '"optional":false,"name":"dbserver1.inventory.customers.Key"},"payload":{"id":1001}}'
    )
    assert envelope(key, {"id": 1001}, schemas_enable=False) == '{"id":1001}'


def test_member_order_of_named_versioned_parameterised_schemas():
    price = logical.decimal(2, 10, optional=True)
    assert schema_json(s.struct([("price", price)], name="V")) == (
        '{"type":"struct","fields":[{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal",'
        '"version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"price"}],'
        '"optional":false,"name":"V"}'
    )
    assert schema_json(logical.variable_scale_decimal(optional=True)) == (
        '{"type":"struct","fields":[{"type":"int32","optional":false,"field":"scale"},'
        '{"type":"bytes","optional":false,"field":"value"}],"optional":true,'
        '"name":"io.debezium.data.VariableScaleDecimal","version":1,"doc":"Variable scaled decimal"}'
    )
    assert schema_json(logical.enum(["a", "b"])) == (
        '{"type":"string","optional":false,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"a,b"}}'
    )
    with_default = s.primitive("string", optional=True, name="io.debezium.data.Enum", version=1, default="false")
    assert schema_json(with_default).endswith('"version":1,"default":"false"}')


def test_arrays_and_maps():
    ints = s.array(s.int32(optional=True), optional=True)
    assert schema_json(ints) == '{"type":"array","items":{"type":"int32","optional":true},"optional":true}'
    assert value_json(ints, [1, None, 3]) == "[1,null,3]"
    by_name = s.map_(s.string(), s.string(optional=True))
    assert schema_json(by_name) == (
        '{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"string","optional":true},'
        '"optional":false}'
    )
    assert value_json(by_name, {"a": "1", "b": None}) == '{"a":"1","b":null}'
    by_int = s.map_(s.int16(), s.float64())
    assert value_json(by_int, {1: 0.5, 2: 1e10}) == "[[1,0.5],[2,1.0E10]]"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"), (-3.0, "-3.0"), (0.0, "0.0"), (-0.0, "-0.0"), (0.1, "0.1"), (123.456, "123.456"),
        (9999999.0, "9999999.0"), (1e7, "1.0E7"), (12345678.9, "1.23456789E7"), (0.001, "0.001"),
        (0.00099, "9.9E-4"), (1e23, "1.0E23"), (5e-324, "4.9E-324"), (1.7976931348623157e308, "1.7976931348623157E308"),
    ],
)
def test_float64_as_java_prints_it(value, text):
    assert java_double(value) == text
    assert value_json(s.float64(), value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.5, "1.5"), (0.1, "0.1"), (1.1, "1.1"), (3.4028235e38, "3.4028235E38"), (1e-45, "1.4E-45"), (1e10, "1.0E10")],
)
def test_float32_as_java_prints_it(value, text):
    assert java_float(value) == text


def test_floating_point_type_names_are_jsonconverters():
    assert schema_json(s.float32()) == '{"type":"float","optional":false}'
    assert schema_json(s.float64(optional=True)) == '{"type":"double","optional":true}'


def test_non_finite_floats_are_quoted_as_jackson_writes_them():
    assert value_json(s.float64(), float("nan")) == '"NaN"'
    assert value_json(s.float32(), float("inf")) == '"Infinity"'
    assert value_json(s.float64(), float("-inf")) == '"-Infinity"'


def test_decimal_bytes_are_minimal_twos_complement_in_base64():
    field = logical.decimal(2)
    assert value_json(field, Decimal("1.55")) == '"AJs="'  # 155 = 0x009B
    assert unscaled_bytes(Decimal("-1.28"), 2) == b"\x80"
    assert unscaled_bytes(Decimal("-1.29"), 2) == b"\xff\x7f"
    assert unscaled_bytes(Decimal("1.27"), 2) == b"\x7f"
    assert unscaled_bytes(Decimal("0.00"), 2) == b"\x00"
    for other_scale in ("1.5", "1.550", "1E+2"):
        with pytest.raises(SchemaError, match="scale 2"):
            value_json(field, Decimal(other_scale))


def test_decimals_longer_than_the_default_context_are_exact():
    """Python's default decimal context keeps 28 digits; DECIMAL(65,30) and NUMERIC values have more."""
    wide = "12345678901234567890123456789012345.123456789012345678901234567890"
    unscaled = int(wide.replace(".", ""))
    assert int.from_bytes(unscaled_bytes(Decimal(wide), 30), "big", signed=True) == unscaled
    assert int.from_bytes(unscaled_bytes(Decimal(f"-{wide}"), 30), "big", signed=True) == -unscaled
    assert value_json(logical.decimal(30, 65), Decimal(wide)) == json.dumps(
        base64.b64encode(unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True)).decode())


def test_bytes_strings_and_control_characters():
    assert value_json(s.bytes_(), b"\x00\xff") == '"AP8="'
    assert value_json(s.string(), "é\u2028/") == '"é\u2028/"'
    assert string_json("a\x01\x1f\n\t\"\\") == '"a\\u0001\\u001F\\n\\t\\"\\\\"'
    assert string_json("\\u001f") == '"\\\\u001f"'  # a literal backslash-u text is not an escape
    # both in one text: each control written upper-case, the literal text left as it is
    assert string_json("\\\x01\\u0001\x1f") == '"\\\\\\u0001\\\\u0001\\u001F"'
    assert json.loads(string_json("x\x0bz")) == "x\x0bz"


def test_nulls_defaults_and_required_fields():
    row = s.struct(
        [("a", s.int32()), ("b", s.string(optional=True)), ("c", s.string(optional=True).with_default("d"))],
        name="R",
    )
    assert value_json(row, {"a": 1}) == '{"a":1,"b":null,"c":"d"}'
    with pytest.raises(SchemaError, match="required field a"):
        value_json(row, {"b": "x"})
    with pytest.raises(SchemaError, match=r"\['z'\]"):
        value_json(row, {"a": 1, "z": 2})
    with pytest.raises(SchemaError, match="int32 needs an int"):
        value_json(row, {"a": "1"})


def test_nested_envelope_round_trips_through_json():
    value_schema = s.struct(
        [
            ("before", s.struct([("id", s.int64())], name="p.s.t.Value", optional=True)),
            ("after", s.struct([("id", s.int64())], name="p.s.t.Value", optional=True)),
            ("op", s.string()),
        ],
        name="p.s.t.Envelope",
        version=2,
    )
    text = envelope(value_schema, {"before": None, "after": {"id": 7}, "op": "c"})
    parsed = json.loads(text)
    assert list(parsed) == ["schema", "payload"]
    assert parsed["payload"] == {"before": None, "after": {"id": 7}, "op": "c"}
    assert [f["field"] for f in parsed["schema"]["fields"]] == ["before", "after", "op"]
    assert list(parsed["schema"]) == ["type", "fields", "optional", "name", "version"]
    assert base64.b64decode(json.loads(value_json(s.bytes_(), b"abc"))) == b"abc"


def test_invalid_schemas_are_refused():
    with pytest.raises(SchemaError, match="unknown Kafka Connect schema type"):
        s.Schema("int128")
    with pytest.raises(SchemaError, match="duplicate"):
        s.struct([("a", s.int8()), ("a", s.int8())])
