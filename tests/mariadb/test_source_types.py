"""Every type through the whole source: rows read by the snapshot (SELECT) and the same rows streamed from the binlog
give the same Kafka Connect schema and the same values, the Debezium values of test_types_real."""

from __future__ import annotations

import json
import time

import pytest

from connectors.mysql.connection import connect
from tests.integration.kafka_reading import read_topic
from tests.mariadb.test_source import BOOTSTRAP, InProcess, properties
from tests.mariadb.test_types_real import COLUMNS, EXPECTED, LITERAL, ROW

pytestmark = pytest.mark.integration


def insert(mariadb, database: str, first_id: int) -> None:
    connection = connect(mariadb.admin.with_database(database))
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
            row = {**ROW, "id": first_id}
            names = list(row)
            values = ", ".join(str(row[n]) if n in LITERAL else "%s" for n in names)
            cursor.execute(f"INSERT INTO all_types ({', '.join(names)}) VALUES ({values})",  # noqa: S608
                           [row[n] for n in names if n not in LITERAL])
            cursor.execute("INSERT INTO all_types (id) VALUES (%s)", (first_id + 1,))
    finally:
        connection.close()


def test_snapshot_and_stream_agree_on_every_type(mariadb, mariadb_db):
    mariadb.execute(f"CREATE TABLE all_types ({COLUMNS})", database=mariadb_db)
    insert(mariadb, mariadb_db, 1)  # read by the snapshot
    props = properties(mariadb, mariadb_db, **{"value.converter.schemas.enable": "true"})
    runner = InProcess(props)
    topic = f"{props['topic.prefix']}.{mariadb_db}.all_types"
    try:
        deadline = time.monotonic() + 60
        while len(read_topic(BOOTSTRAP, topic)) < 2:  # the snapshot is in Kafka: what follows is streamed
            assert time.monotonic() < deadline
            time.sleep(0.3)
        insert(mariadb, mariadb_db, 11)
        while len(records := read_topic(BOOTSTRAP, topic)) < 4:
            assert time.monotonic() < deadline
            time.sleep(0.3)
    finally:
        runner.close()
    events = [json.loads(r.value) for r in records]
    assert [e["payload"]["op"] for e in events] == ["r", "r", "c", "c"]
    read, read_nulls, streamed, streamed_nulls = events
    assert read["schema"] == streamed["schema"]
    fields = {f["field"]: f for f in read["schema"]["fields"][1]["fields"]}
    for name, (type_, logical, parameters, value) in EXPECTED.items():
        assert fields[name]["type"] == {"float32": "float", "float64": "double"}.get(type_, type_), name
        assert fields[name].get("name") == logical and fields[name].get("parameters", {}) == parameters, name
        if name != "id":
            assert read["payload"]["after"][name] == value, name
            assert streamed["payload"]["after"][name] == value, name
    assert {**read_nulls["payload"]["after"], "id": 0} == {**streamed_nulls["payload"]["after"], "id": 0}
    assert read["payload"]["source"]["snapshot"] == "true" and read_nulls["payload"]["source"]["snapshot"] == "last"
