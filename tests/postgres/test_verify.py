"""Verify against a real PostgreSQL, a running connector and Kafka (docs/verify.md): a topic corrupted on purpose
is named key by key; a run under a concurrent write workload finds nothing."""

from __future__ import annotations

import json
import subprocess
import sys

import psycopg2
import psycopg2.extensions
import pytest

from bench.write_load import Workload, postgres_writer
from connectors.core.verify import Verifier, VerifyOptions
from connectors.postgres import verify as pg_verify
from tests.postgres.test_source import Running, pg_config
from tests.type_check import records_at_least
from tests.verify_corruption import after_of, found, latest_event, produce, with_after
from tests.verify_workload import STRAY_KEY, assert_no_false_alarm, verify_repeatedly

pytestmark = [pytest.mark.integration]


def run_verify(config, bootstrap, **options):
    return Verifier(config, pg_verify.partitions(config), bootstrap, VerifyOptions(chunk_size=7, **options)).run()


def run_cli(pg_db, name, bootstrap, tmp_path):
    """`python -m connectors verify` on the same connector's properties."""
    dsn = psycopg2.extensions.parse_dsn(pg_db.dsn)
    props = {"name": name, "connector.class": "postgres", "topic.prefix": name, "database.hostname": dsn["host"],
             "database.port": dsn["port"], "database.user": dsn["user"], "database.password": dsn.get("password"),
             "database.dbname": pg_db.name, "slot.name": pg_db.name, "publication.autocreate.mode": "filtered",
             "offset.storage.topic": f"{name}.offsets", "column.mask.with.4.chars": "public.items.name",
             "snapshot.chunk.size": 7}
    path = tmp_path / "connector.json"
    path.write_text(json.dumps(props))
    return subprocess.run([sys.executable, "-m", "connectors", "verify", str(path), "--bootstrap-servers", bootstrap],
                          capture_output=True, text=True, timeout=300, check=False)


def test_verify_names_exactly_the_keys_a_corrupted_topic_gets_wrong(pg_db, stack, unique_name, tmp_path):
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    topic = f"{name}.public.items"
    pg_db.execute("CREATE TABLE items (id int PRIMARY KEY, name text, qty int)")
    pg_db.execute("INSERT INTO items SELECT g, 'item ' || g, g * 10 FROM generate_series(1, 30) g")
    config = pg_config(pg_db, name, **{"column.mask.with.4.chars": "public.items.name"})
    running = Running(config, bootstrap)
    try:
        records_at_least(running, bootstrap, topic, 30)
        pg_db.execute("DELETE FROM items WHERE id = 5")
        pg_db.execute("UPDATE items SET qty = 1 WHERE id = 9")
        records_at_least(running, bootstrap, topic, 33)

        clean = run_verify(config, bootstrap)
        assert clean.mismatched == 0, clean.to_json()
        assert clean.rows == 29 and clean.chunks == 5

        key7, value7 = latest_event(bootstrap, topic, {"id": 7})
        _, value9 = latest_event(bootstrap, topic, {"id": 9})
        produce(bootstrap, topic, {"id": 1000}, with_after(value7, {**after_of(value7), "id": 1000}))  # stray
        produce(bootstrap, topic, {"id": 5}, with_after(value9, {**after_of(value9), "id": 5}))  # a deleted key
        produce(bootstrap, topic, {"id": 7}, with_after(value7, {**after_of(value7), "qty": 71}))  # changed value

        report = run_verify(config, bootstrap)
        cli = run_cli(pg_db, name, bootstrap, tmp_path)
    finally:
        running.stop()
    assert cli.returncode == 1, cli.stderr
    assert "3 rows differ" in cli.stdout
    assert 'different public.items {"id":7} {"qty": [70, 71]}' in " ".join(cli.stdout.split())
    assert found(report) == {'{"id":1000}': "extra", '{"id":5}': "extra", '{"id":7}': "different"}
    assert (report.extra, report.different, report.missing) == (2, 1, 0)
    changed = next(m for m in report.mismatches if m.kind == "different")
    assert changed.fields == {"qty": [70, 71]}
    assert report.tables[0].chunks_differing == 1  # only chunk [7, 14) was compared row by row
    assert report.positions and report.positions[0]["source"]["lsn"]


def test_a_concurrent_write_workload_raises_no_false_alarm(pg_db, stack, unique_name):
    """Inserts, updates, deletes and primary-key updates at 200 writes/s for 20 s while Verify runs again and again:
    no run reports a difference; a stray record produced into the topic meanwhile is then named, alone."""
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    topic = f"{name}.public.hot"
    keys = 3000
    pg_db.execute("CREATE TABLE hot (id int PRIMARY KEY, v int, note text)")
    pg_db.execute("INSERT INTO hot SELECT g, 0, 'n' FROM generate_series(0, %s) g", (keys - 1,))
    config = pg_config(pg_db, name)
    running = Running(config, bootstrap)

    def verify():
        return Verifier(config, pg_verify.partitions(config), bootstrap, VerifyOptions(chunk_size=500)).run()

    try:
        records_at_least(running, bootstrap, topic, keys, timeout=120)
        _, value = latest_event(bootstrap, topic, {"id": 0})  # the snapshot's event: a position long covered
        with Workload(postgres_writer(pg_db.dsn), keys, per_second=200) as load:
            reports = verify_repeatedly(verify, seconds=20)
            produce(bootstrap, topic, {"id": STRAY_KEY}, with_after(value, {**after_of(value), "id": STRAY_KEY}))
            corrupted = verify()
    finally:
        running.stop()
    assert_no_false_alarm(reports, load, min_rows=keys // 3)
    assert found(corrupted) == {f'{{"id":{STRAY_KEY}}}': "extra"}, corrupted.to_json()


def record_end(insert_lsn: int, page: int, segment: int) -> int:
    """Where the last record written ends, from the insert position read after it. When that record ended at a page
    boundary, PostgreSQL reports the insert position past the next page's header (24 bytes, 40 at a segment's
    start), where the next record will start: the commit ended a header before it."""
    header = 40 if insert_lsn % segment == 40 else 24 if insert_lsn % page == 24 else 0
    return insert_lsn - header


def test_the_views_position_is_past_asynchronous_commits_it_sees(pg_db):
    """A transaction committed with synchronous_commit = off is visible before its commit record is written: the
    write position read with the snapshot (what the view used) can be before it, and a connector at that position
    has not captured it. The view's position is past every commit it sees."""
    import psycopg

    from connectors.postgres.pgoutput import lsn_from_text
    from connectors.postgres.verify import written_past

    pg_db.execute("CREATE TABLE a (id int PRIMARY KEY)")
    behind = 0
    with psycopg.connect(pg_db.dsn, autocommit=True) as writer, psycopg.connect(pg_db.dsn, autocommit=True) as view:
        writer.execute("SET synchronous_commit = off")
        page, segment = (int(writer.execute("SELECT setting FROM pg_settings WHERE name = %s", (name,)).fetchone()[0])
                         for name in ("wal_block_size", "wal_segment_size"))
        for n in range(60):
            writer.execute("INSERT INTO a VALUES (%s)", (n,))
            (inserted_after,) = writer.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            committed = record_end(lsn_from_text(inserted_after), page, segment)
            (written, inserted) = view.execute(
                "SELECT pg_current_wal_lsn()::text, pg_current_wal_insert_lsn()::text").fetchone()
            behind += lsn_from_text(written) < committed
            assert lsn_from_text(written_past(view, inserted)) >= committed
    assert behind > 0, "the write position was never behind a visible commit in 60 writes: nothing was exercised"
