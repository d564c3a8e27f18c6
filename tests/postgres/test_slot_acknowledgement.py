"""The slot moves only to what the connector acknowledged, on the real server: the server's keepalives (sent while
another database writes, the walsender decoding WAL it has nothing to send of) never move it, neither on a new
connection that has received nothing yet nor after everything received was acknowledged. (psycopg2's replication
cursor moved it to the keepalive's WAL end in both cases, past what Kafka held: after a failed batch the slot was
then "past the stored offset" and the connector could not restart without a new snapshot.)"""

from __future__ import annotations

import time

import psycopg2.extensions
import pytest

from connectors.postgres import pgoutput as p
from connectors.postgres.pgoutput import lsn_from_text
from connectors.postgres.replication import ReplicationStream


@pytest.fixture
def other_database(postgres):
    """A second database of the same server, written to while the test's slot streams."""
    name = f"{int(time.time() * 1000) % 10**9}_other"
    owner = psycopg2.extensions.parse_dsn(postgres.cdc_dsn).get("user")
    postgres.execute(f'CREATE DATABASE "t_{name}"' + (f' OWNER "{owner}"' if owner else ""))
    conn = psycopg2.connect(psycopg2.extensions.make_dsn(postgres.cdc_dsn, dbname=f"t_{name}"))
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE w (id serial PRIMARY KEY, pad text)")
    yield conn
    conn.close()
    postgres.execute(f'DROP DATABASE "t_{name}"')


def confirmed_flush(pg_db, slot: str) -> int:
    (lsn,), = pg_db.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
                            (slot,))
    return lsn_from_text(lsn)


def read_while_other_database_writes(stream: ReplicationStream, other, seconds: float) -> list:
    """Reads for `seconds` while the other database writes; the keepalives' WAL end moves past the slot."""
    seen = []
    start_end = None
    deadline = time.monotonic() + seconds
    with other.cursor() as cur:
        while time.monotonic() < deadline:
            cur.execute("INSERT INTO w (pad) SELECT repeat('x', 100) FROM generate_series(1, 100)")
            seen.extend(wal.message for wal in stream.read(timeout=0.2))
            start_end = start_end or stream.server_wal_end
    assert stream.server_wal_end > (start_end or 0), "no keepalive reported the other database's WAL"
    return seen


def test_keepalives_never_move_the_slot_past_the_acknowledged_position(pg_db, other_database):
    pg_db.execute("CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION pub FOR TABLE t")
    slot = pg_db.name + "_ack"
    stream = ReplicationStream(pg_db.dsn, slot, ["pub"], status_interval=1)
    try:
        created = stream.create_slot(export_snapshot=False).consistent_point
        stream.start(0)
        # a new connection, nothing received, nothing acknowledged
        assert read_while_other_database_writes(stream, other_database, 4) == []
        assert confirmed_flush(pg_db, slot) == created
        # a transaction received and acknowledged: the slot is there, and stays there
        pg_db.execute("INSERT INTO t VALUES (1)")
        messages = []
        deadline = time.monotonic() + 30
        while not any(isinstance(m, p.Commit) for m in messages):
            assert time.monotonic() < deadline
            messages.extend(wal.message for wal in stream.read(timeout=0.5))
        commit = next(m for m in messages if isinstance(m, p.Commit))
        stream.acknowledge(commit.end_lsn)
        read_while_other_database_writes(stream, other_database, 4)
        assert confirmed_flush(pg_db, slot) == commit.end_lsn
    finally:
        stream.close()


def test_after_a_too_large_stop_the_connector_starts_again_from_its_offset(pg_db, other_database, stack,
                                                                           unique_name):
    """message.too.large.policy=fail stops the pipeline at a row larger than the broker takes, while another
    database writes; the slot is then still where the stored offset says, and the connector starts again from it
    (with policy skip) without a new snapshot: the rows after the big one arrive."""
    import threading

    from connectors.kafka import OffsetStore
    from connectors.postgres.offsets import acknowledgeable, decode_offset, offset_key
    from tests.postgres.test_source import Running, payloads, pg_config
    from tests.type_check import records_at_least

    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    topic = f"{name}.public.t"
    pg_db.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    pg_db.execute("INSERT INTO t VALUES (1, 'small')")
    writing = threading.Event()

    def write_elsewhere():
        with other_database.cursor() as cur:
            while not writing.wait(0.05):
                cur.execute("INSERT INTO w (pad) SELECT repeat('x', 100) FROM generate_series(1, 50)")

    writer = threading.Thread(target=write_elsewhere, daemon=True)
    writer.start()
    try:
        config = pg_config(pg_db, name, **{"status.update.interval.ms": 1000})
        running = Running(config, bootstrap)
        try:
            records_at_least(running, bootstrap, topic, 1)
            time.sleep(3)  # idle positions committed and acknowledged while the other database writes
            pg_db.execute("INSERT INTO t VALUES (2, repeat('x', 2000000))")  # over the broker's 1 MB
            deadline = time.monotonic() + 60
            while not running.runner.errors:
                assert time.monotonic() < deadline, "the pipeline did not stop at the big row"
                time.sleep(0.2)
            assert "over the limit" in str(next(iter(running.runner.errors.values())))
            time.sleep(5)  # keepalives keep coming while the connection closes and afterwards
        finally:
            running.stop()
        stored, _ = OffsetStore(bootstrap, config.offset_storage_topic).read_value(
            offset_key(config.name, config.topic_prefix))
        assert confirmed_flush(pg_db, pg_db.name) <= acknowledgeable(decode_offset(stored).position)
        pg_db.execute("INSERT INTO t VALUES (3, 'after')")
        again = Running(pg_config(pg_db, name, **{"message.too.large.policy": "skip"}), bootstrap)
        try:
            records = records_at_least(again, bootstrap, topic, 2)
        finally:
            again.stop()
    finally:
        writing.set()
        writer.join(5)
    assert [v["after"]["id"] for v in payloads(records)] == [1, 3]
    assert not again.runner.errors
