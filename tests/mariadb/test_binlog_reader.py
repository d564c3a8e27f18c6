"""The binlog reader against the real MariaDB: resume by GTID, by file/pos, inside a transaction; the snapshot
position under concurrent writes; the source checks."""

from __future__ import annotations

import gc
import threading
import time
import uuid

import pytest

from connectors import AuthenticationFailed, HistoryLost
from connectors.mysql.binlog import BinlogPosition, RowChange, SchemaStatement, TransactionCommit
from connectors.mysql.checks import check_source, failures
from connectors.mysql.connection import connect
from connectors.mysql.snapshot import start_consistent_snapshot
from tests.mariadb.binlog_reading import binlog_status, read_to_end

pytestmark = pytest.mark.integration


def read_all(mariadb, database, start):
    return read_to_end(mariadb.cdc, 6201, start, database)


def ids(changes):
    return [(c.op, (c.after or c.before)["id"]) for c in changes if isinstance(c, RowChange)]


def own_commits(changes):
    """The commits of transactions that changed the test's database: other tests may write to the server meanwhile,
    and their transactions' commits come through the schema filter (without their rows)."""
    commits, changed = [], False
    for change in changes:
        if isinstance(change, RowChange):
            changed = True
        elif isinstance(change, TransactionCommit):
            if changed:
                commits.append(change)
            changed = False
    return commits


@pytest.fixture
def table(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", database=mariadb_db)
    return mariadb_db


def test_gtid_and_file_pos_resume(mariadb, table):
    start = binlog_status(mariadb)
    mariadb.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')", database=table)
    mariadb.execute("UPDATE t SET v = 'c' WHERE id = 1", database=table)
    mariadb.execute("DELETE FROM t WHERE id = 2", database=table)
    changes = read_all(mariadb, table, BinlogPosition(gtids=start.gtids))
    assert ids(changes) == [("c", 1), ("c", 2), ("u", 1), ("d", 2)]
    commits = own_commits(changes)
    assert len(commits) == 3 and all(c.gtid for c in commits)
    # from the GTID position after the first commit: the update and the delete, nothing else
    after_first = commits[0].position
    assert ids(read_all(mariadb, table, BinlogPosition(gtids=after_first.gtids))) == [("u", 1), ("d", 2)]
    # the same by file/pos alone (the reader learns the GTID position there with BINLOG_GTID_POS)
    by_pos = read_all(mariadb, table, BinlogPosition(file=after_first.file, pos=after_first.pos))
    assert ids(by_pos) == [("u", 1), ("d", 2)]
    assert [c.gtid for c in own_commits(by_pos)] == [c.gtid for c in commits[1:]]
    assert commits[-1].gtid in commits[-1].position.gtids.split(",")  # the position after a commit includes it


def test_resume_inside_a_transaction_skips_what_was_handed_out(mariadb, table):
    start = binlog_status(mariadb)
    connection = connect(mariadb.admin.with_database(table))
    try:
        with connection.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")  # one rows event, 3 rows
            cursor.execute("INSERT INTO t VALUES (4, 'd'), (5, 'e')")  # a second rows event
            cursor.execute("COMMIT")
    finally:
        connection.close()
    changes = read_all(mariadb, table, BinlogPosition(gtids=start.gtids))
    rows = [c for c in changes if isinstance(c, RowChange)]
    assert ids(rows) == [("c", n) for n in range(1, 6)]
    (commit,) = own_commits(changes)
    for done in range(1, 5):
        position = rows[done - 1].position
        # still the transaction's start: the GTID state before it (other tests may have committed since `start`)
        assert position.gtids == rows[0].position.gtids
        assert commit.gtid not in (position.gtids or "").split(",")
        rest = read_all(mariadb, table, position)
        assert ids(rest) == [("c", n) for n in range(done + 1, 6)], position
        assert isinstance(rest[-1], TransactionCommit)


def test_ddl_is_a_schema_statement(mariadb, table):
    start = binlog_status(mariadb)
    mariadb.execute("ALTER TABLE t ADD COLUMN w INT", database=table)
    mariadb.execute("INSERT INTO t VALUES (1, 'a', 7)", database=table)
    changes = read_all(mariadb, table, BinlogPosition(gtids=start.gtids))
    ddl = [c for c in changes if isinstance(c, SchemaStatement)]
    assert len(ddl) == 1 and ddl[0].ddl.startswith("ALTER TABLE t ADD COLUMN w") and ddl[0].database == table
    (row,) = [c for c in changes if isinstance(c, RowChange)]
    assert row.after == {"id": 1, "v": "a", "w": 7}
    assert row.schema.primary_key == ("id",)


def test_purged_binlog_is_history_lost(own_mariadb, own_mariadb_db):
    """Rotates the binlog of a server of the test's own."""
    if binlog_status(own_mariadb).file == "mariadb-bin.000001":
        own_mariadb.execute("FLUSH BINARY LOGS")
    with pytest.raises(HistoryLost, match="purged"):
        read_all(own_mariadb, own_mariadb_db, BinlogPosition(file="mariadb-bin.000000", pos=4))


def test_consistent_snapshot_position_under_concurrent_writes(mariadb, table):
    """Rows visible in the snapshot and rows in the binlog after its position: together all, never both."""
    stop, started = threading.Event(), threading.Event()
    start = binlog_status(mariadb)

    def writer():
        connection = connect(mariadb.admin.with_database(table))
        n = 0
        try:
            with connection.cursor() as cursor:
                while not stop.is_set():
                    n += 1
                    cursor.execute("INSERT INTO t VALUES (%s, 'w')", (n,))
                    if n == 50:
                        started.set()
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    assert started.wait(30)
    snapshot_connection = connect(mariadb.cdc.with_database(table))
    try:
        position = start_consistent_snapshot(snapshot_connection)
        with snapshot_connection.cursor() as cursor:
            cursor.execute("SELECT id FROM t")
            in_snapshot = {row[0] for row in cursor.fetchall()}
            cursor.execute("ROLLBACK")
    finally:
        stop.set()
        thread.join()
        snapshot_connection.close()
    assert position.method == "binlog_snapshot" and position.gtids
    everything = {n for _, n in ids(read_all(mariadb, table, BinlogPosition(gtids=start.gtids)))}
    after = {n for _, n in ids(read_all(mariadb, table, BinlogPosition(gtids=position.gtids)))}
    by_file = {n for _, n in ids(read_all(mariadb, table, BinlogPosition(file=position.file, pos=position.position)))}
    assert in_snapshot and after  # writes happened on both sides of the snapshot
    assert in_snapshot.isdisjoint(after)
    assert in_snapshot | after == everything
    assert by_file == after


def test_checks_pass_for_the_cdc_user(mariadb):
    results = check_source(mariadb.cdc)
    assert failures(results) == [], [r.message() for r in results]


def test_checks_report_missing_privileges_and_settings(mariadb):
    user = f"weak_{uuid.uuid4().hex[:8]}"
    mariadb.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'", f"GRANT SELECT ON *.* TO '{user}'@'%'")
    try:
        failed = {r.name: r for r in failures(check_source(mariadb.admin.as_user(user, "pw")))}
        assert set(failed) == {"privilege REPLICATION SLAVE", "privilege REPLICATION CLIENT"}
        assert "GRANT REPLICATION SLAVE ON *.*" in failed["privilege REPLICATION SLAVE"].fix
        bad = check_source(mariadb.admin.as_user(user, "wrong"))
        assert [r.name for r in bad] == ["connection"] and not bad[0].ok and "wrong" not in bad[0].message()
    finally:
        mariadb.execute(f"DROP USER '{user}'@'%'")
    with pytest.raises(AuthenticationFailed):
        connect(mariadb.admin.as_user(user, "pw"))


def test_checks_report_a_binlog_row_image_that_is_not_full(own_mariadb):
    """Changes a global setting: on a server of the test's own (the shared one's writers keep full row images)."""
    own_mariadb.execute("SET GLOBAL binlog_row_image = 'MINIMAL'")
    try:
        failed = {r.name: r for r in failures(check_source(own_mariadb.cdc))}
    finally:
        own_mariadb.execute("SET GLOBAL binlog_row_image = 'FULL'")
    assert set(failed) == {"binlog_row_image"}
    assert "binlog_row_image=FULL" in failed["binlog_row_image"].fix


def test_changes_carry_when_the_reader_read_them(mariadb, table):
    """The lag of a whole-second binlog is measured from when the reader read a change (source.lag_source_time):
    each row, commit and statement carries that time, read after it was written and before it was handed out."""
    start = binlog_status(mariadb)
    written_ms = time.time_ns() // 1_000_000
    mariadb.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')", database=table)
    mariadb.execute("ALTER TABLE t ADD COLUMN w INT", database=table)
    changes = read_all(mariadb, table, BinlogPosition(gtids=start.gtids))
    read_ms = time.time_ns() // 1_000_000
    kinds = {type(change) for change in changes}
    assert {RowChange, TransactionCommit, SchemaStatement} <= kinds
    assert all(written_ms <= change.arrived_ms <= read_ms for change in changes), \
        [(type(change).__name__, change.arrived_ms) for change in changes]


def test_read_events_are_freed_without_the_cyclic_collector(mariadb, table):
    """The library's event and its packet wrapper refer to each other; the reader unlinks them once an event is
    handled, so its bytes go at once, not at a rare collection of the older generations (the streaming pipeline's
    policy, core.collector): with the collector off, none of the 200 transactions' packets is left."""
    from pymysqlreplication.packet import BinLogPacketWrapper

    start = binlog_status(mariadb)
    connection = connect(mariadb.admin.with_database(table))
    try:
        with connection.cursor() as cursor:
            for i in range(200):
                cursor.execute("INSERT INTO t VALUES (%s, 'x')", (i,))
                connection.commit()
    finally:
        connection.close()
    gc.collect()
    gc.disable()
    try:
        changes = read_all(mariadb, table, BinlogPosition(gtids=start.gtids))
        left = sum(1 for item in gc.get_objects() if type(item) is BinLogPacketWrapper)
    finally:
        gc.enable()
    assert len(ids(changes)) == 200
    assert left <= 2, left
