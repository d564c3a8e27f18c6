"""Which PostgreSQL errors a reconnect waits out.

By SQLSTATE where the error has one (psycopg's `sqlstate`, psycopg2's `pgcode`): the server going away or not
taking connections (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now: starting up or shutting
down), class 08 (connection exceptions) and class 53 (insufficient resources, e.g. too many connections) are
retriable; any other SQLSTATE (a permission, a missing table, a full disk…) is not.

A failed connection attempt has no SQLSTATE (libpq keeps only the message of the server's FATAL answer, so
"the database system is shutting down" arrives as text); neither has a connection the server closed. Those are
retriable, except the answers that no wait changes: a refused login, a missing database or role, no pg_hba.conf
entry (PostgreSQL's English messages; a server answering in another language is retried until
connect.max.attempts gives up)."""

from __future__ import annotations

RETRIABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
RETRIABLE_CLASSES = ("08", "53")
LASTING_CONNECT_FAILURES = ("authentication failed", "does not exist", "no pg_hba.conf entry", "permission denied",
                            "must have replication", "must be superuser or replication")


def sqlstate(error: BaseException) -> str | None:
    return getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)


def retriable(error: BaseException) -> bool:
    """Whether `error` (psycopg or psycopg2) says the server is away for now, rather than that something needs
    fixing."""
    state = sqlstate(error)
    if state is not None:
        return state in RETRIABLE_SQLSTATES or state.startswith(RETRIABLE_CLASSES)
    if type(error).__name__ not in ("OperationalError", "InterfaceError"):
        return False
    text = str(error)
    return not any(failure in text for failure in LASTING_CONNECT_FAILURES)
