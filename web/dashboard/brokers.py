"""The Kafka cluster's brokers (AdminClient describe_cluster and the topics' metadata): each broker with its address,
rack, whether it is the controller, and the topic partitions it leads and holds a replica of, with their sizes on
disk. confluent-kafka has no DescribeLogDirs request, so the sizes are asked with kafka-python's admin client, within
the page's time bound; without an answer the page lists the partitions and says why their sizes are missing."""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from django.conf import settings

from web.dashboard.topic_browser import KafkaUnavailable

TIMEOUT_S = 5.0


@dataclass
class HostedPartition:
    topic: str
    partition: int
    leader: bool
    in_sync: bool
    size_bytes: int | None = None  # on this broker's disk; None when the broker did not say


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

    @property
    def size_bytes(self) -> int | None:
        sizes = [p.size_bytes for p in self.partitions if p.size_bytes is not None]
        return sum(sizes) if sizes else None

    def topic_sizes(self) -> list[tuple[str, int]]:
        """Bytes on this broker's disk per topic, largest first."""
        totals: dict[str, int] = {}
        for p in self.partitions:
            if p.size_bytes is not None:
                totals[p.topic] = totals.get(p.topic, 0) + p.size_bytes
        return sorted(totals.items(), key=lambda item: (-item[1], item[0]))


def sizes_on_disk() -> dict[tuple[int, str, int], int]:
    """(broker, topic, partition) -> bytes in the broker's log directories (DescribeLogDirs, every broker);
    KafkaUnavailable when the brokers do not answer within the page's bound."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    timeout_ms = int(TIMEOUT_S * 1000)
    try:  # asked only after describe_cluster answered, so the client's bootstrap (its IO thread) rarely fails
        admin = KafkaAdminClient(bootstrap_servers=settings.KAFKA_BOOTSTRAP_SERVERS.split(","),
                                 client_id="cdc-dashboard-brokers", request_timeout_ms=timeout_ms,
                                 bootstrap_timeout_ms=timeout_ms)
    except KafkaError as error:
        raise KafkaUnavailable(str(error)) from None
    try:
        answers = admin.describe_log_dirs()
    except KafkaError as error:
        raise KafkaUnavailable(str(error)) from None
    finally:
        admin.close()
    sizes: dict[tuple[int, str, int], int] = {}
    for answer in answers:
        for log_dir in answer["log_dirs"]:
            if log_dir.get("error_code"):
                continue  # an offline log directory holds nothing this broker serves
            for topic in log_dir.get("topics", []):
                for partition in topic.get("partitions", []):
                    if partition.get("is_future_key"):
                        continue  # a copy being moved between directories, not the replica itself
                    key = (answer["broker"], topic["name"], partition["partition_index"])
                    sizes[key] = sizes.get(key, 0) + partition["partition_size"]
    return sizes


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


def with_sizes(found: list[Broker]) -> str | None:
    """Fills in each hosted partition's size on disk; returns why the sizes are missing, or None."""
    try:
        sizes = sizes_on_disk()
    except KafkaUnavailable as problem:
        return str(problem)
    for broker in found:
        for partition in broker.partitions:
            partition.size_bytes = sizes.get((broker.id, partition.topic, partition.partition))
    return None
