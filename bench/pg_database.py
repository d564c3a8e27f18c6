"""A bench run's own PostgreSQL database on devstack's server: created owned by the connector's user, dropped with
the replication slots made in it."""

from __future__ import annotations

import time
import uuid

import psycopg
import psycopg2.extensions

from devstack import postgres as devstack_postgres


def create_database(prefix: str) -> tuple[psycopg.Connection, str]:
    """An autocommit admin connection and the name of a new, empty database `<prefix>_<random>`."""
    admin = psycopg.connect(devstack_postgres.admin_dsn(), autocommit=True)
    owner = psycopg2.extensions.parse_dsn(devstack_postgres.cdc_dsn())["user"]
    db = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{db}" OWNER "{owner}"')
    return admin, db


def drop_database(admin: psycopg.Connection, db: str) -> None:
    """Drops the run's slots, once their walsenders have gone (the pipelines were stopped), its database, and closes
    the admin connection."""
    deadline = time.monotonic() + 30
    while True:
        try:
            admin.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                          "WHERE database = %s", (db,))
            break
        except psycopg.errors.ObjectInUse:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    admin.close()
