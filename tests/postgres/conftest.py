"""The real PostgreSQL of the local stack (`devstack up postgres`), or the server POSTGRES_DSN names.

`postgres` (session) starts the private cluster when it is not running and stops it at the end only if it started it
(DEVSTACK_KEEP=1 keeps it). `pg_db` gives each test a fresh database owned by the connector's user (the `cdc` role,
LOGIN REPLICATION, over TCP with its password), dropped afterwards with the replication slots left in it. With
POSTGRES_DSN that DSN is used for everything: its user needs CREATEDB and REPLICATION.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass

import psycopg2
import psycopg2.extensions
import pytest

from devstack import postgres as devstack_postgres
from devstack import stack as devstack
from devstack.private_db import PrivatePostgres


@dataclass(frozen=True)
class Postgres:
    admin_dsn: str  # may create databases and roles
    cdc_dsn: str  # the connector's user; REPLICATION

    def execute(self, statement: str, params=None, dbname: str = "postgres") -> list[tuple]:
        conn = psycopg2.connect(psycopg2.extensions.make_dsn(self.admin_dsn, dbname=dbname))
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute(statement, params)
                return list(cur.fetchall()) if cur.description else []
        finally:
            conn.close()


@dataclass(frozen=True)
class PgDatabase:
    name: str
    dsn: str  # the connector's user, this database

    def connect(self, autocommit: bool = True):
        conn = psycopg2.connect(self.dsn)
        conn.autocommit = autocommit
        return conn

    def execute(self, statement: str, params=None) -> list[tuple]:
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(statement, params)
                return list(cur.fetchall()) if cur.description else []
        finally:
            conn.close()


@pytest.fixture(scope="session")
def postgres():
    started = devstack.up(["postgres"], echo=lambda line: None)
    external = os.environ.get("POSTGRES_DSN")
    if external:
        yield Postgres(admin_dsn=external, cdc_dsn=external)
    else:
        yield Postgres(admin_dsn=devstack_postgres.admin_dsn(), cdc_dsn=devstack_postgres.cdc_dsn())
    if started and not os.environ.get("DEVSTACK_KEEP"):
        devstack.down(started, echo=lambda line: None)


@pytest.fixture
def pg_db(postgres):
    name = f"t_{uuid.uuid4().hex[:12]}"
    owner = psycopg2.extensions.parse_dsn(postgres.cdc_dsn).get("user")
    postgres.execute(f'CREATE DATABASE "{name}"' + (f' OWNER "{owner}"' if owner else ""))
    yield PgDatabase(name, psycopg2.extensions.make_dsn(postgres.cdc_dsn, dbname=name))
    # a walsender outlives its closed connection for a moment; its slot cannot be dropped while it is active
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and postgres.execute(
        "SELECT 1 FROM pg_replication_slots WHERE database = %s AND active", (name,)
    ):
        time.sleep(0.05)
    postgres.execute(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = %s AND NOT active",
        (name,),
    )
    postgres.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def private_pg(tmp_path):
    """A PostgreSQL server of the test's own (devstack.private_db), for what a test does to the whole server."""
    server = PrivatePostgres(tmp_path / "pg").start()
    try:
        yield server
    finally:
        server.stop()
