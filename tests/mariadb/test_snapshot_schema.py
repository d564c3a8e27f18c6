"""The snapshot writes Debezium's schema change records to the schema change topic (`<topic.prefix>`) before any
row: the server's character set, DROP TABLE IF EXISTS of every table, then per database DROP / CREATE DATABASE, USE
and each table's CREATE TABLE (captured or not, as Debezium's MariaDB connector, checked beside it by
`python -m bench.compat --source mariadb`). Real MariaDB, real Kafka."""

from __future__ import annotations

import json

import pytest

from tests.integration.kafka_reading import read_topic
from tests.mariadb.test_event_kinds import records_of
from tests.mariadb.test_source import BOOTSTRAP, InProcess, properties

pytestmark = pytest.mark.integration


def test_the_snapshot_writes_debeziums_schema_records(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(10) NOT NULL)", "CREATE TABLE u (id INT)",
                    "CREATE TABLE skipped (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1, 'a')", database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"table.include.list": f"{mariadb_db}.t,{mariadb_db}.u"})
    runner = InProcess(props)
    try:
        records_of(props, mariadb_db, "t", 1)
        changes = [json.loads(r.value) for r in read_topic(BOOTSTRAP, props["topic.prefix"])]
    finally:
        runner.close()
    assert changes[0]["databaseName"] == "" and changes[0]["ddl"].startswith("SET character_set_server=")
    ours = [c for c in changes if c["databaseName"] == mariadb_db]
    quoted = f"`{mariadb_db}`"
    assert [c["ddl"].split(" (")[0] for c in ours] == [
        *(f"DROP TABLE IF EXISTS {quoted}.`{t}`" for t in ("skipped", "t", "u")),
        f"DROP DATABASE IF EXISTS {quoted}", f"CREATE DATABASE {quoted} CHARSET utf8mb4 COLLATE utf8mb4_general_ci",
        f"USE {quoted}", "CREATE TABLE `skipped`", "CREATE TABLE `t`", "CREATE TABLE `u`"]
    assert all(c["source"]["snapshot"] == "true" for c in changes)
    drop = ours[1]["tableChanges"]
    assert drop == [{"type": "DROP", "id": f'"{mariadb_db}"."t"', "table": None}]
    assert ours[3]["tableChanges"] == [] and ours[3]["source"]["table"] is None
    create = ours[7]
    assert create["source"]["table"] == "t"
    change = create["tableChanges"][0]
    assert change["type"] == "CREATE" and change["table"]["primaryKeyColumnNames"] == ["id"]
    assert [(c["name"], c["length"], c["jdbcType"]) for c in change["table"]["columns"]] == [
        ("id", 11, 4), ("s", 10, 12)]  # int(11): the display width, as Debezium's parser reads it


def test_no_schema_change_records_when_include_schema_changes_is_off(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)", database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"include.schema.changes": "false"})
    runner = InProcess(props)
    try:
        records_of(props, mariadb_db, "t", 1)
    finally:
        runner.close()
    try:
        assert read_topic(BOOTSTRAP, props["topic.prefix"]) == []
    except KeyError:
        pass  # the topic was never made
