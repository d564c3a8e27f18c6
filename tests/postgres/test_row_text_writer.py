"""`RowMapper.text_writer` writes a tuple's row (or key) JSON from its texts, as the long way does
(`json_converter.compiled(struct)(rows.value(tuple))`), and fails where the long way fails: random tuples of every
mapped type in CASES, with nulls, unchanged TOASTed values and column rules; the numeric and timestamptz writers
that skip the Connect value, over the texts PostgreSQL sends and texts it does not."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from connectors.core.columns import ColumnRules
from connectors.events import json_converter
from connectors.postgres import envelope as e
from connectors.postgres import temporal
from connectors.postgres import types as t
from connectors.postgres.pgoutput import UNCHANGED_TOAST
from connectors.postgres.rows import RowColumn, RowMapper
from connectors.postgres.types import TypeMappingError, builtin, column_mapping
from tests.postgres.compiled_rows import require_compiled
from tests.postgres.test_types import CASES, DEFAULT, numeric_typmod

RULES = ColumnRules(masks={r"public\.t\.c2[0-9]": 4}, truncates={r"public\.t\.c3[0-9]": 3},
                    exclude=(r"public\.t\.c4[0-9]",))


def table(rules: ColumnRules | None) -> tuple[RowMapper, list[list]]:
    """A row mapper with a required key, a column per CASES entry (plus a required text column), and the values
    each column's position may hold."""
    columns = [RowColumn("id", builtin(t.INT4), optional=False), RowColumn("code", builtin(t.TEXT), optional=False)]
    texts: list[list] = [[str(n) for n in range(-3, 4)], ["a", 'q"uote', "tab\there", "é"]]
    for index, (column_type, text, *_) in enumerate(CASES):
        columns.append(RowColumn(f"c{index}", column_type))
        texts.append([text, None, UNCHANGED_TOAST])
    return RowMapper("p.public.t.Value", columns, DEFAULT, column_rules=rules, table="public.t"), texts


def long_way(rows: RowMapper, struct, values) -> str:
    row = rows.value(values)
    return json_converter.compiled(struct)({f.name: row[f.name] for f in struct.fields})


def outcome(write, *args) -> str | tuple[type, str]:
    try:
        return write(*args)
    except Exception as error:  # noqa: BLE001 - compared with the other way's
        return type(error), str(error)


@pytest.mark.parametrize("path", ["python", "compiled"])
@pytest.mark.parametrize("rules", [None, RULES], ids=["plain", "column-rules"])
def test_rows_and_keys_are_written_as_the_long_way_writes_them(rules, path):
    """By the Python loop and by the compiled one (connectors/postgres/compiled.py), on tuples as pgoutput gives
    them."""
    if path == "compiled":
        require_compiled()
    rng = random.Random(f"rows-{rules is None}")
    rows, texts = table(rules)
    row_struct = e.envelope_schema("p", "public", "t", rows.schema).field("after").schema
    fields = {f.name: f for f in rows.schema.fields}
    key_struct = e.key_schema("p", "public", "t", [fields["id"], fields["c5"]])
    loose_key = e.key_schema("p", "public", "t", [fields["c3"], fields["id"]], required=False)
    writers = [(struct, rows.text_writer(struct, use_compiled=path == "compiled"))
               for struct in (row_struct, key_struct, loose_key)]
    failures = written = 0
    for _ in range(600):
        values = [rng.choice(options) for options in texts]
        if rng.random() < 0.05:
            values[rng.randrange(2)] = None  # a null in a required column
        if rng.random() < 0.03:
            values = values[:-1]  # a tuple of the wrong width
        values = tuple(values)
        for struct, write in writers:
            expected = outcome(long_way, rows, struct, values)
            assert outcome(write, values) == expected, values
            if isinstance(expected, str):
                written += 1
            else:
                failures += 1
    assert written > 1000 and failures > 50, (written, failures)


def decimal_schema_json(scale: int, text: str) -> str:
    mapping = column_mapping(builtin(t.NUMERIC, numeric_typmod(30, scale)), DEFAULT)
    return json_converter.compiled(mapping.schema)(mapping.convert(text))


@pytest.mark.parametrize("scale", [0, 1, 2, 5])
def test_numerics_of_a_fixed_scale_are_written_from_their_digits(scale):
    mapping = column_mapping(builtin(t.NUMERIC, numeric_typmod(30, scale)), DEFAULT)
    assert mapping.json is not None
    rng = random.Random(scale)
    edges = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 2**63, -(2**63) - 1]
    numbers = edges + [rng.randrange(-(10**25), 10**25) for _ in range(500)]
    for unscaled in numbers:
        text = format(Decimal(unscaled).scaleb(-scale), "f")
        assert mapping.json(text) == decimal_schema_json(scale, text), text
    assert mapping.json("-0" + ("." + "0" * scale if scale else "")) == decimal_schema_json(scale, "0")


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "+1.00", "1_0.00", " 1.00", "1.5", "1.000", "1",
                                  "١.00", "--1.00", "1.0e", ""])
def test_a_numeric_text_postgresql_does_not_send_for_the_scale_is_refused(text):
    """Refused, the row's writer takes the long way, which converts (rounding to the scale) or raises."""
    with pytest.raises(ValueError):
        column_mapping(builtin(t.NUMERIC, numeric_typmod(10, 2)), DEFAULT).json(text)


def test_a_refused_numeric_takes_the_long_way_in_a_row():
    rows = RowMapper("p.public.n.Value", [RowColumn("amount", builtin(t.NUMERIC, numeric_typmod(10, 2)))], DEFAULT)
    write = rows.text_writer(rows.schema)
    assert write(("1.5",)) == long_way(rows, rows.schema, ("1.5",))  # rounded to 1.50 by the converter
    assert write(("NaN",)) == '{"amount":null}'  # precise cannot write NaN: null, as Debezium
    required = RowMapper("p.public.n.Value", [RowColumn("amount", builtin(t.NUMERIC, numeric_typmod(10, 2)), False)],
                         DEFAULT)
    with pytest.raises(TypeMappingError, match="decimal.handling.mode"):
        required.text_writer(required.schema)(("NaN",))


def pg_text(instant: datetime) -> str:
    return f"{instant.year:04d}-{instant:%m-%d %H:%M:%S}"  # strftime's %Y does not pad years before 1000


@pytest.mark.parametrize("width", [None, 0, 1, 3, 6, 9])
def test_utc_timestamps_are_rewritten_as_the_computed_path_writes_them(width):
    """A `+00` text is rewritten from its digits; the same instant written an hour ahead (`+01`) is computed."""
    rng = random.Random(str(width))
    for _ in range(300):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randrange(7)))
        instant = datetime(rng.randrange(1, 9999), rng.randrange(1, 13), rng.randrange(1, 29), rng.randrange(24),
                           rng.randrange(60), rng.randrange(60))
        fraction = f".{digits}" if digits else ""
        utc = f"{pg_text(instant)}{fraction}+00"
        ahead = f"{pg_text(instant + timedelta(hours=1))}{fraction}+01"
        assert temporal.zoned_timestamp_text(utc, width) == temporal.zoned_timestamp_text(ahead, width), utc
        assert column_mapping(builtin(t.TIMESTAMPTZ), DEFAULT).json(utc) == \
            json_converter.string_json(temporal.zoned_timestamp_text(utc, 6))
