"""KIP-558 active topics of a connector: the topics it wrote records to since it was created or since its topics
were last reset (`PUT /connectors/{name}/topics/reset`, an audited action: the newest one is the reset time).

Read from Kafka itself, so writes of every kind count (streaming batches, snapshot chunks run by other workers,
heartbeats, transaction metadata, warnings on the errors topic): a topic the connector names (web.dashboard.topics'
matcher) is active when one of its partitions holds a record stamped at or after that time
(`offsets_for_times`; the platform's producers stamp records with the time they write them).
"""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaException, TopicPartition
from django.conf import settings

from web.connectors import audit
from web.connectors.models import AuditEntry, Connector
from web.dashboard.topics import topic_matcher

RESET_ACTION = "connector.topics.reset"


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
    consumer = Consumer({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS, "group.id": "cdc-connect-topics",
                         "enable.auto.commit": False, "socket.timeout.ms": 3000})
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
    except KafkaException as error:
        raise KafkaUnavailable(str(error.args[0])) from None
    finally:
        consumer.close()
    return sorted({tp.topic for tp in found if tp.offset >= 0 and tp.error is None})


def reset(connector: Connector, *, user, source: str) -> None:
    audit.record(user, source, RESET_ACTION, f"connector:{connector.name}")
