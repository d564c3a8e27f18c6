"""A batch's messages are mostly acknowledged before the sink flushes: `write_batch` waits (polling) while more than
about one produce request per topic is left, then flushes the rest (connectors/kafka/sink.py, `_drain`). A flush
with many requests' worth queued keeps librdkafka's broker thread polling without sleep until the last answer.

The producer here is a stand-in that acknowledges a fixed number of messages per poll and records how many were
left when flush() was called."""

from __future__ import annotations

import pytest

from connectors.kafka import sink as sink_module
from connectors.kafka.offset_record import OffsetRecord
from connectors.kafka.sink import OutMessage, TransactionalSink


class FakeTopics:
    max_message_bytes: dict = {}

    def is_known(self, topic: str) -> bool:
        return True

    def ensure(self, specs) -> None:
        pass


class FakeProducer:
    acked_per_poll = 1000  # messages answered by one poll
    instances: list[FakeProducer] = []

    def __init__(self, config: dict):
        self.config = config
        self.queued = 0
        self.polls = 0
        self.left_at_flush: list[int] = []
        FakeProducer.instances.append(self)

    def init_transactions(self, timeout: float) -> None:
        pass

    def begin_transaction(self) -> None:
        pass

    def produce(self, topic, value, key, headers=None) -> None:
        self.queued += 1

    def poll(self, timeout: float) -> int:
        self.polls += 1
        self.queued = max(0, self.queued - self.acked_per_poll)
        return 0

    def __len__(self) -> int:
        return self.queued

    def flush(self, timeout: float) -> int:
        self.left_at_flush.append(self.queued)
        self.queued = 0
        return 0

    def commit_transaction(self, timeout: float) -> None:
        pass


@pytest.fixture
def sink(monkeypatch):
    FakeProducer.instances = []
    monkeypatch.setattr(sink_module, "Producer", FakeProducer)
    made = TransactionalSink("127.0.0.1:1", "drain", "rs", topic_admin=FakeTopics(), lanes=1,
                             producer_config={"batch.size": 100_000})
    made.open()
    return made


def messages(count: int, size: int) -> list[OutMessage]:
    return [OutMessage("drain.t", b"k", b"v" * (size - 1)) for _ in range(count)]


def test_a_large_batch_is_flushed_with_about_one_request_per_topic_left(sink):
    sink.write_batch(messages(40_000, 500), OffsetRecord("drain", "rs"))  # 20 MB: 200 requests of 100 KB
    producer = FakeProducer.instances[0]
    # one request of 200 messages for the batch's topic, and the offset record
    assert 0 < producer.left_at_flush[-1] <= 201
    assert producer.polls >= 39


def test_a_small_batch_is_flushed_at_once(sink):
    sink.write_batch(messages(100, 500), OffsetRecord("drain", "rs"))
    producer = FakeProducer.instances[0]
    assert producer.left_at_flush[-1] == 101
    assert producer.polls <= 1  # the poll before the transaction's begin only


def test_a_drain_that_stops_moving_ends_in_the_flush(sink, monkeypatch):
    monkeypatch.setattr(FakeProducer, "acked_per_poll", 0)
    monkeypatch.setattr(sink_module, "DRAIN_STALL_SECONDS", 0.02)
    sink.write_batch(messages(40_000, 500), OffsetRecord("drain", "rs"))
    assert FakeProducer.instances[0].left_at_flush[-1] == 40_001
