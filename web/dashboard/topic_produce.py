"""Producing one message into a topic (operator): a key, a value and headers, written with acks=all by an idempotent
producer and audited as `topic.produce`. Refused for the platform's own topics, whose records only the pipelines
write: Kafka's (`__consumer_offsets`, `__transaction_state`, any `__…`), each connector's offsets topic
(`offset.storage.topic`, `cdc.offsets` by default) and transaction metadata topic (`<topic.prefix>.transaction`)."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaException, Producer
from django.conf import settings

from connectors.config.types import ConfigError
from web.connectors import audit
from web.connectors.definitions import engine_config
from web.connectors.models import Connector
from web.dashboard import topic_browser

DEFAULT_OFFSETS_TOPIC = "cdc.offsets"
MAX_KEY_BYTES = 16 * 1024
MAX_VALUE_BYTES = 900 * 1024  # under Kafka's default max.message.bytes (1 MiB) with room for key and headers
MAX_HEADERS = 32
MAX_HEADER_BYTES = 8 * 1024
TIMEOUT_S = 10.0


class Refused(Exception):
    """The message is not produced; the text says why, for the person who asked."""


class NoSuchTopic(Refused):
    pass


@dataclass
class Produced:
    topic: str
    partition: int
    offset: int


def protected_topics() -> dict[str, str]:
    """The platform's own topics by name, each with why it is protected."""
    found = {DEFAULT_OFFSETS_TOPIC: "the connectors' offsets topic"}
    for connector in Connector.objects.all():
        try:
            config = engine_config(connector)
        except ConfigError:
            continue
        found[config.offset_storage_topic] = f"the offsets topic of connector {connector.name}"
        transaction_topic = getattr(config, "transaction_topic_name", None)
        if transaction_topic:
            found[transaction_topic] = f"the transaction metadata topic of connector {connector.name}"
    return found


def protected_reason(topic: str) -> str | None:
    """Why `topic` is one of the platform's own topics, or None."""
    if topic.startswith("__"):
        return "one of Kafka's internal topics"
    return protected_topics().get(topic)


def check_writable(topic: str) -> None:
    reason = protected_reason(topic)
    if reason:
        raise Refused(f"{topic} is {reason}; only {'Kafka' if topic.startswith('__') else 'the platform'} writes "
                      "to it.")


def check_sizes(key: str | None, value: str | None, headers: list[tuple[str, str]]) -> None:
    if key is not None and len(key.encode()) > MAX_KEY_BYTES:
        raise Refused(f"The key is {len(key.encode()):,} bytes; at most {MAX_KEY_BYTES:,} are accepted.")
    if value is not None and len(value.encode()) > MAX_VALUE_BYTES:
        raise Refused(f"The value is {len(value.encode()):,} bytes; at most {MAX_VALUE_BYTES:,} are accepted.")
    if len(headers) > MAX_HEADERS:
        raise Refused(f"{len(headers)} headers given; at most {MAX_HEADERS} are accepted.")
    for name, text in headers:
        if not name:
            raise Refused("A header needs a name.")
        if len(name.encode()) + len(text.encode()) > MAX_HEADER_BYTES:
            raise Refused(f"Header {name[:50]} is longer than {MAX_HEADER_BYTES:,} bytes.")


def produce(topic: str, key: str | None, value: str | None, headers: list[tuple[str, str]], *, user,
            source: str) -> Produced:
    """Writes the message and waits for Kafka's acknowledgement; raises Refused (a protected or unknown topic, a
    size over the limits) or topic_browser.KafkaUnavailable."""
    check_sizes(key, value, headers)
    check_writable(topic)
    try:
        topic_browser.partitions(topic)  # an unknown topic is refused, never created by the producer
    except topic_browser.UnknownTopic:
        raise NoSuchTopic(f"There is no topic {topic} in the Kafka cluster.") from None
    delivered: list = []
    producer = Producer({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS, "enable.idempotence": True,
                         "acks": "all", "message.timeout.ms": int(TIMEOUT_S * 1000)})
    try:
        producer.produce(topic, value.encode() if value is not None else None,
                         key.encode() if key is not None else None,
                         headers=[(name, text.encode()) for name, text in headers],
                         on_delivery=lambda error, message: delivered.append((error, message)))
        producer.flush(TIMEOUT_S + 2)
    except (KafkaException, BufferError) as error:
        raise topic_browser.KafkaUnavailable(str(error)) from None
    if not delivered:
        raise topic_browser.KafkaUnavailable(f"Kafka did not acknowledge the message within {TIMEOUT_S:.0f} s.")
    error, message = delivered[0]
    if error is not None:
        raise topic_browser.KafkaUnavailable(error.str())
    done = Produced(topic, message.partition(), message.offset())
    audit.record(user, source, "topic.produce", f"topic:{topic}",
                 after={"partition": done.partition, "offset": done.offset,
                        "key_bytes": None if key is None else len(key.encode()),
                        "value_bytes": None if value is None else len(value.encode()),
                        "headers": [name for name, _ in headers]})
    return done
