"""Test helper: everything a topic holds right now, as a reader with a given isolation level sees it."""

from __future__ import annotations

import json
from dataclasses import dataclass

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from connectors.kafka.reading import EndNotReached, end_offsets, read_to_end


@dataclass(frozen=True)
class Record:
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple


def read_topic(bootstrap: str, topic: str, isolation: str = "read_committed", timeout: float = 20,
               stable_only: bool = False) -> list[Record]:
    """Reads to the end of every partition; with `stable_only`, only to the last stable offset, so a transaction
    still open (say of a killed producer, until it is fenced or times out) does not hold the read up."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = sorted(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    ends = end_offsets(admin, topic, partitions, timeout, stable_only=stable_only)
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "test-reader",
        "enable.auto.commit": False,
        "isolation.level": isolation,
        "fetch.wait.max.ms": 50,
    })
    records: list[Record] = []

    def keep(message) -> None:
        records.append(Record(message.partition(), message.key(), message.value(), tuple(message.headers() or ())))

    def fail(error) -> None:
        raise AssertionError(error)

    try:
        consumer.list_topics(topic, timeout=10)  # a known leader spares the assignment a 500 ms retry
        read_to_end(consumer, topic, ends, keep, timeout, fail)
    except EndNotReached:
        raise AssertionError(f"could not read {topic} to its end") from None
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


def last_snapshot_record(bootstrap: str, offsets_topic: str, connector: str, replica_set: str = "rs0") -> dict | None:
    """The snapshot field of the connector's last offset record that has one. Once streaming begins, the records
    that follow (position commits at start and while idle) carry none, so the latest record alone may not tell."""
    from connectors.kafka.offset_record import OffsetRecord, decode_key

    found = None
    for record in read_topic(bootstrap, offsets_topic):
        if record.value and record.key and decode_key(record.key) == (connector, replica_set):
            found = OffsetRecord.from_kafka(record.key, record.value).snapshot or found
    return found
