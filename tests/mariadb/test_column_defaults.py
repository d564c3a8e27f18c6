"""Column defaults in the Connect schemas of MariaDB's events, as Debezium's MariaDB connector writes them (compared
byte for byte by `python -m bench.compat --source mariadb`; the conversion per type: tests/unit/test_mysql_defaults.py):
in snapshot and streamed events, in the key, for a table created while streaming and after ALTER … SET DEFAULT; a NOT
NULL zero date written as the column's default, a NULL as the default (JsonConverter). And the source block's `row` of
schema change and truncate events: the row number of the last captured row before them, as Debezium leaves it. Real
MariaDB, real Kafka."""

from __future__ import annotations

import json

import pytest

from tests.integration.kafka_reading import read_topic
from tests.mariadb.test_event_kinds import records_of, streaming
from tests.mariadb.test_source import BOOTSTRAP, InProcess, properties

pytestmark = pytest.mark.integration

TABLE = ("CREATE TABLE {name} (id INT NOT NULL PRIMARY KEY DEFAULT 7, n INT DEFAULT 42, "
         "s VARCHAR(5) DEFAULT 'x''y', dn DATE NOT NULL DEFAULT '2000-01-01', "
         "ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, b BIT(10) DEFAULT b'1')")


def fields(record, part: str = "after") -> dict:
    schema = json.loads(record.value)["schema"]
    struct = next(f for f in schema["fields"] if f["field"] == part)
    return {f["field"]: f for f in struct["fields"]}


def defaults(record) -> dict:
    return {name: field.get("default") for name, field in fields(record).items()}


EXPECTED = {"id": 7, "n": 42, "s": "x''y", "dn": 10957, "ts": "1970-01-01T00:00:00Z", "b": "AQA="}
SCHEMAS = {"key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"}


def test_snapshot_and_streamed_events_carry_the_columns_defaults(mariadb, mariadb_db):
    mariadb.execute("SET SESSION sql_mode = ''", TABLE.format(name="t"),
                    "INSERT INTO t (id, dn) VALUES (1, '0000-00-00')", database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"snapshot.mode": "initial", **SCHEMAS})
    runner = InProcess(props)
    try:
        snapshot, = records_of(props, mariadb_db, "t", 1, timeout=90)
        mariadb.execute("SET SESSION sql_mode = ''", "INSERT INTO t (id, s, dn) VALUES (2, NULL, '0000-00-00')",
                        TABLE.format(name="later"), "INSERT INTO later (id) VALUES (1)", database=mariadb_db)
        # the ALTER once the CREATE is handled: defaults are read from the server as a DDL statement is handled
        # (docs/mariadb.md), so a connector behind the ALTER would read the new default for the older row too
        records_of(props, mariadb_db, "later", 1)
        mariadb.execute("ALTER TABLE later ALTER COLUMN n SET DEFAULT 5", "INSERT INTO later (id) VALUES (2)",
                        database=mariadb_db)
        streamed = records_of(props, mariadb_db, "t", 2)[1]
        created, altered = records_of(props, mariadb_db, "later", 2)
    finally:
        runner.close()
    for record in (snapshot, streamed, created):
        assert defaults(record) == EXPECTED
    assert json.loads(snapshot.key)["schema"]["fields"] == [
        {"type": "int32", "optional": False, "default": 7, "field": "id"}]
    assert defaults(altered)["n"] == 5  # the default read as the ALTER was handled
    for record in (snapshot, streamed):
        after = json.loads(record.value)["payload"]["after"]
        assert after["dn"] == 10957  # a NOT NULL column's zero date: its default, as Debezium
    assert json.loads(streamed.value)["payload"]["after"]["s"] == "x''y"  # a NULL written as the default


def test_schema_change_and_truncate_events_carry_the_last_rows_number(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=mariadb_db)
    props, runner = streaming(mariadb, mariadb_db, **{"include.schema.changes": "true",
                                                      "skipped.operations": "none"})
    try:
        mariadb.execute("INSERT INTO t VALUES (1), (2), (3)", "ALTER TABLE t ADD COLUMN v INT", "TRUNCATE t",
                        database=mariadb_db)
        records = records_of(props, mariadb_db, "t", 4)
        changes = [json.loads(r.value) for r in read_topic(BOOTSTRAP, props["topic.prefix"])]
    finally:
        runner.close()
    truncate = json.loads(records[3].value)
    assert truncate["op"] == "t" and truncate["source"]["row"] == 2
    alter = next(c for c in changes if c["ddl"].startswith("ALTER"))
    assert alter["source"]["row"] == 2
