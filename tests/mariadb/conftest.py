"""The real MariaDB of the local stack (`devstack up mariadb`), or the server MARIADB_DSN names.

The session fixture starts the private server when it is not running and stops it at the end only if it started
it (DEVSTACK_KEEP=1 keeps it). Each test gets its own database from `mariadb_db`.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import pytest

from connectors.mysql.connection import ConnectionSettings, connect
from devstack import settings
from devstack import stack as devstack


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


@pytest.fixture(scope="session")
def mariadb(stack):  # the tests also need Kafka
    started = devstack.up(["mariadb"], echo=lambda line: None)
    admin = ConnectionSettings.from_dsn(settings.mariadb_dsn())
    if os.environ.get("MARIADB_DSN"):
        cdc = ConnectionSettings.from_dsn(os.environ.get("MARIADB_CDC_DSN") or os.environ["MARIADB_DSN"])
    else:
        cdc = admin.as_user(*settings.MARIADB_CDC_USER)
    yield MariaDB(admin=admin, cdc=cdc)
    if started and not os.environ.get("DEVSTACK_KEEP"):
        devstack.down(started, echo=lambda line: None)


@pytest.fixture
def mariadb_db(mariadb):
    """A fresh database for one test, dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    mariadb.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    yield name
    mariadb.execute(f"DROP DATABASE IF EXISTS `{name}`")
