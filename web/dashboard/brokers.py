"""The Kafka cluster's brokers (AdminClient describe_cluster and the topics' metadata): each broker with its address,
rack, whether it is the controller, and the topic partitions it leads and holds a replica of. Sizes on disk need
AdminClient.describe_log_dirs, which the installed confluent-kafka may not have (`LOG_DIRS_AVAILABLE`)."""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

import confluent_kafka
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from django.conf import settings

from web.dashboard.topic_browser import KafkaUnavailable

TIMEOUT_S = 5.0
LOG_DIRS_AVAILABLE = hasattr(AdminClient, "describe_log_dirs")
CLIENT_VERSION = confluent_kafka.version()[0]


@dataclass
class HostedPartition:
    topic: str
    partition: int
    leader: bool
    in_sync: bool


@dataclass
class Broker:
    id: int
    host: str
    port: int
    rack: str | None
    controller: bool
    partitions: list[HostedPartition] = field(default_factory=list)

    @property
    def leading(self) -> int:
        return sum(1 for p in self.partitions if p.leader)

    @property
    def out_of_sync(self) -> int:
        return sum(1 for p in self.partitions if not p.in_sync)


def brokers() -> tuple[str, list[Broker]]:
    """The cluster id and its brokers, each with the partitions it hosts (internal topics included)."""
    admin = AdminClient({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS, "socket.timeout.ms": 3000})
    try:
        cluster = admin.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S + 1)
        metadata = admin.list_topics(timeout=TIMEOUT_S)
    except (KafkaException, FutureTimeout) as error:
        raise KafkaUnavailable(str(error)) from None
    controller = cluster.controller.id if cluster.controller is not None else None
    found = {node.id: Broker(node.id, node.host, node.port, node.rack, node.id == controller)
             for node in cluster.nodes}
    for name, topic in sorted(metadata.topics.items()):
        if topic.error is not None:
            continue
        for number, partition in sorted(topic.partitions.items()):
            for replica in partition.replicas:
                if replica in found:
                    found[replica].partitions.append(
                        HostedPartition(name, number, partition.leader == replica, replica in partition.isrs))
    return cluster.cluster_id, [found[key] for key in sorted(found)]
