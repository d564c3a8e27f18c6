"""Every type through the whole PostgreSQL connector into the real Kafka: rows of the all-types table read by the
initial snapshot (SELECT in the exported snapshot, connectors/postgres/snapshot.py), rows inserted afterwards read
by the stream (pgoutput), then all of them read again by an incremental snapshot (connectors/postgres/incremental.py),
consumed read_committed with schemas on, each compared with the values and schemas Debezium documents
(tests/postgres/all_types.py, the expectations test_types_live checks through the slot alone), under the default
modes and the others."""

from __future__ import annotations

import json
from datetime import date

import pytest

from tests.postgres.all_types import (
    DDL,
    DOUBLE_CHANGED,
    DOUBLE_SCHEMAS,
    EXPECTED_DEFAULT,
    EXPECTED_SCHEMAS,
    MICROSECOND_CHANGED,
    MICROSECOND_MODES,
    MICROSECOND_SCHEMAS,
    OTHER_MODES,
    OTHER_MODES_CHANGED,
    OTHER_MODES_SCHEMAS,
    b64,
    days,
    expected_nulls,
    full_row,
    null_row,
    unscaled,
)
from tests.postgres.test_source import Running, pg_config
from tests.type_check import DEBEZIUM_SNAPSHOT_MARKERS, records_at_least, snapshot_stream_incremental_values

pytestmark = [pytest.mark.integration]

# mode -> (connector properties, values that differ from the defaults, schemas that differ)
MODES = {
    "default": ({}, {}, {}),
    "other": (OTHER_MODES, OTHER_MODES_CHANGED, OTHER_MODES_SCHEMAS),
    "double": ({"decimal.handling.mode": "double"}, DOUBLE_CHANGED, DOUBLE_SCHEMAS),
    "microseconds": (MICROSECOND_MODES, MICROSECOND_CHANGED, MICROSECOND_SCHEMAS),
}


SIGNAL_TABLE = "CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data text)"


def incremental_snapshot_of(table: str) -> str:
    """The signal-table row that asks for an incremental snapshot of `table`."""
    data = json.dumps({"data-collections": [table], "type": "incremental"})
    return f"INSERT INTO dbz_signal VALUES ('types-{table}', 'execute-snapshot', '{data}')"  # noqa: S608


@pytest.mark.parametrize("mode", list(MODES))
def test_every_type_through_the_snapshot_and_the_stream(pg_db, stack, unique_name, mode):
    properties, changed, changed_schemas = MODES[mode]
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    topic = f"{name}.public.all_types"
    pg_db.execute(DDL)
    pg_db.execute(SIGNAL_TABLE + "; ALTER PUBLICATION pub ADD TABLE dbz_signal")
    pg_db.execute(full_row(1))
    pg_db.execute(null_row(2))
    config = pg_config(pg_db, name, **{"publication.name": "pub", "publication.autocreate.mode": "disabled",
                                       "schemas.enable": "true", "signal.data.collection": "public.dbz_signal",
                                       **properties})
    running = Running(config, bootstrap)
    try:
        # the snapshot's rows are in Kafka: the next two can only be streamed
        records_at_least(running, bootstrap, topic, 2)
        pg_db.execute(full_row(3))
        pg_db.execute(null_row(4))
        records_at_least(running, bootstrap, topic, 4)
        pg_db.execute(incremental_snapshot_of("public.all_types"))  # the four rows once more
        records = records_at_least(running, bootstrap, topic, 8)  # read_committed
    finally:
        running.stop()
    values, after = snapshot_stream_incremental_values(records, topic, (1, 2, 3, 4), DEBEZIUM_SNAPSHOT_MARKERS)
    fields = {f["field"]: {k: v for k, v in f.items() if k != "field"} for f in after["fields"]}
    expected_schemas = {**EXPECTED_SCHEMAS, **changed_schemas}
    assert set(fields) == set(expected_schemas)  # unmapped types left out
    assert [c for c in fields if c in EXPECTED_SCHEMAS] == list(EXPECTED_SCHEMAS)  # the table's column order
    for column, expected in expected_schemas.items():  # one by one, so a failure names the column
        assert fields[column] == expected, column

    expected = {**EXPECTED_DEFAULT, **changed}
    afters = [v["payload"]["after"] for v in values]
    snapshot_full, snapshot_nulls, streamed_full, streamed_nulls = afters[:4]
    for how, full, nulls, ids in (("snapshot", snapshot_full, snapshot_nulls, (1, 2)),
                                  ("stream", streamed_full, streamed_nulls, (3, 4)),
                                  ("incremental", afters[4], afters[5], (1, 2)),
                                  ("incremental", afters[6], afters[7], (3, 4))):
        assert set(full) == set(expected), how
        for column, value in expected.items():
            assert full[column] == (ids[0] if column == "id" else value), (how, column)
        assert nulls == expected_nulls(ids[1], expected), how
    assert {**snapshot_full, "id": 0} == {**streamed_full, "id": 0}


def test_the_snapshot_reads_the_columns_the_stream_sends(pg_db, stack, unique_name):
    """pgoutput (PostgreSQL 15) never sends a generated column, and sends only the columns of a publication's column
    list: snapshot rows leave out the same columns, so both have one schema (before, snapshot rows carried them)."""
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    pg_db.execute("""
        CREATE TABLE gen (id int PRIMARY KEY, gone int, a int, g int GENERATED ALWAYS AS (a * 2) STORED, b text);
        ALTER TABLE gen DROP COLUMN gone;
        CREATE TABLE listed (id int PRIMARY KEY, a int, secret text);
        CREATE PUBLICATION pub FOR TABLE gen, listed (id, a);
        INSERT INTO gen (id, a, b) VALUES (1, 5, 'x');
        INSERT INTO listed VALUES (1, 5, 'not published');
    """)
    config = pg_config(pg_db, name, **{"publication.name": "pub", "publication.autocreate.mode": "disabled",
                                       "schemas.enable": "true"})
    running = Running(config, bootstrap)
    try:
        records_at_least(running, bootstrap, f"{name}.public.gen", 1)
        records_at_least(running, bootstrap, f"{name}.public.listed", 1)
        pg_db.execute("INSERT INTO gen (id, a, b) VALUES (2, 5, 'x'); INSERT INTO listed VALUES (2, 5, 'no')")
        gen = [json.loads(r.value) for r in records_at_least(running, bootstrap, f"{name}.public.gen", 2)]
        listed = [json.loads(r.value) for r in records_at_least(running, bootstrap, f"{name}.public.listed", 2)]
    finally:
        running.stop()
    for values, row in ((gen, {"a": 5, "b": "x"}), (listed, {"a": 5})):
        assert [v["payload"]["op"] for v in values] == ["r", "c"]
        assert values[0]["schema"] == values[1]["schema"]
        assert [v["payload"]["after"] for v in values] == [{"id": 1, **row}, {"id": 2, **row}]


DOMAINS = """
CREATE DOMAIN price AS numeric(8,3);
CREATE DOMAIN day AS date;
CREATE DOMAIN moment AS timestamptz;
CREATE DOMAIN flag AS boolean;
CREATE DOMAIN doc AS jsonb;
CREATE DOMAIN whole AS int;
CREATE DOMAIN stamp AS timestamp(3);
CREATE DOMAIN blob AS bytea;
CREATE DOMAIN span AS interval;
CREATE DOMAIN ints AS int[];
CREATE DOMAIN nested AS price;
CREATE TABLE domains (id int PRIMARY KEY, p price, dy day, m moment, f flag, j doc, w whole, s stamp, b blob, sp span,
                      ia ints, n nested);
"""


def domains_row(row_id: int) -> str:
    return (f"INSERT INTO domains VALUES ({row_id}, 12.5, '2024-02-29', '2018-06-20 15:13:16.945104+02', true, "  # noqa: S608
            "'{\"b\":1,\"a\":2}', 7, '2018-06-20 15:13:16.945', '\\x00ff', '1 day 2 hours', '{1,2}', 1.25)")


def test_domains_over_other_types_through_every_path(pg_db, stack, unique_name):
    """A query reports a domain column as its base type: snapshot reads (initial and incremental) must load it as
    text too, also with no other column of that base type (before, they got a Python date, Decimal, datetime… and
    the pipeline failed). The database's own DateStyle, IntervalStyle and bytea_output differ from the text forms the
    mapping reads: every path's session sets those."""
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    topic = f"{name}.public.domains"
    pg_db.execute(DOMAINS + SIGNAL_TABLE)
    pg_db.execute(domains_row(1))
    # the database's own output settings, unlike the connector's sessions' (which every path must set alike)
    for setting in ("DateStyle = 'SQL, DMY'", "IntervalStyle = 'sql_standard'", "bytea_output = 'escape'"):
        pg_db.execute(f'ALTER DATABASE "{pg_db.name}" SET {setting}')
    config = pg_config(pg_db, name, **{"signal.data.collection": "public.dbz_signal"})
    running = Running(config, bootstrap)
    try:
        records_at_least(running, bootstrap, topic, 1)  # the initial snapshot's row
        pg_db.execute(domains_row(2))
        records_at_least(running, bootstrap, topic, 2)  # streamed
        pg_db.execute(incremental_snapshot_of("public.domains"))
        values = [json.loads(r.value) for r in records_at_least(running, bootstrap, topic, 4)]  # rows 1 and 2 again
    finally:
        running.stop()
    assert [(v["op"], v["source"]["snapshot"], v["after"]["id"]) for v in values] == [
        ("r", "last", 1), ("c", "false", 2), ("r", "incremental", 1), ("r", "incremental", 2)]
    expected = {
        "p": unscaled(12500), "dy": days(date(2024, 2, 29)), "m": "2018-06-20T13:13:16.945104Z", "f": True,
        "j": '{"a": 2, "b": 1}', "w": 7, "s": 1529507596945, "b": b64(b"\x00\xff"), "sp": 93_600_000_000,
        "ia": [1, 2], "n": unscaled(1250),
    }
    for value in values:
        assert value["after"] == {"id": value["after"]["id"], **expected}, value["source"]["snapshot"]
