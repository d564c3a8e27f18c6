"""`compiled(schema)` writes every value exactly as `value_json(schema, ·)` does, and fails with its errors."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from connectors.events import logical
from connectors.events import schema as s
from connectors.events.json_converter import compiled, envelope, value_json, writer
from connectors.events.schema import SchemaError

ROW = s.struct([
    ("id", s.int32()), ("small", s.int16(optional=True)), ("big", s.int64(optional=True)),
    ("text", s.string(optional=True)), ("flag", s.boolean(optional=True)), ("ratio", s.float64(optional=True)),
    ("single", s.float32(optional=True)), ("raw", s.bytes_(optional=True)),
    ("price", logical.decimal(2, 10, optional=True)), ("tags", logical.array_of(s.string(), optional=True)),
    ("attrs", s.map_(s.string(), s.string(optional=True), optional=True)),
    ("pairs", s.map_(s.int32(), s.string(), optional=True)),
    ("kind", logical.enum(["a", "b"], optional=True).with_default("a")),
    ("nested", s.struct([("x", s.int32())], name="n", optional=True)),
], name="t.Value", optional=True)

VALUES = [
    None,
    {"id": 1},
    {"id": -5, "small": 3, "big": 2**62, "text": "é \"q\" \\ \x01\n\t", "flag": False, "ratio": 1e10,
     "single": 0.1, "raw": b"\x00\xff", "price": Decimal("-12.34"), "tags": ["x", "", "\x1f"],
     "attrs": {"k": None, "é": "v"}, "pairs": {1: "one"}, "kind": None, "nested": {"x": 7}},
    {"id": 2, "ratio": math.nan, "single": -math.inf, "price": b"\x01", "kind": "b", "nested": None},
    {"id": 3, "ratio": -0.0, "text": "same"}, {"id": 4, "text": "same"},
]


@pytest.mark.parametrize("value", VALUES)
def test_same_text_as_value_json(value):
    assert compiled(ROW)(value) == value_json(ROW, value)


@pytest.mark.parametrize("value", [{"id": None}, {"id": True}, {"id": 1, "text": 5}, {"id": 1, "other": 1},
                                   {"id": 1, "nested": {"x": None}}, {"id": 1, "raw": "not bytes"}])
def test_same_errors_as_value_json(value):
    with pytest.raises(SchemaError) as expected:
        value_json(ROW, value)
    with pytest.raises(SchemaError) as got:
        compiled(ROW)(value)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("schemas_enable", [True, False])
@pytest.mark.parametrize("value", VALUES)
def test_writer_writes_what_envelope_writes(value, schemas_enable):
    assert writer(ROW, schemas_enable)(value) == envelope(ROW, value, schemas_enable)
