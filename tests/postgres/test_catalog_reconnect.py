"""The event builder's catalog connection, ended by the server (as a restart of PostgreSQL ends it), is opened again
for the next Relation message instead of failing the pipeline: the fault campaign's source-restart scenario
(`python -m bench.faults --source postgres`) had the runner exit at every restart because of it."""

from __future__ import annotations

import time

import pytest

from connectors.postgres.events import PgEventBuilder
from connectors.postgres.source import connect_sql
from tests.postgres.test_source import pg_config

pytestmark = [pytest.mark.integration]


def _catalog_backends(postgres, pg_db) -> list[int]:
    return [pid for (pid,) in postgres.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'", (pg_db.name,))]


def test_a_catalog_connection_the_server_ended_is_opened_again(postgres, pg_db):
    pg_db.execute("CREATE TABLE first (id int PRIMARY KEY, label text)")
    pg_db.execute("CREATE TABLE second (id bigint PRIMARY KEY, amount numeric(10, 2) NOT NULL)")
    first, second = (pg_db.execute("SELECT %s::regclass::oid", (name,))[0][0] for name in ("first", "second"))
    builder = PgEventBuilder(pg_config(pg_db, "catreconnect"), lambda: connect_sql(pg_db.dsn))
    try:
        assert builder.table(first, "public", "first").key_names == ["id"]
        (backend,) = _catalog_backends(postgres, pg_db)
        assert postgres.execute("SELECT pg_terminate_backend(%s)", (backend,)) == [(True,)]
        deadline = time.monotonic() + 30
        while backend in _catalog_backends(postgres, pg_db):  # the server has ended that session
            assert time.monotonic() < deadline, "the terminated backend did not exit"
            time.sleep(0.05)

        table = builder.table(second, "public", "second", [("id", 20, -1), ("amount", 1700, 655366)])

        assert table.key_names == ["id"] and [c.name for c in table.columns] == ["id", "amount"]
        assert [c.optional for c in table.columns] == [False, False]
        assert len(_catalog_backends(postgres, pg_db)) == 1  # a new session
    finally:
        builder.close()

