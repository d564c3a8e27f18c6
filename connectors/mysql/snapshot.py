"""A read view of every InnoDB table and the binlog position it matches, for the initial snapshot.

MariaDB reports the binlog position of a `START TRANSACTION WITH CONSISTENT SNAPSHOT` in the session status
variables `binlog_snapshot_file` / `binlog_snapshot_position`, so no global lock is needed; `BINLOG_GTID_POS()`
turns that position into the GTID position a replica resumes from. MySQL has no such variables: there the
position is read under `FLUSH TABLES WITH READ LOCK` (RELOAD privilege), held only while the view opens
(Debezium's `snapshot.locking.mode=minimal`).
"""

from __future__ import annotations

from dataclasses import dataclass

from connectors.core.errors import ConnectorError
from connectors.mysql.status import show_binlog_status

LOCKING_MODES = ("minimal", "none")


@dataclass(frozen=True)
class SnapshotPosition:
    file: str
    position: int
    gtids: str  # MariaDB gtid position / MySQL executed GTID set at the snapshot; "" when the server has none
    method: str  # "binlog_snapshot" (MariaDB, lock-free) or "global_read_lock"


def start_consistent_snapshot(connection, locking_mode: str = "minimal") -> SnapshotPosition:
    """Open a REPEATABLE READ transaction with a consistent snapshot on `connection` and return its position.

    The caller reads the tables on the same connection and ends the transaction (COMMIT or ROLLBACK).
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
        return _under_global_read_lock(cursor)


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


def _under_global_read_lock(cursor) -> SnapshotPosition:
    cursor.execute("FLUSH TABLES WITH READ LOCK")
    try:
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        status = show_binlog_status(cursor)
    finally:
        cursor.execute("UNLOCK TABLES")
    return SnapshotPosition(file=status.file, position=status.position, gtids=status.gtids, method="global_read_lock")
