"""Kafka as a 3-broker KRaft cluster (devstack's `--brokers 3` form, a private one): the platform's topics are
created replicated 3 times with min.insync.replicas=2, and Kafka's transaction log too."""

from __future__ import annotations

import pymongo
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from connectors.kafka.topics import BROKER_DEFAULT, TopicSpec, for_cluster
from devstack import kafka as devstack_kafka
from devstack.private_kafka import PrivateKafka
from tests.integration.pipeline_harness import RunningConnector, connector_config, wait_for_events

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PORTS = range(45040, 45100)  # this suite's own; the shared stack and other suites use others


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    kafka = PrivateKafka(tmp_path_factory.mktemp("kafka-cluster"), PORTS, brokers=3).start()
    try:
        yield kafka
    finally:
        kafka.stop()


def _replication(admin: AdminClient, topics: list[str]) -> dict[str, tuple[int, str]]:
    """(replicas of partition 0, min.insync.replicas) per topic."""
    metadata = admin.list_topics(timeout=10).topics
    resources = [ConfigResource(ResourceType.TOPIC, name) for name in topics]
    configs = {r.name: f.result(timeout=10) for r, f in admin.describe_configs(resources).items()}
    return {name: (len(metadata[name].partitions[0].replicas), configs[name]["min.insync.replicas"].value)
            for name in topics}


def test_the_cluster_has_three_brokers(cluster):
    assert devstack_kafka.live_brokers(servers=cluster.bootstrap) == 3
    assert len({cluster.node_pid(n) for n in (1, 2, 3)}) == 3  # three JVMs


def test_a_pipelines_topics_are_replicated_three_times_with_two_in_sync(cluster, mongo_rs, unique_name):
    name = "rf" + unique_name.replace("-", "")[-12:]
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="never",
                              heartbeat__interval__ms=200, provide__transaction__metadata="true")
    running = RunningConnector(config, cluster.bootstrap).start()
    try:
        running.wait_streaming(timeout=90)
        client = pymongo.MongoClient(mongo_rs.uri)
        with client.start_session() as session, session.start_transaction():  # BEGIN/END on the transaction topic
            client[name].docs.insert_many([{"_id": i} for i in range(5)], session=session)
        wait_for_events(cluster.bootstrap, f"{name}.{name}.docs", 5, timeout=90)
    finally:
        running.stop.set()
        running.finish(timeout=60)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    # data, offsets, heartbeat and transaction topics, all created by the platform through AdminClient
    topics = [f"{name}.{name}.docs", f"{name}.offsets", f"__debezium-heartbeat.{name}", f"{name}.transaction"]
    assert set(topics) <= set(admin.list_topics(timeout=10).topics)
    replication = _replication(admin, [*topics, "__transaction_state"])
    assert replication == {topic: (3, "2") for topic in replication}, replication


def test_a_topic_given_its_own_replication_factor_or_on_a_small_cluster_keeps_it():
    spec = TopicSpec("t", 1, BROKER_DEFAULT, {"cleanup.policy": "compact"})
    assert for_cluster(spec, 1) == spec
    assert for_cluster(TopicSpec("t", 1, 2), 3) == TopicSpec("t", 1, 2)
    assert for_cluster(spec, 3) == TopicSpec("t", 1, 3, {"min.insync.replicas": "2", "cleanup.policy": "compact"})
    assert for_cluster(TopicSpec("t", config={"min.insync.replicas": "3"}), 5).config["min.insync.replicas"] == "3"
