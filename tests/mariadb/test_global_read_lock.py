"""MySQL's snapshot position is read under FLUSH TABLES WITH READ LOCK (connectors/mysql/snapshot.py), which waits
for the sessions that hold tables: a pipeline's stop ends the wait (StopRequested), `snapshot.lock.timeout.ms`
bounds it (a ConnectorError saying what holds it up), and a lock released meanwhile is taken. Run against the real
MariaDB, whose global read lock waits for another session's LOCK TABLES … WRITE as MySQL's does."""

from __future__ import annotations

import threading
import time

import pytest

from connectors import ConnectorError
from connectors.core.pipeline import StopRequested
from connectors.mysql.connection import connect
from connectors.mysql.snapshot import take_global_read_lock

pytestmark = [pytest.mark.integration]


@pytest.fixture
def holder(mariadb, mariadb_db):
    """A session holding a write lock on a table of the test's database."""
    mariadb.execute("CREATE TABLE held (id INT PRIMARY KEY)", database=mariadb_db)
    connection = connect(mariadb.admin.with_database(mariadb_db))
    with connection.cursor() as cursor:
        cursor.execute("LOCK TABLES held WRITE")
    yield connection
    connection.close()


def _when_waiting(mariadb, connection_id: int, then) -> threading.Thread:
    """Runs `then()` once the session `connection_id` waits for a lock (its processlist state says so)."""

    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = {row[0]: row[1] for row in mariadb.execute("SELECT id, state FROM information_schema.processlist")}
            if "lock" in (states.get(connection_id) or "").lower():
                then()
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def _session(mariadb):
    connection = connect(mariadb.admin)
    cursor = connection.cursor()
    cursor.execute("SELECT CONNECTION_ID()")
    return connection, cursor, cursor.fetchone()[0]


def _lock_wait_timeout(cursor) -> int:
    cursor.execute("SELECT @@SESSION.lock_wait_timeout")
    return int(cursor.fetchone()[0])


def test_a_stop_ends_the_wait_for_the_global_read_lock(mariadb, holder):
    connection, cursor, session = _session(mariadb)
    stop = threading.Event()
    try:
        before = _lock_wait_timeout(cursor)
        watcher = _when_waiting(mariadb, session, stop.set)
        with pytest.raises(StopRequested, match="global read lock"):
            take_global_read_lock(cursor, timeout_s=3600, stop=stop)
        watcher.join()
        assert _lock_wait_timeout(cursor) == before
    finally:
        connection.close()


def test_the_wait_is_given_up_after_the_lock_timeout(mariadb, holder):
    connection, cursor, _ = _session(mariadb)
    try:
        with pytest.raises(ConnectorError, match="snapshot.lock.timeout.ms"):
            take_global_read_lock(cursor, timeout_s=2)
    finally:
        connection.close()


def test_a_lock_released_during_the_wait_is_taken(mariadb, holder):
    connection, cursor, session = _session(mariadb)
    try:
        released = threading.Event()

        def release() -> None:
            holder.cursor().execute("UNLOCK TABLES")
            released.set()

        watcher = _when_waiting(mariadb, session, release)
        take_global_read_lock(cursor, timeout_s=3600)
        watcher.join()
        assert released.is_set()  # it waited for the lock, which it took once released
        cursor.execute("UNLOCK TABLES")
    finally:
        connection.close()
