"""The topics a connector writes, with their exact message counts (topic_browser.exact_counts: what a
read_committed consumer sees, not log end minus log start, which transaction markers inflate)."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException
from django.conf import settings

from connectors.config.types import ConfigError
from web.connectors.definitions import engine_config
from web.connectors.models import Connector
from web.dashboard import topic_browser


class KafkaUnavailable(Exception):
    pass


@dataclass
class TopicInfo:
    name: str
    partitions: int
    messages: int
    exact: bool  # False: counting stopped at the time budget; `messages` is a lower bound


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


def connector_topics(connector: Connector, timeout: float = 5.0, budget: float = 3.0) -> list[TopicInfo]:
    consumer = Consumer({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS, "group.id": "cdc-dashboard-browser",
                         "enable.auto.commit": False, "socket.timeout.ms": 3000})
    try:
        metadata = consumer.list_topics(timeout=timeout)
    except KafkaException as error:
        raise KafkaUnavailable(str(error.args[0] if error.args else error)) from None
    finally:
        consumer.close()
    matches = topic_matcher(connector)
    names = sorted(name for name, topic in metadata.topics.items() if matches(name) and topic.error is None)
    found = []
    deadline_share = budget / max(1, len(names))
    try:
        for name in names:
            parts = topic_browser.partitions(name, timeout)
            topic_browser.exact_counts(name, parts, max(0.5, deadline_share))
            found.append(TopicInfo(name, len(parts), sum(p.count or 0 for p in parts), all(p.counted for p in parts)))
    except (topic_browser.KafkaUnavailable, topic_browser.UnknownTopic) as error:
        raise KafkaUnavailable(str(error)) from None
    return found
