"""Topics read to their end, `read_committed`: the raw key and value bytes of every record, in partition order."""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient


@dataclass(frozen=True)
class Record:
    key: bytes | None
    value: bytes | None


def topics_with_prefix(bootstrap: str, prefix: str) -> list[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return sorted(name for name in admin.list_topics(timeout=30).topics if name.startswith(prefix))


def read_topic(bootstrap: str, topic: str, timeout: float = 60) -> list[Record]:
    """Every committed record of `topic` (partition by partition)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-compat", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "fetch.wait.max.ms": 50})
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics[topic]
        records: list[Record] = []
        for partition in sorted(metadata.partitions):
            # read_committed: the high watermark is the last stable offset
            _, end = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
            consumer.assign([TopicPartition(topic, partition, 0)])
            deadline = time.monotonic() + timeout
            position = 0
            while position < end:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"could not read {topic} to its end ({position} of {end})")
                message = consumer.poll(0.5)
                if message is None:
                    positions = consumer.position([TopicPartition(topic, partition)])
                    position = max(position, positions[0].offset)
                    continue
                if message.error():
                    raise RuntimeError(f"reading {topic}: {message.error()}")
                records.append(Record(message.key(), message.value()))
                position = message.offset() + 1
        return records
    finally:
        consumer.close()


def dump(bootstrap: str, prefix: str, skip: tuple[str, ...] = ()) -> dict[str, list[Record]]:
    """{topic without `prefix`: its records} of every topic whose name starts with `prefix`, but those in `skip`."""
    return {topic[len(prefix):]: read_topic(bootstrap, topic)
            for topic in topics_with_prefix(bootstrap, prefix) if topic not in skip}
