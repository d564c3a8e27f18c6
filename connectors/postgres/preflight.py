"""Can this PostgreSQL server and user feed a connector? Checked before a configuration is saved (API, dashboard
form, Kafka Connect's create/validate), in bounded time, each finding naming what to fix: the login, the database,
`wal_level`, the REPLICATION attribute, a `slot.name` taken by another database or plugin, the publication
(present under `publication.autocreate.mode=disabled`, creatable under `all_tables`: a superuser's right), and the
tables it would publish without a replica identity (PostgreSQL refuses their UPDATEs and DELETEs once they are
published: saving such a connector would break the application's writes, so it is refused until the table has a
key or is left out), `message.key.columns` naming a column a captured table does not have or capture, and a
`signal.data.collection` that is missing, lacks a column, is not writable by the user or (publication
`disabled`) not published."""

from __future__ import annotations

import psycopg

from connectors.postgres.catalog import key_column_problems
from connectors.postgres.config import PostgresConfig
from connectors.postgres.events import TableFilter
from connectors.postgres.incremental import signal_table_problem
from connectors.postgres.publication import (
    publication_tables,
    slot_mismatch,
    slot_status,
    tables_without_replica_identity,
    user_tables,
)

LOGIN_PROPERTIES = "database.hostname, database.port, database.user and database.password"
NAMED_AT_MOST = 10  # tables named in one finding
NOT_POSTGRES = ("received invalid response", "expected authentication request", "invalid length of startup packet",
                "unexpected message", "received unexpected", "lost synchronization")


def problems(config: PostgresConfig, timeout_ms: int = 5000) -> list[tuple[str, str]]:
    """(property, message) for every reason the connector could not capture; [] when it can."""
    try:
        connection = psycopg.connect(config.dsn(), autocommit=True, connect_timeout=max(1, timeout_ms // 1000))
    except psycopg.OperationalError as error:
        return [login_problem(config, error)]
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SET statement_timeout = {int(timeout_ms)}")
            return [*_server_problems(cursor), *_role_problems(cursor, config),
                    *_publication_problems(cursor, config), *_identity_problems(cursor, config),
                    *_slot_problems(cursor, config), *_key_column_problems(cursor, config),
                    *_signal_problems(cursor, config)]
    except psycopg.Error as error:
        return [("database.user", f"reading the server's settings as {config.user!r} failed: "
                                  f"{_last_line(error)}")]
    finally:
        connection.close()


def login_problem(config: PostgresConfig, error: psycopg.OperationalError) -> tuple[str, str]:
    text = _last_line(error)
    where = f"{config.hostname}:{config.port}"
    if f'database "{config.dbname}" does not exist' in text:
        return "database.dbname", f"PostgreSQL at {where} has no database {config.dbname!r}"
    if "authentication failed" in text or "password" in text:
        return "database.password", f"PostgreSQL at {where} refused the login of {config.user!r}: {text}"
    if "role" in text and "does not exist" in text:
        return "database.user", f"PostgreSQL at {where} has no role {config.user!r}"
    if any(phrase in text for phrase in NOT_POSTGRES):  # libpq quotes what it got: another service's first bytes
        return "database.hostname", (f"Unable to connect to PostgreSQL at {where}: it did not answer as PostgreSQL "
                                     f"(another service on that port?); check {LOGIN_PROPERTIES}")
    return "database.hostname", f"Unable to connect to PostgreSQL at {where}: {text} (check {LOGIN_PROPERTIES})"


def _server_problems(cursor) -> list[tuple[str, str]]:
    cursor.execute("SHOW wal_level")
    level = cursor.fetchone()[0]
    if level == "logical":
        return []
    return [("database.hostname", f"the server runs with wal_level={level}; logical decoding needs "
                                  "wal_level=logical (ALTER SYSTEM SET wal_level = logical, then restart it)")]


def _role_problems(cursor, config: PostgresConfig) -> list[tuple[str, str]]:
    cursor.execute("SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user")
    row = cursor.fetchone()
    if row and row[0]:
        return []
    return [("database.user", f"the role {config.user!r} may not stream changes: it needs the REPLICATION "
                              f"attribute (ALTER ROLE {config.user} WITH REPLICATION)")]


def _publication_problems(cursor, config: PostgresConfig) -> list[tuple[str, str]]:
    mode = config.publication_autocreate_mode
    if mode == "filtered" or publication_tables(cursor, config.publication_name) is not None:
        return []
    if mode == "all_tables":
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        row = cursor.fetchone()
        if row and row[0]:
            return []
        return [("publication.autocreate.mode",
                 f"publication {config.publication_name!r} does not exist, and creating it FOR ALL TABLES "
                 f"(publication.autocreate.mode=all_tables, the default) needs a superuser; create it as one, or "
                 "set publication.autocreate.mode=filtered (the connector's user must own the captured tables)")]
    return [("publication.name", f"publication {config.publication_name!r} does not exist and "
                                 "publication.autocreate.mode is disabled; create it (CREATE PUBLICATION … FOR "
                                 "TABLE …) or set publication.autocreate.mode to filtered or all_tables")]


def _slot_problems(cursor, config: PostgresConfig) -> list[tuple[str, str]]:
    status = slot_status(cursor, config.slot_name)
    mismatch = status and slot_mismatch(status, config.slot_name, config.dbname, config.plugin_name)
    return [("slot.name", mismatch)] if mismatch else []


def _identity_problems(cursor, config: PostgresConfig) -> list[tuple[str, str]]:
    captured = TableFilter(config)
    mode = config.publication_autocreate_mode
    existing = publication_tables(cursor, config.publication_name)
    creates_for_all = mode == "all_tables" and existing is None
    if creates_for_all:
        tables = user_tables(cursor)  # FOR ALL TABLES publishes the tables the connector does not capture too
    elif mode == "filtered":
        tables = [table for table in user_tables(cursor) if captured(*table)]
    elif existing is not None:
        tables = [table for table in existing if captured(*table)]
    else:
        return []  # no publication under `disabled`: reported above
    found = tables_without_replica_identity(cursor, tables)
    if not found:
        return []
    named = "; ".join(f"{schema}.{table} ({why})" for schema, table, why in found[:NAMED_AT_MOST])
    more = f" and {len(found) - NAMED_AT_MOST} more" if len(found) > NAMED_AT_MOST else ""
    fix = ("give each a primary key or run ALTER TABLE … REPLICA IDENTITY FULL, or leave it out with "
           "table.exclude.list")
    if creates_for_all:
        fix += (", and set publication.autocreate.mode=filtered: a publication FOR ALL TABLES also publishes "
                "the tables the connector does not capture")
    prop = "publication.autocreate.mode" if creates_for_all and not any(captured(s, t) for s, t, _ in found) \
        else "table.include.list"
    return [(prop, f"PostgreSQL refuses UPDATE and DELETE on published tables without a replica identity, so "
                   f"publishing {named}{more} would break the application's writes: {fix}")]


def _key_column_problems(cursor, config: PostgresConfig) -> list[tuple[str, str]]:
    if not config.message_key_columns:
        return []
    captured = TableFilter(config)
    tables = [table for table in user_tables(cursor) if captured(*table)]
    found = key_column_problems(cursor, config.column_rules, tables)
    return [("message.key.columns", "; ".join(found))] if found else []


def _signal_problems(cursor, config: PostgresConfig) -> list[tuple[str, str]]:
    if not config.signal_data_collection:
        return []
    disabled = config.publication_autocreate_mode == "disabled"
    if disabled and publication_tables(cursor, config.publication_name) is None:
        return []  # the missing publication is reported on its own
    problem = signal_table_problem(cursor, config, require_published=disabled)
    return [("signal.data.collection", problem)] if problem else []


def _last_line(error: Exception) -> str:
    """The server's or libpq's own words, without psycopg's "connection to server at … failed:" preamble."""
    text = str(error).strip()
    if not text:
        return type(error).__name__
    last = text.splitlines()[-1].strip()
    return last.rsplit(" failed: ", 1)[-1].removeprefix("FATAL:").strip()
