"""Can this PostgreSQL server and user feed a connector? Checked before a configuration is saved (API, dashboard
form, Kafka Connect's create/validate), in bounded time, each finding naming what to fix: the login, the database,
`wal_level`, the REPLICATION attribute, and the publication: present under `publication.autocreate.mode=disabled`,
creatable under `all_tables` (a superuser's right)."""

from __future__ import annotations

import psycopg

from connectors.postgres.config import PostgresConfig
from connectors.postgres.publication import publication_tables

LOGIN_PROPERTIES = "database.hostname, database.port, database.user and database.password"


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
                    *_publication_problems(cursor, config)]
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


def _last_line(error: Exception) -> str:
    """The server's or libpq's own words, without psycopg's "connection to server at … failed:" preamble."""
    text = str(error).strip()
    if not text:
        return type(error).__name__
    last = text.splitlines()[-1].strip()
    return last.rsplit(" failed: ", 1)[-1].removeprefix("FATAL:").strip()
