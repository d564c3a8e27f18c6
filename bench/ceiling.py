"""The machine's ceiling for writing a pipeline's messages into Kafka: the same messages (read back from the
pipeline's topic) sent by a plain idempotent producer, for the benchmarks' ratios."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.topics import delete_topics


def read_messages(bootstrap: str, topic: str, limit: int) -> list[tuple[str, bytes, bytes]]:
    """Up to `limit` of a topic's committed messages (tombstones left out), from its start."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    out = []
    deadline = time.monotonic() + 60
    while len(out) < limit and time.monotonic() < deadline:
        for message in consumer.consume(1000, 1.0):
            if message.error() is None and message.value():
                out.append((topic, message.key(), message.value()))
    consumer.close()
    return out[:limit]


def one_after_another(*rates: float) -> float:
    """The rate of steps done one after the other for each item (a SELECT, then a produce, of each row), from each
    step's own rate."""
    return 1 / sum(1 / rate for rate in rates)


def producer_ceiling(bootstrap: str, messages: list[tuple[str, bytes, bytes]]) -> tuple[float, float]:
    """A plain idempotent producer sending the pipeline's messages to one scratch topic (then deleted), with the
    pipeline's acks, idempotence and compression, librdkafka's usual 5 ms linger and one flush at the end (the
    pipeline's sink drains before it flushes, see connectors/kafka/sink.py): msg/s and CPU µs per message."""
    topic = f"bench-ceiling-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "compression.type": "lz4", "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    began, cpu = time.monotonic(), time.process_time()
    for _, key, value in messages:
        while True:
            try:
                producer.produce(topic, value, key)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    rate, cpu_us = len(messages) / (time.monotonic() - began), (time.process_time() - cpu) * 1e6 / len(messages)
    delete_topics(bootstrap, topic)
    return rate, cpu_us
