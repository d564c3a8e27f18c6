"""Where a MySQL/MariaDB server is and how to log in: parsed from a DSN or Debezium's `database.*` properties."""

from __future__ import annotations

import struct
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

import pymysql

from connectors import AuthenticationFailed, ConnectorError, SourceUnreachable
from connectors.mysql import tls

# pymysql's error codes for "could not reach" and "access denied"
_UNREACHABLE = {2003, 2005, 2006, 2013}
# How long a query the pipeline needs while streaming (a table's defaults, a heartbeat's action) keeps trying through
# a lost connection; past it, SourceUnreachable starts the pipeline again from its committed offset (Pipeline.run)
RECONNECT_SECONDS = 60.0

_T = TypeVar("_T")
_ACCESS_DENIED = {1044, 1045, 1698}


@dataclass(frozen=True)
class ConnectionSettings:
    host: str = "127.0.0.1"
    port: int = 3306
    user: str = ""
    password: str = field(default="", repr=False)
    database: str | None = None
    unix_socket: str | None = None
    connect_timeout: float = 10.0

    @classmethod
    def from_dsn(cls, dsn: str) -> ConnectionSettings:
        """`mysql://user:password@host:port/database?unix_socket=/path` (also `mariadb://`)."""
        parsed = urllib.parse.urlsplit(dsn)
        if parsed.scheme not in ("mysql", "mariadb"):
            raise ConnectorError(
                f"{_redact(dsn)!r} is not a MySQL/MariaDB DSN; write it as mysql://user:password@host:port/database"
            )
        try:
            port = parsed.port or 3306
        except ValueError:
            raise ConnectorError(f"the port in {_redact(dsn)!r} is not a number between 1 and 65535") from None
        query = urllib.parse.parse_qs(parsed.query)
        return cls(
            host=parsed.hostname or "127.0.0.1",
            port=port,
            user=urllib.parse.unquote(parsed.username or ""),
            password=urllib.parse.unquote(parsed.password or ""),
            database=parsed.path.lstrip("/") or None,
            unix_socket=(query.get("unix_socket") or [None])[0],
        )

    def as_user(self, user: str, password: str) -> ConnectionSettings:
        return replace(self, user=user, password=password)

    def with_database(self, database: str | None) -> ConnectionSettings:
        return replace(self, database=database)

    def describe(self) -> str:
        """Where, without the password: for messages and logs."""
        where = self.unix_socket or f"{self.host}:{self.port}"
        return f"{self.user}@{where}"

    @property
    def server(self) -> tuple:
        return self.host, self.port, self.unix_socket

    def pymysql_kwargs(self) -> dict:
        kwargs = {
            "host": self.host, "port": self.port, "user": self.user, "password": self.password,
            "connect_timeout": self.connect_timeout, "charset": "utf8mb4", **tls.options(self.server),
        }
        if self.database:
            kwargs["database"] = self.database
        if self.unix_socket:
            kwargs["unix_socket"] = self.unix_socket
        return kwargs


def connect(settings: ConnectionSettings, **options) -> pymysql.connections.Connection:
    """A connection, or a ConnectorError that says what to fix (never with the password)."""
    try:
        connection = pymysql.connect(**{**settings.pymysql_kwargs(), "autocommit": True, **options})
    except pymysql.err.OperationalError as error:
        # The server answered but refused what it was told to expect (TLS it no longer offers, or plain TCP where it
        # now requires TLS): ask it again with pymysql's default. A server that did not answer is not tried twice.
        if tls.forget(settings.server) and _code(error) not in _UNREACHABLE:
            return connect(settings, **options)
        raise connection_error(settings, error) from None
    except (pymysql.err.InternalError, pymysql.err.ProgrammingError, ValueError, IndexError, struct.error):
        # what pymysql raises when the far end does not speak MySQL's protocol; its words quote the bytes it got
        raise SourceUnreachable(f"{settings.describe()} did not answer as MySQL/MariaDB (another service on that "
                                "port?)") from None
    tls.learn(settings.server, connection)
    return connection


def with_reconnects(settings: ConnectionSettings, action: Callable[[pymysql.connections.Connection], _T],
                    seconds: float = RECONNECT_SECONDS) -> _T:
    """`action(connection)` on a connection of its own. A connection refused or lost meanwhile (a network fault, a
    server restarting) is tried again on a new one, waiting longer each time, for up to `seconds`; then it raises
    SourceUnreachable. `action` must be safe to run again (a read, a heartbeat's write)."""
    deadline = time.monotonic() + seconds
    delay = 0.2
    while True:
        try:
            connection = connect(settings)
            try:
                return action(connection)
            finally:
                if connection.open:
                    connection.close()
        except pymysql.err.OperationalError as error:
            failure = connection_error(settings, error)
        except SourceUnreachable as error:
            failure = error
        if not isinstance(failure, SourceUnreachable) or time.monotonic() + delay > deadline:
            raise failure from None
        time.sleep(delay)
        delay = min(delay * 2, 5.0)


def _code(error: pymysql.err.MySQLError) -> int | None:
    return error.args[0] if error.args else None


def connection_error(settings: ConnectionSettings, error: pymysql.err.MySQLError) -> ConnectorError:
    code = _code(error)
    detail = error.args[1] if len(error.args) > 1 else str(error)
    if code in _ACCESS_DENIED:
        return AuthenticationFailed(
            f"MySQL/MariaDB at {settings.describe()} refused the login ({detail});"
            " check database.user and database.password, and that the user may connect from this host"
        )
    if code in _UNREACHABLE:
        return SourceUnreachable(
            f"cannot reach MySQL/MariaDB at {settings.describe()}: {detail};"
            " check database.hostname and database.port, and that the server is running"
        )
    return ConnectorError(f"MySQL/MariaDB at {settings.describe()} failed: {error}")


def is_mariadb(connection: pymysql.connections.Connection) -> bool:
    return "mariadb" in connection.get_server_info().lower()


def _redact(dsn: str) -> str:
    parsed = urllib.parse.urlsplit(dsn)
    if parsed.password is None:
        return dsn
    netloc = parsed.netloc.replace(f":{parsed.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parsed._replace(netloc=netloc))
