"""Every type through the whole PostgreSQL connector into the real Kafka: rows of the all-types table read by the
initial snapshot (SELECT in the exported snapshot, connectors/postgres/snapshot.py) and rows inserted afterwards read
by the stream (pgoutput), consumed read_committed with schemas on, each compared with the values and schemas
Debezium documents (tests/postgres/all_types.py, the expectations test_types_live checks through the slot alone),
under the default modes and the others."""

from __future__ import annotations

import json

import pytest

from tests.postgres.all_types import (
    DDL,
    DOUBLE_CHANGED,
    DOUBLE_SCHEMAS,
    EXPECTED_DEFAULT,
    EXPECTED_SCHEMAS,
    OTHER_MODES,
    OTHER_MODES_CHANGED,
    OTHER_MODES_SCHEMAS,
    expected_nulls,
    full_row,
    null_row,
)
from tests.postgres.test_source import Running, events, pg_config

pytestmark = [pytest.mark.integration]

# mode -> (connector properties, values that differ from the defaults, schemas that differ)
MODES = {
    "default": ({}, {}, {}),
    "other": (OTHER_MODES, OTHER_MODES_CHANGED, OTHER_MODES_SCHEMAS),
    "double": ({"decimal.handling.mode": "double"}, DOUBLE_CHANGED, DOUBLE_SCHEMAS),
}


@pytest.mark.parametrize("mode", list(MODES))
def test_every_type_through_the_snapshot_and_the_stream(pg_db, stack, unique_name, mode):
    properties, changed, changed_schemas = MODES[mode]
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    topic = f"{name}.public.all_types"
    pg_db.execute(DDL)
    pg_db.execute(full_row(1))
    pg_db.execute(null_row(2))
    config = pg_config(pg_db, name, **{"publication.name": "pub", "publication.autocreate.mode": "disabled",
                                       "schemas.enable": "true", **properties})
    running = Running(config, bootstrap)
    try:
        events(bootstrap, topic, 2)  # the snapshot's rows are in Kafka: the next two can only come from the stream
        pg_db.execute(full_row(3))
        pg_db.execute(null_row(4))
        records = events(bootstrap, topic, 4)  # read_committed
    finally:
        running.stop()
    assert len(records) == 4
    values = [json.loads(r.value) for r in records]
    assert [v["payload"]["op"] for v in values] == ["r", "r", "c", "c"]
    assert [v["payload"]["source"]["snapshot"] for v in values] == ["true", "last", "false", "false"]

    key_schema = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}],
                  "optional": False, "name": f"{name}.public.all_types.Key"}
    assert [json.loads(r.key) for r in records] == [{"schema": key_schema, "payload": {"id": i}} for i in (1, 2, 3, 4)]

    schema = values[0]["schema"]
    assert all(v["schema"] == schema for v in values), "the snapshot's and the stream's value schemas differ"
    after = next(f for f in schema["fields"] if f["field"] == "after")
    assert after["name"] == f"{name}.public.all_types.Value"
    fields = {f["field"]: {k: v for k, v in f.items() if k != "field"} for f in after["fields"]}
    expected_schemas = {**EXPECTED_SCHEMAS, **changed_schemas}
    assert set(fields) == set(expected_schemas)  # unmapped types left out
    assert [c for c in fields if c in EXPECTED_SCHEMAS] == list(EXPECTED_SCHEMAS)  # the table's column order
    for column, expected in expected_schemas.items():  # one by one, so a failure names the column
        assert fields[column] == expected, column

    expected = {**EXPECTED_DEFAULT, **changed}
    snapshot_full, snapshot_nulls, streamed_full, streamed_nulls = (v["payload"]["after"] for v in values)
    for how, full, nulls, ids in (("snapshot", snapshot_full, snapshot_nulls, (1, 2)),
                                  ("stream", streamed_full, streamed_nulls, (3, 4))):
        assert set(full) == set(expected), how
        for column, value in expected.items():
            assert full[column] == (ids[0] if column == "id" else value), (how, column)
        assert nulls == expected_nulls(ids[1], expected), how
    assert {**snapshot_full, "id": 0} == {**streamed_full, "id": 0}
