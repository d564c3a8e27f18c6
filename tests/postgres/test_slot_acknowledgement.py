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
