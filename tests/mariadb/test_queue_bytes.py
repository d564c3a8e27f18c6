"""max.queue.size.in.bytes against a real binlog: the reader tells each row's size (source.queued_row_bytes), the
change queue holds no more than the bound, and every row still arrives once, in order."""

from __future__ import annotations

import random
import threading
import time

import pytest

from connectors.core.metrics import StreamingMetrics
from connectors.core.stream import Backoff, ChangeQueue, Idle, ReaderFailed, each_change
from connectors.mysql.binlog import RowChange, current_position, row_change
from connectors.mysql.config import MySqlConfig
from connectors.mysql.source import BinlogChangeReader

pytestmark = pytest.mark.integration

BOUND = 20_000


def test_the_binlog_reader_holds_the_queue_to_its_byte_bound(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(100), b TEXT, c INT)", database=mariadb_db)
    start = current_position(mariadb.cdc)
    mariadb.execute("INSERT INTO t SELECT seq, REPEAT('a', 50), REPEAT('b', 100), seq FROM seq_1_to_300",
                    database=mariadb_db)
    config = MySqlConfig.from_properties({
        "name": "bytes", "topic.prefix": "bytes", "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "database.hostname": mariadb.cdc.host, "database.port": str(mariadb.cdc.port),
        "database.user": mariadb.cdc.user, "database.password": mariadb.cdc.password,
        "database.server.id": str(random.randint(10_000, 4_000_000)), "database.include.list": mariadb_db,
        "max.queue.size.in.bytes": str(BOUND)})
    assert config.max_queue_size_in_bytes == BOUND
    changes = ChangeQueue(config.max_queue_size, config.max_queue_size_in_bytes)
    stop = threading.Event()
    reader = BinlogChangeReader(config, start, changes, StreamingMetrics("bytes", "bytes"), Backoff(), stop)
    reader.start()
    held: list[tuple[int, int]] = []
    ids: list[int] = []
    deadline = time.monotonic() + 60
    try:
        while len(ids) < 300 and time.monotonic() < deadline:
            held.append((changes.queued_bytes, changes.qsize()))
            for item in each_change(changes.take(5, 1.0, (Idle, ReaderFailed))):
                assert not isinstance(item, ReaderFailed), item.error
                item = row_change(item)  # a (run, row) tuple: a row of a rows event kept undecoded
                if isinstance(item, RowChange):
                    ids.append(item.after["id"])
            time.sleep(0.002)  # a taker slower than the reader: the queue fills up to its bound
    finally:
        stop.set()
        reader.join(10)
    assert ids == list(range(1, 301))
    assert all(queued <= BOUND or count == 1 for queued, count in held), max(held)
    # the rows were counted (a reader that told no sizes leaves 0), and the bound held the reader back
    assert max(queued for queued, _ in held) > BOUND // 2
    assert max(count for _, count in held) < 300
