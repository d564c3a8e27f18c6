"""KIP-558 active topics of a connector: the topics it wrote records to since it was created or since its topics
were last reset (`PUT /connectors/{name}/topics/reset`, an audited action: the newest one is the reset time).

Read from Kafka itself, so writes of every kind count (streaming batches, snapshot chunks run by other workers,
heartbeats, transaction metadata, warnings on the errors topic): a topic the connector names (web.dashboard.topics'
matcher) is active when one of its partitions holds a record stamped at or after that time
(`offsets_for_times`; the platform's producers stamp records with the time they write them).
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from django.conf import settings

from web.connectors import audit
from web.connectors.models import AuditEntry, Connector
from web.dashboard.topics import topic_matcher

RESET_ACTION = "connector.topics.reset"
_NO_LEADER_YET = {KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
                  KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}


class KafkaUnavailable(Exception):
    pass


def since_ms(connector: Connector) -> int:
    """Epoch milliseconds from which writes count: the connector's creation or its last topics reset."""
    start = connector.created_at
    reset = (AuditEntry.objects.filter(target=f"connector:{connector.name}", action=RESET_ACTION)
             .order_by("-at").values_list("at", flat=True).first())
    if reset is not None and reset > start:
        start = reset
    return int(start.timestamp() * 1000)


def active_topics(connector: Connector, timeout: float = 15.0) -> list[str]:
    """Asks again, with fresh metadata, while Kafka answers with a retriable error (a topic created a moment ago
    may have no partition leader yet); KafkaUnavailable once `timeout` is spent or on any other error."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return _active_topics(connector, max(1.0, deadline - time.monotonic()))
        except KafkaException as exception:
            error = exception.args[0]
            if not _retriable(error) or time.monotonic() >= deadline:
                raise KafkaUnavailable(str(error)) from None
            time.sleep(0.2)


def _retriable(error) -> bool:
    return isinstance(error, KafkaError) and (error.retriable() or error.code() in _NO_LEADER_YET)


def _active_topics(connector: Connector, timeout: float) -> list[str]:
    consumer = Consumer({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS, "group.id": "cdc-connect-topics",
                         "enable.auto.commit": False, "socket.timeout.ms": 10000})
    try:
        metadata = consumer.list_topics(timeout=timeout)
        matches = topic_matcher(connector)
        start = since_ms(connector)
        wanted = [TopicPartition(name, partition, start)
                  for name, topic in metadata.topics.items() if matches(name) and topic.error is None
                  for partition in topic.partitions]
        if not wanted:
            return []
        found = consumer.offsets_for_times(wanted, timeout=timeout)
    finally:
        consumer.close()
    return sorted({tp.topic for tp in found if tp.offset >= 0 and tp.error is None})


def reset(connector: Connector, *, user, source: str) -> None:
    audit.record(user, source, RESET_ACTION, f"connector:{connector.name}")
