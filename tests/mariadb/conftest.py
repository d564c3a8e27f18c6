"""A real MariaDB for this suite: a server of the suite's own, set up as the local stack's (devstack.private_db,
about 3 s to start), or the server MARIADB_DSN names.

Many of these tests read the binlog from a position and expect only their own statements and GTIDs in it: on the
stack's shared server, a demo's writer or another suite's tests (run at the same time by `CDC_TEST_WORKERS`) would
write there too. Each test gets its own database from `mariadb_db`.

A test that does something to the whole server (purges its binlogs, changes a global setting, restarts it) uses
`own_mariadb` instead: a server of the test session's own (devstack.private_db), which nothing else uses.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from connectors.mysql.connection import ConnectionSettings, connect
from devstack import settings
from devstack.private_db import PrivateMariaDb


@dataclass(frozen=True)
class MariaDB:
    admin: ConnectionSettings  # may create databases and users
    cdc: ConnectionSettings  # the connector's user (replication, SELECT, RELOAD, LOCK TABLES)

    def execute(self, *statements: str, database: str | None = None) -> list[tuple]:
        connection = connect(self.admin.with_database(database))
        try:
            rows: list[tuple] = []
            with connection.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
                    rows = list(cursor.fetchall())
            return rows
        finally:
            connection.close()


def private_server(home) -> Iterator[MariaDB]:
    """A MariaDB server set up as the devstack's in `home`, stopped when the generator ends."""
    server = PrivateMariaDb(home).start()
    admin = ConnectionSettings.from_dsn(server.admin_dsn)
    try:
        yield MariaDB(admin=admin, cdc=admin.as_user(*settings.MARIADB_CDC_USER))
    finally:
        server.stop()


@pytest.fixture(scope="session")
def mariadb(stack, tmp_path_factory):  # the tests also need Kafka
    if os.environ.get("MARIADB_DSN"):
        admin = ConnectionSettings.from_dsn(settings.mariadb_dsn())
        yield MariaDB(admin=admin, cdc=ConnectionSettings.from_dsn(os.environ.get("MARIADB_CDC_DSN")
                                                                   or os.environ["MARIADB_DSN"]))
        return
    yield from private_server(tmp_path_factory.mktemp("suite-mariadb"))


_SERVER_WIDE = ("SELECT @@global.binlog_format, @@global.binlog_row_image, @@global.binlog_row_metadata",
                "SHOW BINARY LOGS")


def _server_wide_state(mariadb: MariaDB) -> tuple:
    settings_row, binlogs = (mariadb.execute(query) for query in _SERVER_WIDE)
    return settings_row[0], binlogs[0][0]  # the global settings and the oldest binlog


@pytest.fixture(autouse=True)
def shared_server_untouched(request):
    """A test on the `mariadb` server (the suite's own, or the one MARIADB_DSN names) leaves its binlogs and global
    settings as they were: whatever affects the whole server uses `own_mariadb`."""
    if "mariadb" not in request.fixturenames:
        yield
        return
    mariadb = request.getfixturevalue("mariadb")
    before = _server_wide_state(mariadb)
    yield
    after = _server_wide_state(mariadb)
    assert after == before, (f"the test changed the shared MariaDB server ({before} -> {after}): use own_mariadb for "
                             "what affects the whole server")


@pytest.fixture
def mariadb_db(mariadb):
    """A fresh database for one test, dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    mariadb.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    yield name
    mariadb.execute(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture(scope="session")
def own_mariadb(stack, tmp_path_factory):
    """A MariaDB server of this test session's own, set up as the devstack's, stopped at the end."""
    yield from private_server(tmp_path_factory.mktemp("own-mariadb"))


@pytest.fixture
def own_mariadb_db(own_mariadb):
    """A fresh database on `own_mariadb`, dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    own_mariadb.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    yield name
    own_mariadb.execute(f"DROP DATABASE IF EXISTS `{name}`")
