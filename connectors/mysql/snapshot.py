"""A read view of every InnoDB table and the binlog position it matches, for the initial snapshot.

MariaDB reports the binlog position of a `START TRANSACTION WITH CONSISTENT SNAPSHOT` in the session status
variables `binlog_snapshot_file` / `binlog_snapshot_position`, so no global lock is needed; `BINLOG_GTID_POS()`
turns that position into the GTID position a replica resumes from. MySQL has no such variables: there the
position is read under `FLUSH TABLES WITH READ LOCK` (RELOAD privilege), held only while the view opens
(Debezium's `snapshot.locking.mode=minimal`). The lock waits for statements and table locks that hold tables: it is
tried a second at a time, so that a stop request ends the wait, and given up after `snapshot.lock.timeout.ms`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pymysql

from connectors import ConnectorError
from connectors.core.pipeline import StopRequested
from connectors.mysql.status import show_binlog_status

LOCKING_MODES = ("minimal", "none")
LOCK_WAIT_TIMEOUT = 1205  # ER_LOCK_WAIT_TIMEOUT
LOCK_ATTEMPT_S = 1  # lock_wait_timeout of one attempt at the global read lock (whole seconds)


@dataclass(frozen=True)
class SnapshotPosition:
    file: str
    position: int
    gtids: str  # MariaDB gtid position / MySQL executed GTID set at the snapshot; "" when the server has none
    method: str  # "binlog_snapshot" (MariaDB, lock-free) or "global_read_lock"


def start_consistent_snapshot(connection, locking_mode: str = "minimal", lock_timeout_s: float = 10.0,
                              stop: threading.Event | None = None) -> SnapshotPosition:
    """Open a REPEATABLE READ transaction with a consistent snapshot on `connection` and return its position.

    The caller reads the tables on the same connection and ends the transaction (COMMIT or ROLLBACK). Where a global
    read lock is needed, it is waited for at most `lock_timeout_s` (ConnectorError), or until `stop` is set
    (StopRequested).
    """
    if locking_mode not in LOCKING_MODES:
        raise ConnectorError(f"snapshot.locking.mode={locking_mode!r} is not supported; use one of {LOCKING_MODES}")
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cursor.execute("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'")
        if {row[0].lower() for row in cursor.fetchall()} >= {"binlog_snapshot_file", "binlog_snapshot_position"}:
            return _mariadb(cursor)
        if locking_mode == "none":
            raise ConnectorError(
                "this server has no binlog_snapshot_file/position status variables (MySQL), so a snapshot position "
                "needs a brief global read lock; set snapshot.locking.mode=minimal and grant RELOAD"
            )
        return position_under_global_read_lock(cursor, lock_timeout_s, stop)


def _mariadb(cursor) -> SnapshotPosition:
    cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    cursor.execute("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'")
    status = {name.lower(): value for name, value in cursor.fetchall()}
    file, position = status["binlog_snapshot_file"], int(status["binlog_snapshot_position"])
    if not file:
        raise ConnectorError(
            "the server reports no binlog_snapshot_file: its binary log is off; start it with log_bin"
        )
    cursor.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, position))
    gtids = cursor.fetchone()[0] or ""
    return SnapshotPosition(file=file, position=position, gtids=gtids, method="binlog_snapshot")


def position_under_global_read_lock(cursor, timeout_s: float, stop: threading.Event | None = None,
                                    ) -> SnapshotPosition:
    """The consistent snapshot opened, and its binlog position read, under `FLUSH TABLES WITH READ LOCK` (MySQL)."""
    take_global_read_lock(cursor, timeout_s, stop)
    try:
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        status = show_binlog_status(cursor)
    finally:
        cursor.execute("UNLOCK TABLES")
    return SnapshotPosition(file=status.file, position=status.position, gtids=status.gtids, method="global_read_lock")


def take_global_read_lock(cursor, timeout_s: float, stop: threading.Event | None = None) -> None:
    """`FLUSH TABLES WITH READ LOCK`, attempted LOCK_ATTEMPT_S at a time (the session's lock_wait_timeout) until it
    is held, `stop` is set (StopRequested) or `timeout_s` passed (ConnectorError); the session's lock_wait_timeout
    is restored."""
    cursor.execute("SELECT @@SESSION.lock_wait_timeout")
    saved = int(cursor.fetchone()[0])
    cursor.execute(f"SET SESSION lock_wait_timeout = {LOCK_ATTEMPT_S}")
    started = time.monotonic()
    try:
        while True:
            try:
                cursor.execute("FLUSH TABLES WITH READ LOCK")
                return
            except pymysql.err.OperationalError as error:
                if not error.args or error.args[0] != LOCK_WAIT_TIMEOUT:
                    raise
            if stop is not None and stop.is_set():
                raise StopRequested("for the global read lock (FLUSH TABLES WITH READ LOCK)")
            waited = time.monotonic() - started
            if waited >= timeout_s:
                raise ConnectorError(
                    f"could not take the global read lock (FLUSH TABLES WITH READ LOCK) in {waited:.0f} s "
                    "(snapshot.lock.timeout.ms): a long-running statement, an open LOCK TABLES or a DDL holds tables; "
                    "end it (SHOW PROCESSLIST) or raise snapshot.lock.timeout.ms"
                )
    finally:
        cursor.execute(f"SET SESSION lock_wait_timeout = {saved}")
