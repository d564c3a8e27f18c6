"""Creating and deleting topics and changing a topic's configuration (operator), through confluent-kafka's
AdminClient, each audited (`topic.create`, `topic.delete`, `topic.config`). The platform's own topics
(topic_produce.protected_reason) are neither deleted nor reconfigured here, and a topic a stored connector writes to
is not deleted: the connector would recreate it or fail."""

from __future__ import annotations

import re
import time
from concurrent.futures import TimeoutError as FutureTimeout

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType
from django.conf import settings

from web.connectors import audit
from web.connectors.models import Connector
from web.dashboard import topic_browser
from web.dashboard.topic_produce import Refused, protected_reason
from web.dashboard.topics import topic_matcher

MAX_PARTITIONS = 1000
MAX_REPLICATION = 16
MAX_CONFIG_ENTRIES = 50
TIMEOUT_S = 10.0
PROPERTY = r"^[a-z0-9.]{1,100}$"


class Conflict(Refused):
    """Refused because of the topic's use (a connector writes to it)."""


def admin_client() -> AdminClient:
    """The platform's Kafka, for one administration call."""
    return AdminClient({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS, "socket.timeout.ms": 3000})


def wait_for(future):
    """A call's result; Kafka's refusal as Refused, its silence as KafkaUnavailable."""
    try:
        return future.result(TIMEOUT_S + 2)
    except KafkaException as error:
        raise Refused(str(error.args[0].str() if error.args and hasattr(error.args[0], "str") else error)) from None
    except FutureTimeout:
        raise topic_browser.KafkaUnavailable(f"Kafka did not answer within {TIMEOUT_S:.0f} s.") from None


def _check_properties(config: dict[str, str | None]) -> None:
    if len(config) > MAX_CONFIG_ENTRIES:
        raise Refused(f"{len(config)} properties given; change at most {MAX_CONFIG_ENTRIES} at a time.")
    for name, value in config.items():
        if not re.match(PROPERTY, name):
            raise Refused(f"{name[:100]} is not a topic property name (lower-case words joined by dots).")
        if value is not None and len(value) > 1000:
            raise Refused(f"The value of {name} is longer than 1000 characters.")


def writers(topic: str) -> list[str]:
    """The stored connectors that write to `topic`."""
    return [connector.name for connector in Connector.objects.order_by("name") if topic_matcher(connector)(topic)]


def create_topic(name: str, partitions: int, replication_factor: int, config: dict[str, str], *, user,
                 source: str) -> None:
    if not topic_browser.LEGAL_TOPIC.match(name):
        raise Refused(f"{name[:250]} is not a legal topic name: 1-249 letters, digits, dots, underscores, hyphens.")
    reason = protected_reason(name)
    if reason:
        raise Refused(f"{name} is {reason}; the platform creates it itself.")
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise Refused(f"partitions must be from 1 to {MAX_PARTITIONS}.")
    if not 1 <= replication_factor <= MAX_REPLICATION:
        raise Refused(f"replication_factor must be from 1 to {MAX_REPLICATION}.")
    _check_properties(config)
    admin = admin_client()
    futures = admin.create_topics([NewTopic(name, partitions, replication_factor, config=dict(config))],
                                  request_timeout=TIMEOUT_S)
    wait_for(futures[name])
    _wait_until_served(admin, name, partitions)
    audit.record(user, source, "topic.create", f"topic:{name}",
                 after={"partitions": partitions, "replication_factor": replication_factor, "config": config})


def _wait_until_served(admin: AdminClient, name: str, partitions: int) -> None:
    """Until the brokers' metadata shows every partition of the new topic with a leader: Kafka answers a create once
    the controller has it, and the brokers learn of it a little later (a read right after would find no topic)."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            found = admin.list_topics(topic=name, timeout=TIMEOUT_S).topics.get(name)
        except KafkaException:
            found = None
        if (found is not None and found.error is None and len(found.partitions) == partitions
                and all(partition.leader >= 0 for partition in found.partitions.values())):
            return
        time.sleep(0.1)
    raise topic_browser.KafkaUnavailable(f"Kafka created topic {name}, but its brokers did not serve it within "
                                         f"{TIMEOUT_S:.0f} s.")


def delete_topic(name: str, *, user, source: str) -> None:
    topic_browser.partitions(name)  # UnknownTopic when there is none
    reason = protected_reason(name)
    if reason:
        raise Refused(f"{name} is {reason}; deleting it would lose the platform's state.")
    using = writers(name)
    if using:
        raise Conflict(f"Connector {', '.join(using)} writes to {name}: delete the connector first (a running one "
                       "would recreate the topic or fail).")
    before = {row.name: row.value for row in topic_browser.config(name) if not row.default}
    admin = admin_client()
    wait_for(admin.delete_topics([name], request_timeout=TIMEOUT_S)[name])
    audit.record(user, source, "topic.delete", f"topic:{name}", before={"config": before})


def alter_config(name: str, changes: dict[str, str | None], *, user, source: str) -> list[topic_browser.ConfigRow]:
    """Sets each property to its value, or back to its default for None (IncrementalAlterConfigs); the new rows."""
    topic_browser.partitions(name)
    reason = protected_reason(name)
    if reason:
        raise Refused(f"{name} is {reason}; its configuration is the platform's.")
    if not changes:
        raise Refused("No property to change.")
    _check_properties(changes)
    rows = {row.name: row for row in topic_browser.config(name)}
    unknown = sorted(set(changes) - set(rows))
    if unknown:
        raise Refused(f"{unknown[0]} is not a property of topic {name}.")
    entries = [ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET if value is not None
                           else AlterConfigOpType.DELETE) for key, value in changes.items()]
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=entries)
    admin = admin_client()
    wait_for(admin.incremental_alter_configs([resource], request_timeout=TIMEOUT_S)[resource])
    after = {row.name: row for row in topic_browser.config(name)}
    audit.record(user, source, "topic.config", f"topic:{name}",
                 before={key: rows[key].value for key in changes}, after={key: after[key].value for key in changes})
    return sorted(after.values(), key=lambda row: (row.default, row.name))
