"""Snapshot chunks bounded in bytes (`snapshot.chunk.max.bytes`, core.snapshot.chunks.planned_chunk_rows): a table
of large rows is planned in chunks of fewer rows, and every row still arrives once."""

from __future__ import annotations

import json

import pytest

from connectors.mysql import catalog
from connectors.mysql.connection import connect
from connectors.mysql.snapshot_reader import row_bytes
from tests.mariadb.test_source import BOOTSTRAP, InProcess, properties
from tests.type_check import records_at_least
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

VALUE_BYTES = 20_000  # each row of `wide` holds about this much text
ROWS = 60


def fill(mariadb, database: str) -> None:
    mariadb.execute("CREATE TABLE wide (id INT PRIMARY KEY, body MEDIUMTEXT)",
                    f"INSERT INTO wide SELECT seq, REPEAT(MD5(seq), {VALUE_BYTES // 32}) FROM seq_1_to_{ROWS}",  # noqa: S608
                    "CREATE TABLE narrow (id INT PRIMARY KEY, n INT)",
                    "INSERT INTO narrow SELECT seq, seq FROM seq_1_to_500",
                    "CREATE TABLE empty (id INT PRIMARY KEY)", database=database)


def estimate(mariadb, database: str, table: str) -> int:
    connection = connect(mariadb.cdc.with_database(database))
    try:
        schema = catalog.table_schema(connection, database, table)
        with connection.cursor() as cursor:
            return row_bytes(cursor, schema)
    finally:
        connection.close()


def test_row_bytes_estimates_a_row_by_its_values_and_the_statistics(mariadb, mariadb_db):
    fill(mariadb, mariadb_db)
    assert VALUE_BYTES <= estimate(mariadb, mariadb_db, "wide") < 2 * VALUE_BYTES
    assert 0 < estimate(mariadb, mariadb_db, "narrow") < 200
    assert estimate(mariadb, mariadb_db, "empty") < 100  # InnoDB's statistics of an empty table: a page or less


def snapshot_chunks(mariadb, database: str, table: str, rows: int, extra: dict,
                    field: str = "id") -> tuple[int, list]:
    """An initial_only snapshot of `table` (`rows` rows) with the properties `extra`: (its chunks, the sorted values
    of `field` of its events)."""
    props = properties(mariadb, database, **{"snapshot.mode": "initial_only",
                                             "table.include.list": f"{database}.{table}", **extra})
    runner = InProcess(props)
    try:
        records = records_at_least(runner, BOOTSTRAP, f"{props['topic.prefix']}.{database}.{table}", rows)
        pipeline = wait_for(lambda: next(iter(runner.runner.pipelines.values()), None), 30, "the pipeline")
        metrics = wait_for(lambda: (m := pipeline.snapshot_metrics.snapshot())["ChunksTotal"] and m, 30, "the plan")
    finally:
        runner.close()
    return metrics["ChunksTotal"], sorted(json.loads(r.value)["after"][field] for r in records if r.value is not None)


def snapshot(mariadb, database: str, **extra) -> tuple[int, list[int]]:
    return snapshot_chunks(mariadb, database, "wide", ROWS, extra)


def test_a_table_of_large_rows_is_planned_in_chunks_of_fewer_rows(mariadb, mariadb_db):
    fill(mariadb, mariadb_db)
    limit = 5 * VALUE_BYTES + VALUE_BYTES // 2  # five rows' values and a half
    chunks, ids = snapshot(mariadb, mariadb_db, **{"snapshot.chunk.max.bytes": str(limit)})
    assert ids == list(range(1, ROWS + 1))  # every row once
    assert chunks == ROWS // 5  # chunks of five rows
    chunks, ids = snapshot(mariadb, mariadb_db, **{"snapshot.chunk.max.bytes": "0"})
    assert ids == list(range(1, ROWS + 1))
    assert chunks == 1  # bounded in rows only: 60 < snapshot.chunk.size
    chunks, ids = snapshot(mariadb, mariadb_db, **{"snapshot.chunk.max.bytes": "1000"})
    assert ids == list(range(1, ROWS + 1))  # rows over the bound: a chunk each, none left out
    assert chunks == ROWS


def incremental_snapshot(runner, collection: str, meanwhile=lambda: None, timeout: float = 90.0) -> dict:
    """Once `runner`'s pipeline streams, an incremental snapshot of `collection`, `meanwhile()` run as it starts:
    its snapshot metrics once it completed."""
    errors = lambda: str(runner.runner.errors)  # noqa: E731 - what a failed wait shows
    pipeline = wait_for(lambda: next((p for p in runner.runner.pipelines.values()
                                      if p.metrics.phase == "streaming"), None), 60, "streaming", errors)
    pipeline.request_incremental_snapshot([collection])
    meanwhile()
    return wait_for(lambda: (m := pipeline.snapshot_metrics.snapshot())["SnapshotKind"] == "incremental"
                    and not m["SnapshotRunning"] and m, timeout, "the incremental snapshot to complete", errors)


def test_an_incremental_snapshot_of_large_rows_reads_windows_of_fewer_rows(mariadb, mariadb_db):
    fill(mariadb, mariadb_db)
    mariadb.execute("CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT)",
                    f"GRANT INSERT, DELETE ON `{mariadb_db}`.`dbz_signal` TO '{mariadb.cdc.user}'@'%'",
                    database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"snapshot.mode": "no_data",
                                               "signal.data.collection": f"{mariadb_db}.dbz_signal",
                                               "snapshot.chunk.max.bytes": str(5 * VALUE_BYTES + VALUE_BYTES // 2)})
    runner = InProcess(props)
    try:
        metrics = incremental_snapshot(runner, f"{mariadb_db}.wide")
        records = records_at_least(runner, BOOTSTRAP, f"{props['topic.prefix']}.{mariadb_db}.wide", ROWS)
    finally:
        runner.close()
    values = [json.loads(r.value) for r in records if r.value is not None]
    assert sorted(v["after"]["id"] for v in values if v["op"] == "r") == list(range(1, ROWS + 1))
    assert metrics["ChunksTotal"] == ROWS // 5  # windows of five rows, not incremental.snapshot.chunk.size (1024)
