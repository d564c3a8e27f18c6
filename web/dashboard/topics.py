"""Kafka, read for people: the topics a connector writes with their message counts, and a topic's last events.

Counts are log end minus log start offsets summed over partitions. Pipelines write in transactions, and each
commit leaves one control marker per partition that also takes an offset, so the count is an upper bound of the
records a read_committed consumer sees (docs/dashboard.md).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from django.conf import settings

from connectors.config import ConfigError
from web.connectors.definitions import engine_config
from web.connectors.models import Connector

MAX_SCAN_PER_PARTITION = 5000  # how far back a key filter looks


class KafkaUnavailable(Exception):
    pass


@dataclass
class TopicInfo:
    name: str
    partitions: int
    messages: int


def _admin() -> AdminClient:
    return AdminClient({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS, "socket.timeout.ms": 3000})


def _consumer(**extra) -> Consumer:
    return Consumer({
        "bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS,
        "group.id": "cdc-dashboard-browser",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "socket.timeout.ms": 3000,
        "fetch.wait.max.ms": 50,
        **extra,
    })


def topic_matcher(connector: Connector):
    """A predicate for the topics a connector writes: `<topic.prefix>.…` (data, transactions), its heartbeat and
    errors topics."""
    prefix = connector.topic_prefix or connector.name
    extra = set()
    try:
        config = engine_config(connector)
        extra = {config.errors_topic_name, config.heartbeat_topic_name}
    except ConfigError:
        pass
    return lambda topic: topic.startswith(f"{prefix}.") or topic in extra


def belongs_to(connector: Connector, topic: str) -> bool:
    return topic_matcher(connector)(topic)


def connector_topics(connector: Connector, timeout: float = 5.0) -> list[TopicInfo]:
    consumer = _consumer()
    try:
        metadata = consumer.list_topics(timeout=timeout)
        matches = topic_matcher(connector)
        names = sorted(name for name in metadata.topics if matches(name))
        found = []
        for name in names:
            partitions = sorted(metadata.topics[name].partitions)
            total = 0
            for partition in partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(name, partition), timeout=timeout,
                                                           cached=False)
                total += max(0, high - low)
            found.append(TopicInfo(name, len(partitions), total))
        return found
    except KafkaException as error:
        raise KafkaUnavailable(str(error.args[0] if error.args else error)) from None
    finally:
        consumer.close()


def _decode(raw: bytes | None) -> Any:
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _expand(value: Any) -> Any:
    """Debezium's MongoDB `before`/`after`/`patch`/`filter` are JSON strings: show them as documents."""
    if isinstance(value, dict):
        payload = value.get("payload") if isinstance(value.get("payload"), dict) else value
        for key in ("before", "after", "patch", "filter"):
            if isinstance(payload.get(key), str):
                try:
                    payload[key] = json.loads(payload[key])
                except ValueError:
                    pass
    return value


@dataclass
class Event:
    partition: int
    offset: int
    timestamp_ms: int
    key: Any
    key_text: str
    value: Any
    pretty: str


def last_events(topic: str, count: int = 20, key: str = "", timeout: float = 8.0) -> list[Event]:
    """The newest `count` committed events of `topic`, newest first; with `key`, only those whose key contains it.

    Reads backwards in growing windows of offsets (transaction markers and aborted records take offsets too) until
    `count` events are found, the start of the log is reached, or MAX_SCAN_PER_PARTITION offsets were read.
    """
    consumer = _consumer()
    try:
        metadata = consumer.list_topics(topic, timeout=timeout)
        if topic not in metadata.topics or metadata.topics[topic].error is not None:
            return []
        marks = {}
        for partition in sorted(metadata.topics[topic].partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout,
                                                       cached=False)
            if high > low:
                marks[partition] = (low, high)
    except KafkaException as error:
        raise KafkaUnavailable(str(error.args[0] if error.args else error)) from None
    finally:
        consumer.close()
    window = 2 * count + 10
    deadline = time.monotonic() + timeout
    while True:
        events = _read(topic, marks, window, key, deadline)
        exhausted = all(high - window <= low for low, high in marks.values())
        if len(events) >= count or exhausted or window >= MAX_SCAN_PER_PARTITION or time.monotonic() > deadline:
            break
        window = min(MAX_SCAN_PER_PARTITION, window * 4)
    events.sort(key=lambda e: (e.timestamp_ms, e.offset), reverse=True)
    return events[:count]


def _read(topic: str, marks: dict[int, tuple[int, int]], window: int, key: str, deadline: float) -> list[Event]:
    """Events of the last `window` offsets of each partition (a fresh consumer: positions start where assigned)."""
    if not marks:
        return []
    consumer = _consumer()
    try:
        consumer.assign([TopicPartition(topic, p, max(low, high - window)) for p, (low, high) in marks.items()])
        pending = set(marks)
        events: list[Event] = []
        while pending and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.1):
                if message.error() is not None:
                    continue
                key_value = _decode(message.key())
                key_text = key_value if isinstance(key_value, str) else json.dumps(key_value, sort_keys=True)
                if key and key not in (key_text or ""):
                    continue
                value = _expand(_decode(message.value()))
                events.append(Event(message.partition(), message.offset(), message.timestamp()[1], key_value,
                                    key_text or "", value, json.dumps(value, indent=2)))
            for position in consumer.position([TopicPartition(topic, p) for p in pending]):
                if position.offset >= marks[position.partition][1]:  # past the end seen when the read started
                    pending.discard(position.partition)
        return events
    except KafkaException as error:
        raise KafkaUnavailable(str(error.args[0] if error.args else error)) from None
    finally:
        consumer.close()
