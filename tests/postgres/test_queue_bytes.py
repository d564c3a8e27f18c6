"""max.queue.size.in.bytes against a real slot: the WAL reader tells its changes' sizes (stream.queued_change_bytes),
the change queue holds no more than the bound, and every change still arrives once, in order."""

from __future__ import annotations

import threading
import time

import pytest

from connectors.core.metrics import StreamingMetrics
from connectors.core.stream import Backoff, ChangeQueue, Idle, ReaderFailed
from connectors.postgres import pgoutput as p
from connectors.postgres.replication import ReplicationStream
from connectors.postgres.stream import Acknowledger, WalChange, WalReader, queued_bytes, queued_change_bytes
from tests.postgres.test_source import pg_config

pytestmark = pytest.mark.integration

BOUND = 20_000


def test_a_change_is_counted_by_its_values():
    small = WalChange(p.Insert(1, ("1", None)), 0, 0, 0, 0)
    large = WalChange(p.Update(1, ("1", "x" * 1000), old=("1", "y" * 500), old_kind="O"), 0, 0, 0, 0)
    assert queued_change_bytes(large) - queued_change_bytes(small) == 1501 + 2 * 64  # the old image's id too


def test_changes_queued_together_count_as_a_sample_or_their_reads_messages():
    small = [WalChange(p.Insert(1, ("1", "x" * 10)), 0, 0, 0, 0) for _ in range(96)]  # a sample of every sixth
    each = queued_change_bytes(small[0])
    assert queued_bytes(small, 0) == each  # alike: the sample's average is theirs
    mixed = [*small[:48], *(WalChange(p.Insert(1, ("1", "x" * 1010)), 0, 0, 0, 0) for _ in range(48))]
    assert queued_bytes(mixed, 0) == each + 500  # half and half, as the spread sample finds them
    mixed[3] = WalChange(p.Insert(1, ("1", "x" * 10_000_000)), 0, 0, 0, 0)  # between two sampled changes
    assert queued_bytes(mixed, 100_000) == 100_000  # the read's average message weighs it in


def test_the_wal_reader_holds_the_queue_to_its_byte_bound(pg_db):
    pg_db.execute("CREATE TABLE t (id int PRIMARY KEY, a text, b text)")
    pg_db.execute("CREATE PUBLICATION bytes FOR TABLE t")
    with ReplicationStream(pg_db.dsn, pg_db.name, ["bytes"]) as made:
        made.create_slot(export_snapshot=False)
    pg_db.execute("INSERT INTO t SELECT g, repeat('a', 50), repeat('b', 100) FROM generate_series(1, 300) g")
    config = pg_config(pg_db, "bytes", **{"max.queue.size.in.bytes": str(BOUND)})
    assert config.max_queue_size_in_bytes == BOUND
    changes = ChangeQueue(config.max_queue_size, config.max_queue_size_in_bytes)
    stop = threading.Event()
    reader = WalReader(lambda: ReplicationStream(pg_db.dsn, pg_db.name, ["bytes"]), None, changes, Acknowledger(),
                       StreamingMetrics("bytes", pg_db.name), Backoff(), stop, 0.1)
    reader.start()
    held: list[tuple[int, int]] = []
    ids: list[int] = []
    deadline = time.monotonic() + 60
    try:
        while len(ids) < 300 and time.monotonic() < deadline:
            held.append((changes.queued_bytes, changes.qsize()))
            for item in changes.take(5, 1.0, (Idle, ReaderFailed)):
                assert not isinstance(item, ReaderFailed), item.error
                if isinstance(item, WalChange) and type(item.message) is p.Insert:
                    ids.append(int(item.message.new[0]))
            time.sleep(0.002)  # a taker slower than the reader: the queue fills up to its bound
    finally:
        stop.set()
        reader.join(30)
    assert ids == list(range(1, 301))
    assert all(queued <= BOUND or count == 1 for queued, count in held), max(held)
    assert max(queued for queued, _ in held) > BOUND // 2  # the changes were counted and the bound held them back
    assert max(count for _, count in held) < 300
