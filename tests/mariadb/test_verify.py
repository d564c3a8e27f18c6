"""Verify against a real MariaDB, a running connector and Kafka (docs/verify.md): a topic corrupted on purpose is
named key by key; a run under a concurrent write workload finds nothing."""

from __future__ import annotations

import pytest

from bench.write_load import Workload, mariadb_writer
from connectors.core.verify import Verifier, VerifyOptions
from connectors.mysql import verify as mysql_verify
from tests.mariadb.test_source import BOOTSTRAP, InProcess, properties
from tests.type_check import records_at_least
from tests.verify_corruption import after_of, found, latest_event, produce, with_after
from tests.verify_workload import STRAY_KEY, assert_no_false_alarm, verify_repeatedly

pytestmark = [pytest.mark.integration]


def run_verify(config, chunk_size=7):
    return Verifier(config, mysql_verify.partitions(config), BOOTSTRAP, VerifyOptions(chunk_size=chunk_size)).run()


def test_verify_names_exactly_the_keys_a_corrupted_topic_gets_wrong(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), qty INT)",
                    "INSERT INTO items SELECT seq, CONCAT('item ', seq), seq * 10 FROM seq_1_to_30",
                    database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"column.mask.with.4.chars": f"{mariadb_db}.items.name"})
    running = InProcess(props)
    topic = f"{props['topic.prefix']}.{mariadb_db}.items"
    try:
        records_at_least(running, BOOTSTRAP, topic, 30)
        mariadb.execute("DELETE FROM items WHERE id = 5", "UPDATE items SET qty = 1 WHERE id = 9", database=mariadb_db)
        records_at_least(running, BOOTSTRAP, topic, 33)

        clean = run_verify(running.config)
        assert clean.mismatched == 0, clean.to_json()
        assert clean.rows == 29 and clean.chunks == 5

        _, value7 = latest_event(BOOTSTRAP, topic, {"id": 7})
        _, value9 = latest_event(BOOTSTRAP, topic, {"id": 9})
        assert after_of(value7)["name"] == "****"  # masked in the topic: compared masked
        produce(BOOTSTRAP, topic, {"id": 1000}, with_after(value7, {**after_of(value7), "id": 1000}))  # stray
        produce(BOOTSTRAP, topic, {"id": 5}, with_after(value9, {**after_of(value9), "id": 5}))  # a deleted key
        produce(BOOTSTRAP, topic, {"id": 7}, with_after(value7, {**after_of(value7), "qty": 71}))  # changed value

        report = run_verify(running.config)
    finally:
        running.close()
    assert found(report) == {'{"id":1000}': "extra", '{"id":5}': "extra", '{"id":7}': "different"}
    assert (report.extra, report.different, report.missing) == (2, 1, 0)
    assert next(m for m in report.mismatches if m.kind == "different").fields == {"qty": [70, 71]}
    assert report.tables[0].chunks_differing == 1
    assert report.positions[0]["source"]["file"]


def test_a_concurrent_write_workload_raises_no_false_alarm(mariadb, mariadb_db):
    """Inserts, updates, deletes and primary-key updates at 200 writes/s for 20 s while Verify runs again and again:
    no run reports a difference; a stray record produced into the topic meanwhile is then named, alone."""
    keys = 3000
    mariadb.execute("CREATE TABLE hot (id INT PRIMARY KEY, v INT, note VARCHAR(40))",
                    f"INSERT INTO hot SELECT seq, 0, 'n' FROM seq_0_to_{keys - 1}",  # noqa: S608 - a number
                    database=mariadb_db)
    props = properties(mariadb, mariadb_db)
    running = InProcess(props)
    topic = f"{props['topic.prefix']}.{mariadb_db}.hot"
    try:
        records_at_least(running, BOOTSTRAP, topic, keys, timeout=120)
        writer = mariadb_writer(mariadb.admin.with_database(mariadb_db))
        _, value = latest_event(BOOTSTRAP, topic, {"id": 0})  # the snapshot's event: a position long covered
        with Workload(writer, keys, per_second=200) as load:
            reports = verify_repeatedly(lambda: run_verify(running.config, chunk_size=500), seconds=20)
            produce(BOOTSTRAP, topic, {"id": STRAY_KEY}, with_after(value, {**after_of(value), "id": STRAY_KEY}))
            corrupted = run_verify(running.config, chunk_size=500)
    finally:
        running.close()
    assert_no_false_alarm(reports, load, min_rows=keys // 3)
    assert found(corrupted) == {f'{{"id":{STRAY_KEY}}}': "extra"}, corrupted.to_json()
