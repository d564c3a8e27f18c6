"""Queries the pipeline makes to the server while streaming (a new table's column defaults, a truncated table's
schema, a heartbeat's action) go on through a connection lost meanwhile: a network fault or a server restart that the
binlog reader rides out must not end the pipeline because one of these queries hit it."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import pymysql
import pytest

from bench.faults.netproxy import FaultProxy
from connectors import AuthenticationFailed, SourceUnreachable
from connectors.mysql import binlog, catalog
from connectors.mysql.connection import with_reconnects
from connectors.mysql.snapshot_reader import MySqlSnapshotReader
from tests.mariadb.test_column_defaults import EXPECTED, SCHEMAS, TABLE, defaults
from tests.mariadb.test_event_kinds import records_of, streaming
from tests.mariadb.test_source import InProcess, properties

pytestmark = pytest.mark.integration


def test_a_new_tables_defaults_are_read_again_after_a_lost_connection(mariadb, mariadb_db, monkeypatch):
    real = catalog.column_catalog
    lost = []

    def lose_the_first(connection, database, table):
        if not lost:
            lost.append(table)
            connection.close()  # as a reset does, under the query
            raise pymysql.err.OperationalError(2013, "Lost connection to server during query")
        return real(connection, database, table)

    props, runner = streaming(mariadb, mariadb_db, **SCHEMAS)
    try:
        monkeypatch.setattr(catalog, "column_catalog", lose_the_first)
        mariadb.execute(TABLE.format(name="t"), "INSERT INTO t (id) VALUES (1)", database=mariadb_db)
        record, = records_of(props, mariadb_db, "t", 1)
        assert runner.thread.is_alive(), "the pipeline ended on the lost connection"
    finally:
        runner.close()
    assert lost == ["t"]
    assert defaults(record) == EXPECTED


def test_with_reconnects_waits_for_a_server_that_refuses_for_a_while(mariadb):
    proxy = FaultProxy(mariadb.cdc.host, mariadb.cdc.port).start()
    try:
        settings = dataclasses.replace(mariadb.cdc, host="127.0.0.1", port=proxy.port, unix_socket=None)
        proxy.refuse()
        healed = threading.Timer(1.5, proxy.heal)
        healed.start()
        started = time.monotonic()
        rows = with_reconnects(settings, lambda connection: connection.cursor().execute("SELECT 1"))
        assert rows == 1 and time.monotonic() - started >= 1.0
        proxy.refuse()  # for good: SourceUnreachable once the time is up
        with pytest.raises(SourceUnreachable):
            with_reconnects(settings, lambda connection: None, seconds=1.0)
    finally:
        proxy.close()


def test_with_reconnects_does_not_retry_a_refused_login(mariadb):
    calls = []
    with pytest.raises(AuthenticationFailed):
        with_reconnects(mariadb.cdc.as_user(mariadb.cdc.user, "wrong password"), calls.append)
    assert calls == []


def test_a_source_lost_while_planning_the_snapshot_starts_the_pipeline_again(mariadb, mariadb_db, monkeypatch):
    """No reader retries a query made while a snapshot is planned: the pipeline starts again from its committed
    offset (backing off as the readers do) instead of failing."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1), (2), (3)", database=mariadb_db)
    real = MySqlSnapshotReader.plan
    lost = []

    def lose_the_first(self, collection, chunk_size):
        if not lost:
            lost.append(collection)
            raise SourceUnreachable("cannot reach MySQL/MariaDB (injected: a reset while planning)")
        return real(self, collection, chunk_size)

    monkeypatch.setattr(MySqlSnapshotReader, "plan", lose_the_first)
    props = properties(mariadb, mariadb_db, **{"snapshot.mode": "initial"})
    runner = InProcess(props)
    try:
        records = records_of(props, mariadb_db, "t", 3)
        assert runner.thread.is_alive(), "the pipeline ended on the lost connection"
    finally:
        runner.close()
    assert lost == [f"{mariadb_db}.t"]
    assert sorted(json.loads(r.key)["id"] for r in records) == [1, 2, 3]


def test_a_binlog_stream_gone_silent_is_reopened(mariadb, mariadb_db, monkeypatch):
    """A connection cut without a word to the connector (a middlebox that lost its state, a peer gone: a half-open
    TCP connection) never delivers anything again, and nothing tells. The server sends a heartbeat every second when
    it has nothing else to send, so a stream silent for long is taken as lost and reopened."""
    monkeypatch.setattr(binlog, "stream_silence_seconds", lambda heartbeat_seconds: 3.0, raising=False)
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=mariadb_db)
    proxy = FaultProxy(mariadb.cdc.host, mariadb.cdc.port).start()
    try:
        through_proxy = dataclasses.replace(mariadb, cdc=dataclasses.replace(
            mariadb.cdc, host="127.0.0.1", port=proxy.port, unix_socket=None))
        props, runner = streaming(through_proxy, mariadb_db)
        try:
            mariadb.execute("INSERT INTO t VALUES (1)", database=mariadb_db)
            records_of(props, mariadb_db, "t", 1)
            proxy.sever()
            mariadb.execute("INSERT INTO t VALUES (2)", database=mariadb_db)
            records_of(props, mariadb_db, "t", 2, timeout=45)
        finally:
            runner.close()
    finally:
        proxy.close()
