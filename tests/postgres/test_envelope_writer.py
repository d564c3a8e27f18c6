"""`EnvelopeWriter` writes the same bytes as JsonConverter's generic walk of the envelope
(`json_converter.envelope(value_schema, envelope_value(...))`): random rows of every mapped type in CASES, every
operation and snapshot marker, null and set positions, transaction blocks, names that need escaping, with and without
the schema."""

from __future__ import annotations

import random

import pytest

from connectors.events.json_converter import compiled, envelope
from connectors.postgres import envelope as e
from connectors.postgres import types as t
from connectors.postgres.rows import RowColumn, RowMapper
from connectors.postgres.types import builtin
from tests.postgres.test_types import CASES, DEFAULT


def table(schema: str, name: str) -> tuple[RowMapper, list[list[str]]]:
    """A row mapper with a column per CASES entry (plus a key), and the texts each column may hold."""
    columns = [RowColumn("id", builtin(t.INT4), optional=False)]
    texts: list[list[str]] = [[str(n) for n in range(-3, 4)]]
    for index, (column_type, text, *_) in enumerate(CASES):
        columns.append(RowColumn(f"c{index}", column_type))
        texts.append([text])
    return RowMapper(f"p.{schema}.{name}.Value", columns, DEFAULT), texts


def random_row(rng: random.Random, rows: RowMapper, texts: list[list[str]]) -> dict | None:
    if rng.random() < 0.1:
        return None
    values = [rng.choice(options) if index == 0 or rng.random() < 0.8 else None
              for index, options in enumerate(texts)]
    return rows.value(values)


def random_source(rng: random.Random, schema: str, name: str) -> e.SourceInfo:
    maybe = lambda value: value if rng.random() < 0.8 else None  # noqa: E731
    return e.SourceInfo("3.4.0.Final", rng.choice(["p", 'we"ird\\prefix', "préfixe"]), "inventory", schema, name,
                        rng.randrange(0, 2**52), rng.choice(e.SNAPSHOT_VALUES), maybe(rng.randrange(2**32)),
                        maybe(rng.randrange(2**63)), maybe(rng.randrange(2**63)), maybe(rng.randrange(2**32)))


@pytest.mark.parametrize("schemas_enable", [True, False])
@pytest.mark.parametrize(("schema", "name"), [("public", "customers"), ('odd "schema"', "tåble\\x")])
def test_the_writer_matches_the_generic_converter(schemas_enable, schema, name):
    rng = random.Random(f"{schemas_enable}{schema}{name}")
    rows, texts = table(schema, name)
    value_schema = e.envelope_schema("p", schema, name, rows.schema)
    writer = e.EnvelopeWriter(value_schema, schemas_enable)
    for _ in range(500):
        op = rng.choice("crudt")
        before = random_row(rng, rows, texts) if op in "ud" else None
        after = random_row(rng, rows, texts) if op in "cur" else None
        source = random_source(rng, schema, name)
        block = rng.choice([None, {"id": "571:33816384", "total_order": rng.randrange(1, 9),
                                   "data_collection_order": rng.randrange(1, 9)}])
        now_ns = rng.randrange(2**62)
        expected = envelope(value_schema, e.envelope_value(op, before, after, source, now_ns, block), schemas_enable)
        assert writer.text(op, before, after, source, now_ns, block) == expected


@pytest.mark.parametrize("schemas_enable", [True, False])
@pytest.mark.parametrize(("schema", "name"), [("public", "customers"), ('odd "schema"', "tåble\\x")])
def test_streamed_parts_around_a_row_and_its_lsn_are_the_writers_text(schemas_enable, schema, name):
    rng = random.Random(f"streamed{schemas_enable}{schema}{name}")
    rows, texts = table(schema, name)
    value_schema = e.envelope_schema("p", schema, name, rows.schema)
    writer = e.EnvelopeWriter(value_schema, schemas_enable)
    write_row = compiled(value_schema.field("after").schema)
    for _ in range(300):
        op = rng.choice("cu")
        after = random_row(rng, rows, texts) or rows.value([1] + [None] * (len(texts) - 1))
        source = random_source(rng, schema, name)
        lsn = rng.randrange(2**63)
        now_ns = rng.randrange(2**62)
        first, second, third, fourth = writer.streamed_parts(op, source, now_ns)  # any LSN: it is not in them
        source.lsn = lsn
        row = write_row(after)
        assert f"{first}{row}{second}{lsn}{third}{lsn}{fourth}" == writer.text(op, None, after, source, now_ns)
