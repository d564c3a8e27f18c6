"""Snapshot chunks bounded in bytes (`snapshot.chunk.max.bytes`, core.snapshot.chunks.planned_chunk_rows): a table
of large rows is planned in chunks of fewer rows, and every row still arrives once."""

from __future__ import annotations

import logging
import re

import psycopg
from psycopg import sql

from connectors.core.snapshot.chunks import chunks_of
from connectors.core.verify import Verifier, VerifyOptions
from connectors.postgres import verify as pg_verify
from connectors.postgres.snapshot import plan_table, primary_key, range_clause, row_bytes
from tests.integration.kafka_reading import read_topic
from tests.postgres.test_source import Running, events, payloads, pg_config
from tests.type_check import records_at_least
from tests.waiting import wait_for

VALUE_BYTES = 20_000  # each row of `wide` holds about this much text
ROWS = 60


def fill(pg_db) -> None:
    pg_db.execute("CREATE TABLE wide (id int PRIMARY KEY, body text)")
    # md5 text repeated: about VALUE_BYTES of text a row, stored compressed in TOAST
    pg_db.execute(f"INSERT INTO wide SELECT g, repeat(md5(g::text), {VALUE_BYTES // 32}) "  # noqa: S608
                  f"FROM generate_series(1, {ROWS}) g")
    pg_db.execute("CREATE TABLE narrow (id int PRIMARY KEY, n int)")
    pg_db.execute("INSERT INTO narrow SELECT g, g FROM generate_series(1, 500) g")


def test_row_bytes_estimates_a_row_by_its_text_and_its_stored_size(pg_db):
    fill(pg_db)
    with psycopg.connect(pg_db.dsn) as conn, conn.cursor() as cursor:
        wide, narrow = row_bytes(cursor, "public.wide"), row_bytes(cursor, "public.narrow")
        pg_db.execute("ANALYZE narrow")
        analyzed = row_bytes(cursor, "public.narrow")
        cursor.execute("CREATE TABLE empty (id int PRIMARY KEY)")
        empty = row_bytes(cursor, "public.empty")
    assert VALUE_BYTES <= wide < 2 * VALUE_BYTES  # the text, though TOAST stores it compressed
    assert 0 < narrow < 100 and 0 < analyzed < 200
    assert empty == 0


def test_row_bytes_keeps_the_transaction_when_the_sample_is_refused(pg_db):
    """A role that may not read every column: the stored size stands and the transaction goes on."""
    fill(pg_db)
    pg_db.execute("ANALYZE wide")
    pg_db.execute("REVOKE SELECT ON wide FROM CURRENT_USER")  # the catalogue stays readable, the rows do not
    with psycopg.connect(pg_db.dsn) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT 1")  # in a transaction, as the snapshot's sessions are
        estimate = row_bytes(cursor, "public.wide")
        cursor.execute("SELECT 2")
        assert cursor.fetchone() == (2,)
    assert 0 < estimate < VALUE_BYTES // 2  # pg_table_size over reltuples: the values stored compressed, not sampled


def planned_chunks(caplog, table: str) -> int:
    found = [int(m.group(1)) for r in caplog.records
             if (m := re.search(rf"public\.{table} planned as (\d+) chunks", r.getMessage()))]
    assert len(found) == 1, found
    return found[0]


def snapshot_of(pg_db, stack, caplog, name: str, table: str, field: str, **extra) -> tuple[int, list[int]]:
    """An initial_only snapshot of `table` (ROWS rows) with the properties `extra`: (its planned chunks, the sorted
    values of `field` of its events); `caplog` holds its log."""
    config = pg_config(pg_db, name, **{"snapshot.mode": "initial_only", "snapshot.max.threads": 2, **extra})
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="connectors.core.snapshot.coordinator"):
        running = Running(config, stack.kafka_bootstrap)
        try:
            values = payloads(events(stack.kafka_bootstrap, f"{name}.public.{table}", ROWS))
        finally:
            running.stop()
    return planned_chunks(caplog, table), sorted(v["after"][field] for v in values if v)


def snapshot(pg_db, stack, caplog, name: str, **extra) -> tuple[int, list[int]]:
    return snapshot_of(pg_db, stack, caplog, name, "wide", "id", **extra)


def test_a_table_of_large_rows_is_planned_in_chunks_of_fewer_rows(pg_db, stack, unique_name, caplog):
    fill(pg_db)
    name = "pgcb" + unique_name.replace("-", "")[-10:]
    limit = 5 * VALUE_BYTES + VALUE_BYTES // 2  # five rows' text and a half
    chunks, ids = snapshot(pg_db, stack, caplog, name, **{"snapshot.chunk.max.bytes": limit})
    assert ids == list(range(1, ROWS + 1))  # every row once
    assert chunks == ROWS // 5  # chunks of five rows
    chunks, ids = snapshot(pg_db, stack, caplog, name + "x", **{"snapshot.chunk.max.bytes": 0})
    assert ids == list(range(1, ROWS + 1))
    assert chunks == 1  # bounded in rows only: 60 < snapshot.chunk.size
    chunks, ids = snapshot(pg_db, stack, caplog, name + "y", **{"snapshot.chunk.max.bytes": 1000})
    assert ids == list(range(1, ROWS + 1))  # rows over the bound: a chunk each, none left out
    assert chunks == ROWS


def test_chunks_of_any_size_cover_every_key_once(pg_db):
    """plan_table's boundaries for chunks of 1, 2, 3 and 7 rows: every key in exactly one chunk (a chunk of one row
    once made an empty plan)."""
    pg_db.execute("CREATE TABLE keys (id int PRIMARY KEY)")
    pg_db.execute("INSERT INTO keys SELECT generate_series(1, 7)")
    with psycopg.connect(pg_db.dsn) as conn, conn.cursor() as cursor:
        key = primary_key(cursor, "public.keys")
        for size in (1, 2, 3, 7):
            seen = []
            for chunk in chunks_of("public.keys", plan_table(cursor, "public.keys", size, key).bounds, 0):
                where, params = range_clause(key, chunk)
                cursor.execute(sql.SQL("SELECT id FROM keys") + where, params)
                seen.extend(row[0] for row in cursor.fetchall())
            assert seen == list(range(1, 8)), size


def test_an_incremental_snapshot_of_large_rows_reads_windows_of_fewer_rows(pg_db, stack, unique_name):
    fill(pg_db)
    pg_db.execute("CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data text)")
    name = "pgci" + unique_name.replace("-", "")[-10:]
    config = pg_config(pg_db, name, **{"snapshot.mode": "no_data", "signal.data.collection": "public.dbz_signal",
                                       "snapshot.chunk.max.bytes": 5 * VALUE_BYTES + VALUE_BYTES // 2})
    running = Running(config, stack.kafka_bootstrap)
    try:
        errors = lambda: str(running.runner.errors)  # noqa: E731 - what a failed wait shows
        pipeline = wait_for(lambda: next((p for p in running.runner.pipelines.values()
                                          if p.metrics.phase == "streaming"), None), 60, "streaming", errors)
        pipeline.request_incremental_snapshot(["public.wide"])
        metrics = wait_for(lambda: (m := pipeline.snapshot_metrics.snapshot())["SnapshotKind"] == "incremental"
                           and not m["SnapshotRunning"] and m, 60, "the incremental snapshot to complete", errors)
        values = payloads(events(stack.kafka_bootstrap, f"{name}.public.wide", ROWS))
    finally:
        running.stop()
    assert sorted(v["after"]["id"] for v in values if v["op"] == "r") == list(range(1, ROWS + 1))
    assert metrics["ChunksTotal"] == ROWS // 5  # windows of five rows, not incremental.snapshot.chunk.size (1024)


def test_a_plan_too_big_for_the_offset_record_is_read_in_fewer_larger_chunks(pg_db, stack, unique_name, caplog,
                                                                             monkeypatch):
    """The plan is kept in the offset record: one Kafka message. Planned with more chunks than it holds (here a
    4 KB budget instead of 512 KB, as a table of hundreds of millions of rows would be), the boundaries are thinned:
    every row is still read once, and the offset record stays under the budget."""
    monkeypatch.setattr("connectors.core.snapshot.coordinator.PLAN_BYTES", 4096)
    pg_db.execute("CREATE TABLE t (id bigint PRIMARY KEY)")
    pg_db.execute("INSERT INTO t SELECT generate_series(100000000001, 100000003000)")
    name = "pgpb" + unique_name.replace("-", "")[-10:]
    config = pg_config(pg_db, name, **{"snapshot.mode": "initial_only", "snapshot.chunk.size": 2})
    with caplog.at_level(logging.INFO, logger="connectors.core.snapshot.coordinator"):
        running = Running(config, stack.kafka_bootstrap)
        try:
            values = payloads(events(stack.kafka_bootstrap, f"{name}.public.t", 3000))
        finally:
            running.stop()
    assert sorted(v["after"]["id"] for v in values) == list(range(100000000001, 100000003001))
    assert planned_chunks(caplog, "t") == 1500
    read_as = [int(m.group(1)) for r in caplog.records if (m := re.search(r"public\.t read as (\d+) chunks",
                                                                           r.getMessage()))]
    assert len(read_as) == 1 and 100 < read_as[0] < 1500
    offsets = [r.value for r in read_topic(stack.kafka_bootstrap, f"{name}.offsets") if r.value]
    assert max(map(len, offsets)) < 4096 + 1024  # the plan and the record's other fields


def test_verify_reads_a_table_of_large_rows_in_chunks_of_fewer_rows(pg_db, stack, unique_name):
    fill(pg_db)
    name = "pgcv" + unique_name.replace("-", "")[-10:]
    config = pg_config(pg_db, name, **{"table.include.list": "public.wide"})
    running = Running(config, stack.kafka_bootstrap)
    try:
        records_at_least(running, stack.kafka_bootstrap, f"{name}.public.wide", ROWS)
        options = VerifyOptions(chunk_size=8192, chunk_max_bytes=5 * VALUE_BYTES + VALUE_BYTES // 2)
        report = Verifier(config, pg_verify.partitions(config), stack.kafka_bootstrap, options).run()
    finally:
        running.stop()
    assert report.mismatched == 0, report.to_json()
    assert report.rows == ROWS and report.chunks == ROWS // 5


def test_a_keyless_table_over_the_bound_is_one_chunk_with_a_warning(pg_db, stack, unique_name, caplog):
    pg_db.execute("CREATE TABLE loose (n int, body text)")
    pg_db.execute(f"INSERT INTO loose SELECT g, repeat(md5(g::text), {VALUE_BYTES // 32}) "  # noqa: S608
                  f"FROM generate_series(1, {ROWS}) g")
    pg_db.execute("ANALYZE loose")  # its row count, as the plan estimates it
    name = "pgkl" + unique_name.replace("-", "")[-10:]
    chunks, numbers = snapshot_of(pg_db, stack, caplog, name, "loose", "n",
                                  **{"snapshot.chunk.max.bytes": 5 * VALUE_BYTES + VALUE_BYTES // 2})
    assert numbers == list(range(1, ROWS + 1))
    assert chunks == 1
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("public.loose is read as one chunk" in text and "about 60 rows" in text for text in warned), warned
