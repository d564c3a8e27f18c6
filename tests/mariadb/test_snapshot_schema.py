"""The snapshot writes the CREATE TABLE of each captured table to the schema change topic (`<topic.prefix>`) before
any row, as Debezium's does when include.schema.changes is on (the default). Real MariaDB, real Kafka."""

from __future__ import annotations

import json

import pytest

from tests.integration.kafka_reading import read_topic
from tests.mariadb.test_event_kinds import records_of
from tests.mariadb.test_source import BOOTSTRAP, InProcess, properties

pytestmark = pytest.mark.integration


def test_the_snapshot_writes_each_captured_tables_create_table(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(10) NOT NULL)", "CREATE TABLE u (id INT)",
                    "CREATE TABLE skipped (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1, 'a')", database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"table.include.list": f"{mariadb_db}.t,{mariadb_db}.u"})
    runner = InProcess(props)
    try:
        records_of(props, mariadb_db, "t", 1)
        changes = [json.loads(r.value) for r in read_topic(BOOTSTRAP, props["topic.prefix"])]
    finally:
        runner.close()
    by_table = {c["tableChanges"][0]["id"]: c for c in changes}
    assert set(by_table) == {f'"{mariadb_db}"."t"', f'"{mariadb_db}"."u"'}
    create = by_table[f'"{mariadb_db}"."t"']
    assert create["ddl"].startswith("CREATE TABLE `t`") and create["databaseName"] == mariadb_db
    assert create["source"]["snapshot"] == "true" and create["source"]["table"] == "t"
    change = create["tableChanges"][0]
    assert change["type"] == "CREATE" and change["table"]["primaryKeyColumnNames"] == ["id"]
    assert [c["name"] for c in change["table"]["columns"]] == ["id", "s"]


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
