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


def test_fast_encoding_is_json_converters(mariadb, mariadb_db):
    """The per-table encoders write exactly what the generic JsonConverter writes, for every type and for nulls."""
    from connectors.events import json_converter
    from connectors.mysql import catalog
    from connectors.mysql.envelope import SourceInfo, TableEvents
    from connectors.sources import engine_config

    mariadb.execute(f"CREATE TABLE all_types ({COLUMNS})", database=mariadb_db)
    insert(mariadb, mariadb_db, 1)
    connection = connect(mariadb.admin.with_database(mariadb_db))
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION time_zone = '+00:00'")
        schema = catalog.table_schema(connection, mariadb_db, "all_types")
        with connection.cursor() as cursor:
            cursor.execute("SELECT * FROM all_types ORDER BY id")
            rows = [{c.name: catalog.binlog_form(c, v) for c, v in zip(schema.columns, row, strict=True)}
                    for row in cursor.fetchall()]
    finally:
        connection.close()
    for modes in ({}, {"decimal.handling.mode": "string", "binary.handling.mode": "hex",
                       "time.precision.mode": "connect", "bigint.unsigned.handling.mode": "precise"}):
        _, config = engine_config(properties(mariadb, mariadb_db, **modes))
        events = TableEvents(config, schema, frozenset({"js"}))
        for full, empty in ((rows[0], rows[1]), (rows[1], rows[0])):
            before, after = events.row(full), events.row(empty)
            for source in (SourceInfo(mariadb_db, "all_types", 1, 2, "f", 3, 0, "true"),
                           SourceInfo(mariadb_db, "all_types", 1, 2, "f", 3, 4, "false", "0-1-5", 7, "UPDATE 'é'")):
                fast = events.encode_value("u", before, after, source, 123456789)
                generic = json_converter.value_json(events.value_schema,
                                                    events.value("u", before, after, source, 123456789))
                assert fast == generic
            key = json_converter.value_json(events.key_schema, {"id": before["id"]})
            assert events.key(before) == key.encode()  # key.converter.schemas.enable=false in properties()
