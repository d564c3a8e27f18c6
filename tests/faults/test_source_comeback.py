"""A PostgreSQL server that stays away while a connector streams, long enough for the replication reader's backoff
to grow, then starts: the reader reconnects within seconds of the server accepting connections, not at the end of
its backoff (up to connect.backoff.max.delay.ms). On a PRIVATE server (devstack.private_db), never the shared one."""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from connectors.postgres.config import PostgresConfig
from devstack.private_db import PrivatePostgres
from tests.postgres.test_server_restart import insert, prepared
from tests.postgres.test_source import Running
from tests.type_check import records_at_least

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BACKOFF_MS = 8_000  # the reader's retries wait 8 s, 16 s, 32 s, 64 s: the server comes back during the 64 s wait


class Messages(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def private_pg():
    # not under pytest's basetemp: another pytest session may make it 0700 again, and the server's OS user must
    # reach its data directory
    home = Path(tempfile.mkdtemp(prefix="cdc-pg-comeback-"))
    home.chmod(0o711)
    server = PrivatePostgres(home / "pg").start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.timeout(600)
def test_the_replication_reader_reconnects_as_soon_as_the_server_is_back(private_pg, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "pb" + unique_name.replace("-", "")[-12:]
    dbname = f"r_{name}"
    topic = f"{name}.public.items"
    prepared(private_pg, dbname)
    user, password = private_pg.cdc_user
    config = PostgresConfig.from_properties({
        "name": name, "topic.prefix": name, "database.hostname": "127.0.0.1", "database.port": private_pg.port,
        "database.user": user, "database.password": password, "database.dbname": dbname, "slot.name": dbname,
        "publication.autocreate.mode": "filtered", "offset.storage.topic": f"{name}.offsets",
        "poll.interval.ms": 100, "connect.backoff.initial.delay.ms": BACKOFF_MS,
    })
    messages = Messages()
    logging.getLogger("connectors.postgres.stream").addHandler(messages)
    running = Running(config, bootstrap)
    try:
        records_at_least(running, bootstrap, topic, 1)  # the snapshot's row
        insert(private_pg, dbname, 2)
        records_at_least(running, bootstrap, topic, 2)  # streaming
        private_pg.stop()
        deadline = time.monotonic() + 300
        while not any("in 64.0s" in message for message in messages.messages):
            assert time.monotonic() < deadline, messages.messages
            assert running.thread.is_alive()
            time.sleep(0.2)
        time.sleep(5)  # well into the 64 s wait
        private_pg.start()  # returns once the server accepts connections
        back = time.monotonic()
        insert(private_pg, dbname, 3)
        records_at_least(running, bootstrap, topic, 3, timeout=120)
        recovery = time.monotonic() - back
    finally:
        logging.getLogger("connectors.postgres.stream").removeHandler(messages)
        running.stop()
    assert not running.runner.errors
    assert recovery < 20, f"the change came {recovery:.0f}s after the server was back"
