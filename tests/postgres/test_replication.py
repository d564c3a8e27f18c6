"""ReplicationStream against the real server: exported snapshot + stream with no gap and no duplicate, the slot
moving only when acknowledged, and clear errors."""

from __future__ import annotations

import time

import psycopg2
import pytest

from connectors.postgres import pgoutput as p
from connectors.postgres.replication import ReplicationError, ReplicationStream


def read_until(stream: ReplicationStream, done, timeout: float = 30.0) -> list[p.Message]:
    """Every message read until `done(messages so far)` holds; fails after `timeout` seconds."""
    seen: list[p.Message] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen.extend(wal.message for wal in stream.read(timeout=0.5))
        if done(seen):
            return seen
    raise AssertionError(f"not done within {timeout}s; got {seen}")


def n_commits(n: int):
    return lambda seen: len(commits(seen)) >= n


def wait_slot_inactive(db, slot: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)) == [(False,)]:
            return
        time.sleep(0.05)
    raise AssertionError(f"slot {slot} still active after {timeout}s")


def commits(messages) -> list[p.Commit]:
    return [m for m in messages if isinstance(m, p.Commit)]


def inserted_ids(messages) -> list[str]:
    return [m.new[0] for m in messages if isinstance(m, p.Insert)]


@pytest.fixture
def items(pg_db):
    pg_db.execute("CREATE TABLE items (id int PRIMARY KEY, label text)")
    pg_db.execute("INSERT INTO items SELECT g, 'row ' || g FROM generate_series(1, 3) g")
    pg_db.execute("CREATE PUBLICATION pub FOR TABLE items")
    return pg_db


def test_exported_snapshot_and_stream_meet_without_gap_or_duplicate(items):
    stream = ReplicationStream(items.dsn, items.name + "_a", ["pub"])
    try:
        created = stream.create_slot(export_snapshot=True)
        assert created.slot_name == items.name + "_a" and created.output_plugin == "pgoutput" and created.snapshot_name
        items.execute("INSERT INTO items VALUES (4, 'after the slot')")  # after the snapshot point
        reader = items.connect(autocommit=False)
        with reader.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("SET TRANSACTION SNAPSHOT %s", (created.snapshot_name,))
            cur.execute("SELECT id FROM items ORDER BY id")
            snapshot_ids = [row[0] for row in cur.fetchall()]
        reader.rollback()
        reader.close()
        assert snapshot_ids == [1, 2, 3]

        stream.start(created.consistent_point)
        messages = read_until(stream, n_commits(1))
        assert inserted_ids(messages) == ["4"]
        relation = next(m for m in messages if isinstance(m, p.Relation))
        assert (relation.namespace, relation.name) == ("public", "items")
    finally:
        stream.close()


def test_slot_moves_only_when_acknowledged(items):
    stream = ReplicationStream(items.dsn, items.name + "_b", ["pub"])
    try:
        created = stream.create_slot(export_snapshot=False)
        assert created.snapshot_name is None
        stream.start(created.consistent_point)
        items.execute("INSERT INTO items VALUES (10, 'a')")
        first = commits(read_until(stream, n_commits(1)))[0]
    finally:
        stream.close()  # never acknowledged
    wait_slot_inactive(items, items.name + "_b")

    again = ReplicationStream(items.dsn, items.name + "_b", ["pub"])
    try:
        acknowledge_and_check(items, again, first)
    finally:
        again.close()
    wait_slot_inactive(items, items.name + "_b")

    last = ReplicationStream(items.dsn, items.name + "_b", ["pub"])
    try:
        last.start()
        items.execute("INSERT INTO items VALUES (12, 'c')")
        after_ack = read_until(last, n_commits(1))
        assert inserted_ids(after_ack) == ["12"]  # nothing acknowledged is sent again
        assert last.server_wal_end >= commits(after_ack)[0].end_lsn
    finally:
        last.close()


def acknowledge_and_check(items, again: ReplicationStream, first: p.Commit) -> None:
    again.start()
    items.execute("INSERT INTO items VALUES (11, 'b')")
    replayed = read_until(again, n_commits(2))
    assert inserted_ids(replayed) == ["10", "11"]  # the unacknowledged transaction came back
    assert commits(replayed)[0] == first
    second = commits(replayed)[1]
    again.acknowledge(second.end_lsn)
    assert again.acknowledged == second.end_lsn
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        again.read(timeout=0.2)  # keeps the connection serviced while the server records the feedback
        flushed = items.execute(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s", (again.slot_name,)
        )
        if p.lsn_from_text(flushed[0][0]) == second.end_lsn:
            break
    else:
        raise AssertionError(f"confirmed_flush_lsn stayed {flushed}, expected {p.lsn_to_text(second.end_lsn)}")
    assert first.end_lsn < second.end_lsn
    with pytest.raises(ValueError, match="cannot move back"):
        again.acknowledge(first.end_lsn)


def test_update_delete_truncate_and_replica_identity_full(items):
    items.execute("ALTER TABLE items REPLICA IDENTITY FULL")
    stream = ReplicationStream(items.dsn, items.name + "_c", ["pub"])
    try:
        stream.start(stream.create_slot(export_snapshot=False).consistent_point)
        conn = items.connect(autocommit=False)
        with conn.cursor() as cur:
            cur.execute("UPDATE items SET label = 'changed' WHERE id = 1")
            cur.execute("DELETE FROM items WHERE id = 2")
            cur.execute("TRUNCATE items")
        conn.commit()
        conn.close()
        messages = read_until(stream, n_commits(1))
        kinds = [type(m).__name__ for m in messages]
        # the server sends the Relation again before a TRUNCATE (the truncate invalidated its cached description)
        assert kinds == ["Begin", "Relation", "Update", "Delete", "Relation", "Truncate", "Commit"]
        update, delete, truncate = messages[2], messages[3], messages[5]
        assert (update.old_kind, update.old, update.new) == ("O", ("1", "row 1"), ("1", "changed"))
        assert (delete.old_kind, delete.old) == ("O", ("2", "row 2"))
        assert truncate.relation_ids == (messages[1].relation_id,)
        begin = messages[0]
        assert begin.final_lsn == messages[-1].commit_lsn and begin.commit_ts_us == messages[-1].commit_ts_us
    finally:
        stream.close()


def test_errors_name_the_problem(items, postgres):
    with pytest.raises(ReplicationError, match="cannot open a replication connection.*password authentication"):
        ReplicationStream(psycopg2.extensions.make_dsn(items.dsn, password="wrong"), "s", ["pub"])
    stream = ReplicationStream(items.dsn, "no_such_slot", ["pub"])
    try:
        with pytest.raises(ReplicationError, match="no_such_slot.*does not exist"):
            stream.start()
    finally:
        stream.close()
    stream = ReplicationStream(items.dsn, items.name + "_d", ["missing_pub"])
    try:
        stream.start(stream.create_slot(export_snapshot=False).consistent_point)
        items.execute("INSERT INTO items VALUES (20, 'x')")
        with pytest.raises(ReplicationError, match='publication "missing_pub" does not exist'):
            read_until(stream, lambda seen: False, timeout=30)
    finally:
        stream.close()
