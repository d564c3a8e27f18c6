"""Debezium's events for the changes that are not a plain insert, update or delete of a keyed row: an update that
changes the primary key, a TRUNCATE, a delete on a table without a key. Streamed from a real MariaDB into real
Kafka and read back as a read_committed consumer."""

from __future__ import annotations

import json
import time

import pytest

from tests.integration.kafka_reading import read_topic
from tests.mariadb.test_offsets_when_idle import stored_offsets, wait_for
from tests.mariadb.test_source import BOOTSTRAP, InProcess, properties

pytestmark = pytest.mark.integration


def streaming(mariadb, database: str, **extra) -> tuple[dict, InProcess]:
    """A no_data connector that has committed its start (a change written after this is captured)."""
    props = properties(mariadb, database, **{"snapshot.mode": "no_data", **extra})
    runner = InProcess(props)
    try:
        wait_for(lambda: stored_offsets(props), "the start's commit")
    except BaseException:
        runner.close()
        raise
    return props, runner


def records_of(props: dict, database: str, table: str, count: int, timeout: float = 60.0) -> list:
    topic = f"{props['topic.prefix']}.{database}.{table}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            records = read_topic(BOOTSTRAP, topic)
        except KeyError:
            records = []
        if len(records) >= count:
            return records
        assert time.monotonic() < deadline, f"{topic}: {len(records)} records of {count}: {records}"
        time.sleep(0.3)


def captured(mariadb, database: str, statements: list[str], count: int, **extra) -> tuple[dict, list]:
    """The first `count` records of table t after `statements` run on a streaming connector."""
    props, runner = streaming(mariadb, database, **extra)
    try:
        mariadb.execute(*statements, database=database)
        return props, records_of(props, database, "t", count)
    finally:
        runner.close()


def test_an_update_of_the_primary_key_deletes_the_old_key_and_creates_the_new(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO t VALUES (1, 'a'), (5, 'e')",
                    database=mariadb_db)
    props, records = captured(mariadb, mariadb_db, ["UPDATE t SET id = 2, v = 'b' WHERE id = 1",
                                                    "UPDATE t SET v = 'f' WHERE id = 5"], 4)
    delete, tombstone, create, update = records
    assert json.loads(delete.key) == {"id": 1} and json.loads(delete.value)["op"] == "d"
    assert json.loads(delete.value)["before"] == {"id": 1, "v": "a"} and json.loads(delete.value)["after"] is None
    assert dict(delete.headers) == {"__debezium.newkey": b'{"id":2}'}
    assert json.loads(tombstone.key) == {"id": 1} and tombstone.value is None
    assert dict(tombstone.headers) == {"__debezium.newkey": b'{"id":2}'}
    assert json.loads(create.key) == {"id": 2} and json.loads(create.value)["op"] == "c"
    assert json.loads(create.value)["before"] is None and json.loads(create.value)["after"] == {"id": 2, "v": "b"}
    assert dict(create.headers) == {"__debezium.oldkey": b'{"id":1}'}
    assert json.loads(update.value)["op"] == "u" and not update.headers  # the key stays: an update


def test_a_key_change_inside_a_multi_row_update_with_transaction_metadata(mariadb, mariadb_db):
    """The per-change path (`build`, taken with transaction metadata) splits a key change as the batched path does."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 0), (2, 0)",
                    database=mariadb_db)
    props, records = captured(mariadb, mariadb_db, ["UPDATE t SET id = id + 10"], 6,
                              **{"provide.transaction.metadata": "true"})
    ops = [(json.loads(r.key)["id"], json.loads(r.value)["op"] if r.value else None) for r in records]
    assert sorted(ops, key=str) == sorted([(1, "d"), (1, None), (11, "c"), (2, "d"), (2, None), (12, "c")], key=str)


def test_truncate_is_an_event_when_not_skipped(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", "CREATE TABLE kept (id INT PRIMARY KEY)",
                    database=mariadb_db)
    props, runner = streaming(mariadb, mariadb_db, **{"skipped.operations": "none",
                                                      "table.include.list": f"{mariadb_db}.t",
                                                      "value.converter.schemas.enable": "true"})
    try:
        mariadb.execute("INSERT INTO t VALUES (1, 1)", "TRUNCATE TABLE kept", "TRUNCATE TABLE t",
                        "INSERT INTO t VALUES (2, 2)", database=mariadb_db)
        records = records_of(props, mariadb_db, "t", 3)
    finally:
        runner.close()
    create, truncate, second = records
    assert json.loads(create.value)["payload"]["op"] == "c" and json.loads(second.value)["payload"]["op"] == "c"
    assert truncate.key is None
    value = json.loads(truncate.value)
    assert value["schema"]["name"] == f"{props['topic.prefix']}.{mariadb_db}.t.Envelope"
    payload = value["payload"]
    assert payload["op"] == "t" and payload["before"] is None and payload["after"] is None
    assert payload["source"]["db"] == mariadb_db and payload["source"]["table"] == "t" and payload["source"]["gtid"]


def test_truncate_is_skipped_by_default(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=mariadb_db)
    props, records = captured(mariadb, mariadb_db, ["INSERT INTO t VALUES (1, 1)", "TRUNCATE TABLE t",
                                                    "INSERT INTO t VALUES (2, 2)"], 2)
    assert [json.loads(r.value)["op"] for r in records] == ["c", "c"]


def test_a_delete_on_a_keyless_table_is_followed_by_a_tombstone(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (v INT, s VARCHAR(10))", database=mariadb_db)
    props, records = captured(mariadb, mariadb_db, ["INSERT INTO t VALUES (1, 'a')", "DELETE FROM t",
                                                    "INSERT INTO t VALUES (2, 'b')"], 4)
    create, delete, tombstone, second = records
    assert [json.loads(r.value)["op"] for r in (create, delete, second)] == ["c", "d", "c"]
    assert delete.key is None and json.loads(delete.value)["before"] == {"v": 1, "s": "a"}
    assert tombstone.key is None and tombstone.value is None


def test_tables_whose_names_kafka_refuses_in_a_topic_get_topics_with_underscores(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE `order$items` (id INT PRIMARY KEY)", "CREATE TABLE `a b+c` (id INT PRIMARY KEY)",
                    "INSERT INTO `order$items` VALUES (1)", "INSERT INTO `a b+c` VALUES (2)", database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"snapshot.mode": "initial"})
    runner = InProcess(props)
    try:
        (snapshot,) = records_of(props, mariadb_db, "order_items", 1)
        mariadb.execute("INSERT INTO `a b+c` VALUES (3)", database=mariadb_db)
        read, created = records_of(props, mariadb_db, "a_b_c", 2)
    finally:
        runner.close()
    assert not runner.runner.errors, runner.runner.errors
    assert json.loads(snapshot.value)["op"] == "r" and json.loads(snapshot.value)["source"]["table"] == "order$items"
    assert json.loads(read.value)["after"] == {"id": 2} and json.loads(created.value)["after"] == {"id": 3}
    assert json.loads(created.value)["source"]["table"] == "a b+c"
