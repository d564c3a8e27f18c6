"""The connector survives PostgreSQL going away and coming back: on a PRIVATE server (devstack.private_db, never the
shared one), a fast restart under a streaming connector, and a reconnect that lands while the server is shutting
down (57P03 "the database system is shutting down"), are waited out; the rows written before, during and after
arrive in Kafka once each. The classification the reconnects rely on is checked with the real server's errors."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass

import psycopg
import psycopg2
import pytest

from connectors.postgres.config import PostgresConfig
from connectors.postgres.errors import retriable
from devstack.private_db import PrivatePostgres
from tests.postgres.test_source import Running
from tests.type_check import records_at_least

pytestmark = [pytest.mark.integration]


def connector_config(server: PrivatePostgres, dbname: str, name: str) -> PostgresConfig:
    user, password = server.cdc_user
    return PostgresConfig.from_properties({
        "name": name, "topic.prefix": name, "database.hostname": "127.0.0.1", "database.port": server.port,
        "database.user": user, "database.password": password, "database.dbname": dbname, "slot.name": dbname,
        "publication.autocreate.mode": "filtered", "offset.storage.topic": f"{name}.offsets",
        "poll.interval.ms": 100, "connect.backoff.initial.delay.ms": 200, "connect.backoff.max.delay.ms": 1000,
        "connect.max.attempts": 1000,
    })


def prepared(server: PrivatePostgres, dbname: str) -> None:
    user, _ = server.cdc_user
    with psycopg.connect(server.admin_dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{dbname}" OWNER "{user}"')
    with psycopg.connect(server.cdc_dsn(dbname), autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY)")
        conn.execute("INSERT INTO items VALUES (1)")


def insert(server: PrivatePostgres, dbname: str, row_id: int) -> None:
    with psycopg.connect(server.cdc_dsn(dbname), autocommit=True) as conn:
        conn.execute("INSERT INTO items VALUES (%s)", (row_id,))


def ids(records) -> list[int]:
    return [json.loads(r.value)["after"]["id"] for r in records]


def smart_shutdown_begun(server: PrivatePostgres, dbname: str = "postgres"):
    """An admin session (on `dbname`) held open, then a smart shutdown (SIGTERM): the server refuses new connections
    with 57P03 until that session ends. Returns the session."""
    held = psycopg.connect(server.admin_dsn(dbname), autocommit=True)
    os.kill(server.pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while True:
        try:
            psycopg.connect(server.cdc_dsn("postgres"), connect_timeout=5).close()
        except psycopg.OperationalError as error:
            if "the database system is shutting down" in str(error):  # 57P03, as text (see postgres/errors.py)
                return held
        assert time.monotonic() < deadline, "the server did not begin shutting down"
        time.sleep(0.1)


def started_again(server: PrivatePostgres, pid: int) -> None:
    """Once the postmaster `pid` (shutting down) has exited, the server is started again."""
    deadline = time.monotonic() + 60
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the server did not stop"
        time.sleep(0.1)
    server.start()


def test_errors_of_a_server_going_away_are_retriable_and_others_not(private_pg):
    dsn = private_pg.cdc_dsn("postgres")
    with psycopg.connect(dsn, autocommit=True) as victim:
        with psycopg.connect(private_pg.admin_dsn(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (victim.info.backend_pid,))
        with pytest.raises(psycopg.OperationalError) as terminated:
            victim.execute("SELECT 1")
    assert terminated.value.sqlstate == "57P01" and retriable(terminated.value)
    with pytest.raises(psycopg.OperationalError) as closed:  # the connection the server ended, used again
        victim.execute("SELECT 1")
    assert retriable(closed.value)
    with pytest.raises(psycopg.OperationalError) as wrong_password:
        psycopg.connect(dsn.replace("password=", "password=x"))
    assert not retriable(wrong_password.value)  # libpq gives no SQLSTATE for a failed connection: its text tells
    with pytest.raises(psycopg.errors.UndefinedTable) as missing:
        with psycopg.connect(dsn) as conn:
            conn.execute("SELECT * FROM no_such_table")
    assert not retriable(missing.value)

    pid = private_pg.pid
    held = smart_shutdown_begun(private_pg)
    try:
        with pytest.raises(psycopg.OperationalError) as shutting_down:
            psycopg.connect(dsn)
        with pytest.raises(psycopg2.OperationalError) as shutting_down2:
            psycopg2.connect(dsn)
    finally:
        held.close()
    for error in (shutting_down.value, shutting_down2.value):
        assert "the database system is shutting down" in str(error) and retriable(error)
    deadline = time.monotonic() + 30
    while True:  # the server is gone: connections are refused
        try:
            psycopg.connect(dsn, connect_timeout=5).close()
        except psycopg.OperationalError as error:
            if "shutting down" not in str(error):
                assert retriable(error), error
                break
        assert time.monotonic() < deadline
        time.sleep(0.1)
    started_again(private_pg, pid)


@dataclass
class Streaming:
    """A connector on `private_pg` that has delivered the snapshot's row (id 1) and a streamed one (id 2)."""

    running: Running
    bootstrap: str
    dbname: str
    topic: str

    def records_at_least(self, count: int, timeout: float = 120):
        return records_at_least(self.running, self.bootstrap, self.topic, count, timeout=timeout)


@pytest.fixture
def streaming(private_pg, stack, unique_name):
    name = "pg" + unique_name.replace("-", "")[-12:]
    dbname, topic = f"r_{name}", f"{name}.public.items"
    prepared(private_pg, dbname)
    running = Running(connector_config(private_pg, dbname, name), stack.kafka_bootstrap)
    try:
        records_at_least(running, stack.kafka_bootstrap, topic, 1)  # the snapshot's row
        insert(private_pg, dbname, 2)
        records_at_least(running, stack.kafka_bootstrap, topic, 2)  # streaming: the table's schema is known
        yield Streaming(running, stack.kafka_bootstrap, dbname, topic)
    finally:
        running.stop()


def test_the_connector_waits_out_a_fast_restart_and_a_shutdown(private_pg, streaming):
    running, dbname = streaming.running, streaming.dbname
    private_pg.restart()  # fast shutdown: the connector's sessions are ended, then a start
    insert(private_pg, dbname, 3)
    streaming.records_at_least(3)
    # a shutdown the connector's reconnects run into: they are answered 57P03 until the held session ends
    pid = private_pg.pid
    held = smart_shutdown_begun(private_pg)
    try:
        held.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'cdc'")
        time.sleep(3)  # reconnects refused meanwhile
    finally:
        held.close()
    started_again(private_pg, pid)
    insert(private_pg, dbname, 4)
    records = streaming.records_at_least(4)
    assert not running.runner.errors
    assert ids(records) == [1, 2, 3, 4]


def test_a_table_change_read_while_the_server_shuts_down_waits_for_it_to_come_back(private_pg, streaming):
    """A Relation message (here: a column added) reaches the connector after its catalog session was ended and
    while the server refuses new sessions (57P03): the catalog is read again once the server is back."""
    running, dbname = streaming.running, streaming.dbname
    pid = private_pg.pid
    held = smart_shutdown_begun(private_pg, dbname)
    try:
        # the connector's SQL sessions end; its replication session (a walsender) streams on until the end
        held.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE usename = 'cdc' AND backend_type = 'client backend'")
        held.execute("ALTER TABLE items ADD COLUMN note text")
        held.execute("INSERT INTO items VALUES (3, 'after')")
        time.sleep(3)  # the change is streamed; the catalog cannot be read meanwhile
        assert not running.runner.errors
        # the walsender too: a smart shutdown waits for it as for any session
        held.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'cdc'")
    finally:
        held.close()
    started_again(private_pg, pid)
    records = streaming.records_at_least(3)
    assert not running.runner.errors
    assert ids(records) == [1, 2, 3]
    assert json.loads(records[-1].value)["after"] == {"id": 3, "note": "after"}
