"""The devstack Kafka is real: produce/consume, and transactions seen correctly by read_committed."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    futures[topic].result(timeout=30)


def _read_all(bootstrap: str, topic: str, isolation: str, expected_end: int) -> list[str]:
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"reader-{topic}-{isolation}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": isolation,
    })
    consumer.subscribe([topic])
    values: list[str] = []
    try:
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is None:
                if values and len(values) >= expected_end:
                    break
                continue
            assert message.error() is None, message.error()
            values.append(message.value().decode())
    finally:
        consumer.close()
    return values


def test_produce_and_consume(stack, unique_name):
    topic = f"it.plain.{unique_name}"
    _create_topic(stack.kafka_bootstrap, topic)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "acks": "all"})
    for i in range(5):
        producer.produce(topic, key=str(i), value=f"message-{i}")
    assert producer.flush(30) == 0
    assert _read_all(stack.kafka_bootstrap, topic, "read_committed", 5) == [f"message-{i}" for i in range(5)]


def test_read_committed_sees_committed_not_aborted(stack, unique_name):
    topic = f"it.txn.{unique_name}"
    _create_topic(stack.kafka_bootstrap, topic)
    producer = Producer({
        "bootstrap.servers": stack.kafka_bootstrap,
        "transactional.id": f"txn-{unique_name}",
        "enable.idempotence": True,
        "acks": "all",
    })
    producer.init_transactions(30)

    producer.begin_transaction()
    producer.produce(topic, value="committed-1")
    producer.produce(topic, value="committed-2")
    producer.commit_transaction(30)

    producer.begin_transaction()
    producer.produce(topic, value="aborted-1")
    producer.flush(30)  # the aborted records really reach the log before the abort marker
    producer.abort_transaction(30)

    producer.begin_transaction()
    producer.produce(topic, value="committed-3")
    producer.commit_transaction(30)

    committed = _read_all(stack.kafka_bootstrap, topic, "read_committed", 3)
    assert committed == ["committed-1", "committed-2", "committed-3"]
    uncommitted = _read_all(stack.kafka_bootstrap, topic, "read_uncommitted", 4)
    assert uncommitted == ["committed-1", "committed-2", "aborted-1", "committed-3"]
