"""Creating a logical replication slot waits for every transaction that holds a transaction id when it begins (the
slot's snapshot is consistent only once they ended), however long they stay open: a session left "idle in
transaction" stops a snapshot from starting without a word. While the creation waits, the transactions it waits
for are logged, every REPORT_EVERY_S seconds, so an operator can see which session to end."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from connectors.postgres.replication import ReplicationStream, SlotCreated

log = logging.getLogger(__name__)

REPORT_EVERY_S = 10.0

# what pg_stat_activity shows to any user (the query's text only to those allowed to see it)
_OPEN_TRANSACTIONS = """
    SELECT pid, coalesce(usename, '?'), coalesce(application_name, ''), coalesce(state, '?'),
           date_trunc('second', now() - xact_start)::text, left(coalesce(query, ''), 100)
    FROM pg_stat_activity
    WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid() AND xact_start < now() - %s * interval '1 second'
    ORDER BY xact_start LIMIT 5"""


def create_slot_reporting(stream: ReplicationStream, connect: Callable, **options) -> SlotCreated:
    """`stream.create_slot(**options)`, logging the transactions it waits for while it waits (`connect()` opens an
    autocommit connection of the same database to look)."""
    done = threading.Event()

    def report() -> None:
        waited = 0.0
        while not done.wait(REPORT_EVERY_S):
            waited += REPORT_EVERY_S
            try:
                with connect() as conn:
                    blockers = conn.execute(_OPEN_TRANSACTIONS, (waited,)).fetchall()
            except Exception as error:  # noqa: BLE001 - a report only: the creation goes on
                log.debug("could not list the open transactions: %s", error)
                continue
            if blockers and not done.is_set():
                log.warning(
                    "creating replication slot %s has waited %.0f s: PostgreSQL builds a new slot's snapshot only "
                    "once the transactions open when the creation began have ended. Still open: %s. Commit or roll "
                    "them back, or end their sessions (pg_terminate_backend)", stream.slot_name, waited,
                    "; ".join(f"pid {pid} ({user}, {app or 'no application name'}, {state}, open {age}: {query!r})"
                              for pid, user, app, state, age, query in blockers))

    watcher = threading.Thread(target=report, name=f"slot-wait-{stream.slot_name}", daemon=True)
    watcher.start()
    try:
        return stream.create_slot(**options)
    finally:
        done.set()
        watcher.join()
