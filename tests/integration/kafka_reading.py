"""Test helper: everything a topic holds right now, as a reader with a given isolation level sees it."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from connectors.kafka.errors import LEADERSHIP_SETTLING_CODES


@dataclass(frozen=True)
class Record:
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple


def _end_offsets(admin: AdminClient, topic: str, stable_only: bool, timeout: float) -> dict[int, int]:
    """The end offset of every partition, asked again while leadership settles: a broker that was just resumed or
    restarted re-registers with its controller (no leader, then a stale leader epoch) before it answers again."""
    ends_as = IsolationLevel.READ_COMMITTED if stable_only else IsolationLevel.READ_UNCOMMITTED
    deadline = time.monotonic() + timeout
    while True:
        partitions = sorted(admin.list_topics(topic, timeout=10).topics[topic].partitions)
        request = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
        try:
            futures = admin.list_offsets(request, isolation_level=ends_as)
            return {tp.partition: future.result().offset for tp, future in futures.items()}
        except KafkaException as error:
            settling = error.args[0].retriable() or error.args[0].code() in LEADERSHIP_SETTLING_CODES
            if not settling or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def read_topic(bootstrap: str, topic: str, isolation: str = "read_committed", timeout: float = 20,
               stable_only: bool = False) -> list[Record]:
    """Reads to the end of every partition; with `stable_only`, only to the last stable offset, so a transaction
    still open (say of a killed producer, until it is fenced or times out) does not hold the read up."""
    ends = _end_offsets(AdminClient({"bootstrap.servers": bootstrap}), topic, stable_only, timeout)
    pending = {p: end for p, end in ends.items() if end > 0}
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "test-reader",
        "enable.auto.commit": False,
        "isolation.level": isolation,
        "fetch.wait.max.ms": 50,
    })
    records: list[Record] = []
    try:
        consumer.list_topics(topic, timeout=10)  # a known leader spares the assignment a 500 ms retry
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in pending])
        deadline = time.monotonic() + timeout
        while pending:
            assert time.monotonic() < deadline, f"could not read {topic} to its end"
            for message in consumer.consume(500, 0.005):
                assert message.error() is None, message.error()
                records.append(Record(message.partition(), message.key(), message.value(),
                                      tuple(message.headers() or ())))
            for position in consumer.position([TopicPartition(topic, p) for p in list(pending)]):
                if position.offset >= pending[position.partition]:
                    del pending[position.partition]
    finally:
        consumer.close()
    return records


def committed_row_events(bootstrap: str, topic: str, column: str = "id") -> list[tuple[str, object]]:
    """(op, after[column]) of every row event with an `after` a read_committed consumer sees now, in order (either
    converter shape; [] while the topic does not exist). A relational connector's rows, for exactly-once checks."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return []
    values = [json.loads(record.value) for record in read_topic(bootstrap, topic, stable_only=True) if record.value]
    envelopes = [value.get("payload", value) for value in values]
    return [(envelope["op"], envelope["after"][column]) for envelope in envelopes if envelope.get("after")]


def committed_row_ids(bootstrap: str, topic: str, column: str = "id") -> list:
    return [row for _, row in committed_row_events(bootstrap, topic, column)]
