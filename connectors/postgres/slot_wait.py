"""Creating a logical replication slot waits for every transaction that holds a transaction id when it begins (the
slot's snapshot is consistent only once they ended), however long they stay open: a session left "idle in
transaction" stops a snapshot from starting without a word. While the creation waits, the transactions it waits
for are logged, every REPORT_EVERY_S seconds, so an operator can see which session to end."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from connectors.core.pipeline import StopRequested
from connectors.postgres.replication import ReplicationError, ReplicationStream, SlotCreated

log = logging.getLogger(__name__)

REPORT_EVERY_S = 10.0
_STOP_POLL_S = 0.2  # how soon a stop cancels the wait

# what pg_stat_activity shows to any user (the query's text only to those allowed to see it)
_OPEN_TRANSACTIONS = """
    SELECT pid, coalesce(usename, '?'), coalesce(application_name, ''), coalesce(state, '?'),
           date_trunc('second', now() - xact_start)::text, left(coalesce(query, ''), 100)
    FROM pg_stat_activity
    WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid() AND xact_start < now() - %s * interval '1 second'
    ORDER BY xact_start LIMIT 5"""


def create_slot_reporting(stream: ReplicationStream, connect: Callable, stop: threading.Event | None = None,
                          **options) -> SlotCreated:
    """`stream.create_slot(**options)`, logging the transactions it waits for while it waits (`connect()` opens an
    autocommit connection of the same database to look); cancelled by `stop` (StopRequested)."""
    done = threading.Event()
    started = time.monotonic()

    def watch() -> None:
        next_report = REPORT_EVERY_S
        while not done.wait(_STOP_POLL_S):
            if stop is not None and stop.is_set():
                stream.cancel()
                return
            waited = time.monotonic() - started
            if waited >= next_report:
                next_report += REPORT_EVERY_S
                _report(stream.slot_name, connect, waited, done)

    watcher = threading.Thread(target=watch, name=f"slot-wait-{stream.slot_name}", daemon=True)
    watcher.start()
    try:
        return stream.create_slot(**options)
    except ReplicationError:
        if stop is not None and stop.is_set():
            raise StopRequested(f"for replication slot {stream.slot_name} to be created") from None
        raise
    finally:
        done.set()
        watcher.join()


def _report(slot_name: str, connect: Callable, waited: float, done: threading.Event) -> None:
    try:
        with connect() as conn:
            blockers = conn.execute(_OPEN_TRANSACTIONS, (waited,)).fetchall()
    except Exception as error:  # noqa: BLE001 - a report only: the creation goes on
        log.debug("could not list the open transactions: %s", error)
        return
    if blockers and not done.is_set():
        log.warning(
            "creating replication slot %s has waited %.0f s: PostgreSQL builds a new slot's snapshot only once the "
            "transactions open when the creation began have ended. Still open: %s. Commit or roll them back, or end "
            "their sessions (pg_terminate_backend)", slot_name, waited,
            "; ".join(f"pid {pid} ({user}, {app or 'no application name'}, {state}, open {age}: {query!r})"
                      for pid, user, app, state, age, query in blockers))
