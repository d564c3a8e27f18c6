"""Every type end to end on the real server: a table with a column of each type, rows inserted, read back through
ReplicationStream (pgoutput text values), mapped with the catalog's types and nullability, and written as
JsonConverter payloads, compared with the values Debezium's documentation gives for each type."""

from __future__ import annotations

import json
import time

import pytest

from connectors.events.json_converter import schema_json, value_json
from connectors.postgres import pgoutput as p
from connectors.postgres.catalog import table_columns
from connectors.postgres.replication import ReplicationStream
from connectors.postgres.rows import RowColumn, RowMapper
from connectors.postgres.types import TypeSettings
from tests.postgres.all_types import (
    DDL,
    DOUBLE_CHANGED,
    EXPECTED_DEFAULT,
    EXPECTED_SCHEMAS,
    LEFT_OUT,
    OTHER_MODES_CHANGED,
    OTHER_MODES_SETTINGS,
    ROW_1,
    ROW_2,
    expected_nulls,
)


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
    assert nulls == expected_nulls(2)


def test_schemas_of_the_real_columns(captured):
    columns, _, _ = captured
    fields = json.loads(schema_json(mapper(columns, TypeSettings()).schema))["fields"]
    assert [f["field"] for f in fields] == list(EXPECTED_SCHEMAS)
    for f in fields:  # one by one, so a failure names the column
        assert {k: v for k, v in f.items() if k != "field"} == EXPECTED_SCHEMAS[f["field"]], f["field"]


def test_every_type_under_the_other_modes(captured):
    columns, _, (row_1, _) = captured
    rows = mapper(columns, TypeSettings(**OTHER_MODES_SETTINGS))
    payload = json.loads(value_json(rows.schema, rows.value(row_1)))
    assert payload == {**EXPECTED_DEFAULT, **OTHER_MODES_CHANGED}
    double = mapper(columns, TypeSettings(decimal_handling_mode="double"))
    assert json.loads(value_json(double.schema, double.value(row_1))) == {**EXPECTED_DEFAULT, **DOUBLE_CHANGED}
