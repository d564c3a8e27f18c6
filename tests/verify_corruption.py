"""What the Verify tests of every source share: corrupting a connector's topic on purpose, with records that look
like the connector's own (a copy of one of its events with another key or another `after`)."""

from __future__ import annotations

import json

from confluent_kafka import Producer

from tests.integration.kafka_reading import read_topic


def latest_event(bootstrap: str, topic: str, key: dict) -> tuple[bytes, dict]:
    """The key bytes and decoded value of the topic's last record (not a tombstone) whose key is `key`."""
    found = None
    for record in read_topic(bootstrap, topic):
        if record.key is not None and record.value is not None and json.loads(record.key) == key:
            found = (record.key, json.loads(record.value))
    assert found is not None, f"{topic} has no event for {key}"
    return found


def produce(bootstrap: str, topic: str, key: dict, value: dict) -> None:
    """Writes one record as a stray producer would (no transaction: read_committed consumers see it)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=json.dumps(key, separators=(",", ":")).encode(),
                     value=json.dumps(value, separators=(",", ":")).encode())
    assert producer.flush(30) == 0


def with_after(value: dict, after: dict) -> dict:
    """`value` (an event) with another `after` and op "u"; MongoDB's `after` is Extended JSON text."""
    text = isinstance(value.get("after"), str)
    return {**value, "op": "u", "after": json.dumps(after) if text else after}


def after_of(value: dict) -> dict:
    after = value["after"]
    return json.loads(after) if isinstance(after, str) else after


def found(report) -> dict[str, str]:
    """key (canonical JSON) -> kind, of every mismatch a report lists."""
    return {m.key: m.kind for m in report.mismatches}
