"""MariaDB's UUID, INET4 and INET6 columns, which the binlog's table map shows as BINARY(16) / BINARY(4).

A UUID column is what Debezium's MariaDB connector writes: a string named `io.debezium.data.Uuid` (version 1), the
value's lower-case text, without the column's DEFAULT in its schema, as a key too; the same from the snapshot and
from the binlog (where information_schema tells it from a BINARY(16) column, which stays bytes), the server's own
text of each value being the oracle, trailing zero bytes included. INET4 and INET6, on which Debezium's DDL parser
fails, fail the pipeline naming the column and how to leave it out, in the snapshot and in the stream, and are left
out with column.exclude.list. Real MariaDB, real Kafka."""

from __future__ import annotations

import base64
import json

import pytest

from tests.integration.kafka_reading import read_topic
from tests.mariadb.test_chunk_bytes import incremental_snapshot, snapshot_chunks
from tests.mariadb.test_event_kinds import records_of, streaming
from tests.mariadb.test_source import (
    BOOTSTRAP,
    InProcess,
    assert_resumed_chains,
    properties,
    run_until_two_chunks_are_committed,
)

pytestmark = pytest.mark.integration

TABLE = ("CREATE TABLE u (id UUID NOT NULL PRIMARY KEY, v UUID, "
         "d UUID NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001', b BINARY(16), n INT)")
SNAPSHOT = ["INSERT INTO u VALUES ('123e4567-e89b-12d3-a456-426655440001', '123E4567-E89B-12D3-A456-426655440000', "
            "'ffffffff-ffff-ffff-ffff-ffffffffffff', 'abcdefghijklmnop', 1)",
            "INSERT INTO u (id, n) VALUES ('00000000-0000-0000-0000-0000000000ff', 2)"]
STREAM = ["INSERT INTO u VALUES ('aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeee0000', '00000000-0000-0000-0000-000000000000', "
          "'01234567-89AB-4DEF-8123-456789ABCDEF', 'ab', 3)",
          "INSERT INTO u (id, v, n) VALUES ('11111111-2222-4333-8444-555555555555', "
          "'ff000000-0000-4000-8000-000000000000', 4)",
          "UPDATE u SET v = NULL, n = 5 WHERE n = 1",
          "UPDATE u SET id = '33333333-4444-4555-8666-777777777777' WHERE n = 4",
          "DELETE FROM u WHERE n = 2"]
UUID_FIELD = {"type": "string", "name": "io.debezium.data.Uuid", "version": 1}


def server_rows(mariadb, database: str) -> dict[str, dict]:
    """{id: the row} as the server's text of each UUID, and the BINARY(16)'s bytes."""
    rows = mariadb.execute("SELECT CAST(id AS CHAR), CAST(v AS CHAR), CAST(d AS CHAR), b, n FROM u",
                           database=database)
    return {row[0]: {"id": row[0], "v": row[1], "d": row[2],
                     "b": None if row[3] is None else base64.b64encode(row[3]).decode(), "n": row[4]}
            for row in rows}


def test_uuid_columns_are_uuid_strings_in_the_snapshot_and_the_stream_key_and_value(mariadb, mariadb_db):
    mariadb.execute(TABLE, *SNAPSHOT, database=mariadb_db)
    snapshot_rows = server_rows(mariadb, mariadb_db)
    props = properties(mariadb, mariadb_db, **{"value.converter.schemas.enable": "true",
                                               "key.converter.schemas.enable": "true"})
    runner = InProcess(props)
    try:
        records_of(props, mariadb_db, "u", 2, timeout=90)
        mariadb.execute(*STREAM[:2], database=mariadb_db)
        created_rows = server_rows(mariadb, mariadb_db)
        mariadb.execute(*STREAM[2:], database=mariadb_db)
        # 2 read, 2 created, 1 updated, a key change (delete, tombstone, create), a delete and its tombstone
        records = records_of(props, mariadb_db, "u", 10)
    finally:
        runner.close()
    assert not runner.runner.errors, runner.runner.errors
    final_rows = server_rows(mariadb, mariadb_db)
    values = [None if r.value is None else json.loads(r.value) for r in records]
    keys = [json.loads(r.key) for r in records]
    ops = [v and v["payload"]["op"] for v in values]
    assert ops == ["r", "r", "c", "c", "u", "d", None, "c", "d", None], ops

    for number in (0, 1):  # the snapshot
        after = values[number]["payload"]["after"]
        assert after == snapshot_rows[after["id"]]
    for number in (2, 3):  # streamed inserts
        after = values[number]["payload"]["after"]
        assert after == created_rows[after["id"]]
    assert created_rows["aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeee0000"]["v"] == "00000000-0000-0000-0000-000000000000"
    assert created_rows["11111111-2222-4333-8444-555555555555"]["v"] == "ff000000-0000-4000-8000-000000000000"
    updated = values[4]["payload"]
    assert updated["before"] == snapshot_rows["123e4567-e89b-12d3-a456-426655440001"]
    assert updated["before"]["v"] == "123e4567-e89b-12d3-a456-426655440000"  # trailing zero bytes kept
    assert updated["after"] == final_rows["123e4567-e89b-12d3-a456-426655440001"]
    assert values[5]["payload"]["before"] == created_rows["11111111-2222-4333-8444-555555555555"]
    assert values[7]["payload"]["after"] == final_rows["33333333-4444-4555-8666-777777777777"]
    assert values[8]["payload"]["before"] == snapshot_rows["00000000-0000-0000-0000-0000000000ff"]
    assert [k["payload"]["id"] for k in keys] == [
        values[0]["payload"]["after"]["id"], values[1]["payload"]["after"]["id"],
        "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeee0000", "11111111-2222-4333-8444-555555555555",
        "123e4567-e89b-12d3-a456-426655440001", "11111111-2222-4333-8444-555555555555",
        "11111111-2222-4333-8444-555555555555", "33333333-4444-4555-8666-777777777777",
        "00000000-0000-0000-0000-0000000000ff", "00000000-0000-0000-0000-0000000000ff"]

    for value, key in zip(values, keys, strict=True):
        assert key["schema"]["fields"] == [{**UUID_FIELD, "optional": False, "field": "id"}]
        if value is None:
            continue
        fields = {f["field"]: f for f in value["schema"]["fields"][1]["fields"]}
        assert fields["id"] == {**UUID_FIELD, "optional": False, "field": "id"}
        assert fields["v"] == {**UUID_FIELD, "optional": True, "field": "v"}
        assert fields["d"] == {**UUID_FIELD, "optional": False, "field": "d"}  # no default, as Debezium's
        assert fields["b"] == {"type": "bytes", "optional": True, "field": "b"}  # a BINARY(16) stays bytes


@pytest.mark.parametrize("kind", ["INET4", "INET6"])
def test_inet_columns_fail_the_snapshot_naming_the_column(mariadb, mariadb_db, kind):
    value = "10.0.0.1" if kind == "INET4" else "::1"
    mariadb.execute(f"CREATE TABLE x (id INT PRIMARY KEY, address {kind})",
                    f"INSERT INTO x VALUES (1, '{value}')", database=mariadb_db)  # noqa: S608 - constants
    runner = InProcess(properties(mariadb, mariadb_db))
    runner.thread.join(90)
    assert not runner.thread.is_alive()
    (error,) = runner.runner.errors.values()
    assert f"column {mariadb_db}.x.address has a type this connector does not map ({kind.lower()})" in str(error)
    assert f"column.exclude.list={mariadb_db}.x.address" in str(error)


@pytest.mark.parametrize("kind", ["INET4", "INET6"])
def test_inet_columns_fail_the_stream_naming_the_column_and_are_left_out_when_excluded(mariadb, mariadb_db, kind):
    value = "10.0.0.1" if kind == "INET4" else "::1"
    statements = [f"CREATE TABLE x (id INT PRIMARY KEY, address {kind}, b BINARY({4 if kind == 'INET4' else 16}))",
                  f"INSERT INTO x VALUES (1, '{value}', 'ab')"]  # noqa: S608 - constants
    props, runner = streaming(mariadb, mariadb_db)
    try:
        mariadb.execute(*statements, database=mariadb_db)
        runner.thread.join(90)
        assert not runner.thread.is_alive()
    finally:
        runner.close()
    (error,) = runner.runner.errors.values()
    assert f"column {mariadb_db}.x.address has a type this connector does not map ({kind.lower()})" in str(error)
    assert f"column.exclude.list={mariadb_db}.x.address" in str(error)

    mariadb.execute("DROP TABLE x", database=mariadb_db)
    props, runner = streaming(mariadb, mariadb_db, **{"column.exclude.list": f"{mariadb_db}.x.address"})
    try:
        mariadb.execute(*statements, database=mariadb_db)
        (record,) = records_of(props, mariadb_db, "x", 1)
    finally:
        runner.close()
    padded = b"ab".ljust(4 if kind == "INET4" else 16, b"\0")
    assert json.loads(record.value)["after"] == {"id": 1, "b": base64.b64encode(padded).decode()}


def uuid_keyed(mariadb, database: str) -> None:
    """1,000 rows keyed by UUIDs whose server order (MariaDB compares UUIDs by their groups, time-ordered for
    version 1) is not their text's: every id's first group is its row number backwards."""
    mariadb.execute("CREATE TABLE k (id UUID NOT NULL PRIMARY KEY, n INT NOT NULL UNIQUE, v INT NOT NULL)",
                    database=database)
    values = ", ".join(f"('{999 - g:08x}-{g:04x}-1000-8000-{g * 7919 % 1000:012x}', {g}, 0)" for g in range(1000))
    mariadb.execute(f"INSERT INTO k VALUES {values}", database=database)  # noqa: S608 - literals


def test_a_table_keyed_by_a_uuid_is_read_in_chunks(mariadb, mariadb_db):
    uuid_keyed(mariadb, mariadb_db)
    chunks, numbers = snapshot_chunks(mariadb, mariadb_db, "k", 1000, {"snapshot.chunk.size": "100"}, "n")
    assert numbers == list(range(1000))  # every row once
    assert chunks == 10


def test_a_resumed_snapshot_of_uuid_keys_gives_each_row_its_exact_chain(mariadb, mariadb_db, monkeypatch):
    """As tests/mariadb/test_source.py's test of string keys, with a UUID key: stopped after two chunks, rows changed
    while stopped; the chunks read after the restart are read in a view of their own, and the stream asks the server
    which of them holds a changed UUID key (the binlog's bytes against the plan's text bounds)."""
    uuid_keyed(mariadb, mariadb_db)
    props = properties(mariadb, mariadb_db, **{"snapshot.chunk.size": "100"})
    topic = f"{props['topic.prefix']}.{mariadb_db}.k"
    run_until_two_chunks_are_committed(props, monkeypatch)
    read_first = {json.loads(r.value)["after"]["n"] for r in read_topic(BOOTSTRAP, topic)}
    assert 0 < len(read_first) < 1000
    gone = next(n for n in range(999, -1, -1) if n not in read_first)
    mariadb.execute("UPDATE k SET v = 1", f"DELETE FROM k WHERE n = {gone}", database=mariadb_db)  # noqa: S608
    first = min(read_first)
    runner = InProcess(props)
    try:
        mariadb.execute(f"UPDATE k SET v = 2 WHERE n = {first}", database=mariadb_db)  # noqa: S608 - a number
        records_of(props, mariadb_db, "k", len(read_first) * 2 + (999 - len(read_first)) + 1, timeout=90)
        values = [json.loads(r.value) for r in read_topic(BOOTSTRAP, topic) if r.value is not None]
    finally:
        runner.close()
    assert not runner.runner.errors
    assert_resumed_chains(values, "n", read_first, first, gone)


def test_an_incremental_snapshot_of_a_uuid_keyed_table_reads_windows_of_its_key_ranges(mariadb, mariadb_db):
    uuid_keyed(mariadb, mariadb_db)
    mariadb.execute("CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT)",
                    f"GRANT INSERT, DELETE ON `{mariadb_db}`.`dbz_signal` TO '{mariadb.cdc.user}'@'%'",
                    database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"snapshot.mode": "no_data", "incremental.snapshot.chunk.size": "100",
                                               "signal.data.collection": f"{mariadb_db}.dbz_signal"})
    runner = InProcess(props)
    try:
        metrics = incremental_snapshot(runner, f"{mariadb_db}.k", lambda: mariadb.execute(
            "UPDATE k SET v = 1 WHERE n = 500", database=mariadb_db))  # while it runs
        values = [json.loads(r.value) for r in records_of(props, mariadb_db, "k", 1000)]
    finally:
        runner.close()
    assert metrics["ChunksTotal"] == 10
    final = {}
    for value in values:
        final[value["after"]["n"]] = value["after"]["v"]
    assert len(final) == 1000 and final[500] == 1 and set(final.values()) == {0, 1}
    reads = [value["after"]["n"] for value in values if value["op"] == "r"]
    assert len(reads) == len(set(reads)) and set(range(1000)) - set(reads) <= {500}  # each row read once at most
