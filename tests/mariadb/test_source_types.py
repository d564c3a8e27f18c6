"""Every type through the whole MariaDB connector into the real Kafka: rows read by the initial snapshot (SELECT), the
same rows inserted afterwards, streamed from the binlog, then all read again by an incremental snapshot, consumed
read_committed with key and value schemas on, each column's schema and value compared with the Debezium values of
tests/mariadb/all_types.py (those test_types_real checks through the binlog reader alone), under the default modes
and the others."""

from __future__ import annotations

import json

import pytest

from connectors.mysql.connection import connect
from tests.mariadb.all_types import (
    COLUMNS,
    DEFAULTS,
    DOUBLE_EXPECTED,
    EXPECTED,
    NOT_NULL,
    OTHER_MODES,
    OTHER_MODES_EXPECTED,
    OUT_OF_RANGE_UNDER_OTHER_MODES,
    SELECTED,
    insert_rows,
)
from tests.mariadb.test_source import BOOTSTRAP, InProcess, properties
from tests.type_check import records_at_least, snapshot_stream_incremental_values

pytestmark = pytest.mark.integration

# mode -> (connector properties, columns whose (type, name, parameters, value) differ, columns not compared)
MODES = {
    "default": ({}, {}, set()),
    "other": (OTHER_MODES, OTHER_MODES_EXPECTED, OUT_OF_RANGE_UNDER_OTHER_MODES),
    "double": ({"decimal.handling.mode": "double"}, DOUBLE_EXPECTED, set()),
}
JSON_TYPES = {"float32": "float", "float64": "double"}  # JsonConverter's names of Connect's float types


@pytest.mark.parametrize("mode", list(MODES))
def test_every_type_through_the_snapshot_and_the_stream(mariadb, mariadb_db, mode):
    modes, changed, skipped = MODES[mode]
    mariadb.execute(f"CREATE TABLE all_types ({COLUMNS})",
                    "CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT)",
                    f"GRANT INSERT, DELETE ON `{mariadb_db}`.`dbz_signal` TO '{mariadb.cdc.user}'@'%'",
                    database=mariadb_db)
    insert_rows(mariadb, mariadb_db, 1)  # ids 1 and 2, read by the snapshot
    props = properties(mariadb, mariadb_db, **{"value.converter.schemas.enable": "true",
                                               "key.converter.schemas.enable": "true",
                                               "signal.data.collection": f"{mariadb_db}.dbz_signal", **modes})
    runner = InProcess(props)
    topic = f"{props['topic.prefix']}.{mariadb_db}.all_types"
    try:
        # the snapshot is in Kafka: the next rows can only come from the binlog
        records_at_least(runner, BOOTSTRAP, topic, 2)
        insert_rows(mariadb, mariadb_db, 11)
        records_at_least(runner, BOOTSTRAP, topic, 4)
        request = json.dumps({"data-collections": [f"{mariadb_db}.all_types"], "type": "incremental"})
        mariadb.execute(f"INSERT INTO dbz_signal VALUES ('types-1', 'execute-snapshot', '{request}')",  # noqa: S608
                        database=mariadb_db)
        records = records_at_least(runner, BOOTSTRAP, topic, 8)  # the four rows again, by an incremental snapshot
    finally:
        runner.close()
    events, after = snapshot_stream_incremental_values(records, topic, (1, 2, 11, 12))
    fields = {f["field"]: f for f in after["fields"]}
    expected = {**EXPECTED, **changed}
    assert list(fields) == list(EXPECTED)  # every column, in the table's order
    read, read_nulls, streamed, streamed_nulls, *incremental = (e["payload"]["after"] for e in events)
    for name, (type_, logical, parameters, value) in expected.items():  # one by one, so a failure names the column
        field = fields[name]
        assert (field["type"], field.get("name"), field.get("parameters", {})) == (
            JSON_TYPES.get(type_, type_), logical, parameters), name
        assert field["optional"] is (name not in NOT_NULL), name
        assert field.get("version") == (1 if logical else None), name
        if name != "id" and name not in skipped:
            assert read[name] == SELECTED.get(name, value), ("snapshot", name)
            assert streamed[name] == value, ("stream", name)
    for row in (incremental[0], incremental[2]):  # the columns left out above too
        assert {**read, "id": 0} == {**row, "id": 0}
    assert {**read, "id": 0, **{name: streamed[name] for name in SELECTED}} == {**streamed, "id": 0}
    for how, nulls, row_id in (("snapshot", read_nulls, 2), ("stream", streamed_nulls, 12),
                               ("incremental", incremental[1], 2), ("incremental", incremental[3], 12)):
        assert nulls == {name: row_id if name == "id" else DEFAULTS.get(name) for name in EXPECTED}, how


def test_fast_encoding_is_json_converters(mariadb, mariadb_db):
    """The per-table encoders write exactly what the generic JsonConverter writes, for every type and for nulls."""
    from connectors.events import json_converter
    from connectors.mysql import catalog
    from connectors.mysql.envelope import SourceInfo, TableEvents
    from connectors.sources import engine_config

    mariadb.execute(f"CREATE TABLE all_types ({COLUMNS})", database=mariadb_db)
    insert_rows(mariadb, mariadb_db, 1)
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
    for modes in ({}, OTHER_MODES):
        _, config = engine_config(properties(mariadb, mariadb_db, **modes))
        events = TableEvents(config, schema)
        for full, empty in ((rows[0], rows[1]), (rows[1], rows[0])):
            before, after = events.row(full), events.row(empty)
            for source in (SourceInfo(mariadb_db, "all_types", 1, 2, "f", 3, 0, "true"),
                           SourceInfo(mariadb_db, "all_types", 1, 2, "f", 3, 4, "false", "0-1-5", 7, "UPDATE 'é'")):
                fast = events.encode_value("u", before, after, source, 123456789)
                generic = json_converter.value_json(events.value_schema,
                                                    events.value("u", before, after, source, 123456789))
                assert fast == generic
                block = {"id": "0-1-5", "total_order": 2, "data_collection_order": 1}
                same_key = {**empty, "id": full["id"]}  # an update that keeps its key is one event
                written = events.messages("u", full, same_key, source, block, now_ns=123456789)[0]
                assert written.value == json_converter.envelope(
                    events.value_schema, events.value("u", before, events.row(same_key), source, 123456789, block),
                    config.value_schemas).encode()
                key = json_converter.envelope(events.key_schema, {"id": full["id"]}, config.key_schemas)
                assert written.key == key.encode()
            key = json_converter.value_json(events.key_schema, {"id": before["id"]})
            assert events.key(before) == key.encode()  # key.converter.schemas.enable=false in properties()
