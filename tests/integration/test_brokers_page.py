"""The Brokers page against the real Kafka: each broker with its address, the controller marked, and the topic
partitions it hosts with their sizes on disk, which must equal the bytes of the partitions' log segments in the
broker's data directory; when the brokers cannot be asked for them, the page says so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.api_support import make_user, no_redis  # noqa: F401 - a fixture
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.integration, pytest.mark.django_db, pytest.mark.usefixtures("no_redis")]


def test_brokers_with_their_partitions(client, django_user_model, stack):
    name = f"brokers.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
    client.force_login(make_user(django_user_model, "viewer"))
    answer = client.get("/brokers/")
    assert answer.status_code == 200
    page = answer.content.decode()
    cluster = admin.describe_cluster(request_timeout=10).result(15)
    for node in cluster.nodes:
        assert f'data-broker="{node.id}"' in page and f"{node.host}:{node.port}" in page
    assert f"Broker {cluster.controller.id} <span class=\"badge\">controller</span>" in page
    for partition in (0, 1):
        assert f'<tr data-topic="{name}" data-partition="{partition}">' in page
    assert 'id="no-log-dirs"' not in page


def partition_sizes(page: str, topic: str) -> dict[int, int]:
    rows = re.findall(rf'<tr data-topic="{re.escape(topic)}" data-partition="(\d+)">.*?data-bytes="(\d+)"', page,
                      re.DOTALL)
    return {int(partition): int(size) for partition, size in rows}


def test_sizes_on_disk_are_the_partitions_log_segments(client, django_user_model, stack):
    from devstack import kafka as devstack_kafka

    data = Path(devstack_kafka.HOME) / "data"
    if stack.kafka_bootstrap != devstack_kafka.bootstrap() or not data.is_dir():
        pytest.skip("needs the devstack's own Kafka, whose data directory the test reads")
    name = f"brokers.sizes.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "linger.ms": 0})
    for n in range(300):  # partition 0 gets three times partition 1's bytes
        producer.produce(name, value=b"x" * (3000 if n % 2 == 0 else 1000), partition=n % 2)
    assert producer.flush(30) == 0
    client.force_login(make_user(django_user_model, "viewer"))
    page = client.get("/brokers/").content.decode()
    shown = partition_sizes(page, name)
    on_disk = {partition: sum(f.stat().st_size for f in (data / f"{name}-{partition}").glob("*.log"))
               for partition in (0, 1)}
    assert shown == on_disk and on_disk[0] > 2 * on_disk[1] > 0, (shown, on_disk)
    topic_row = re.search(rf'<tr data-topic="{re.escape(name)}"><th scope="row">.*?data-bytes="(\d+)"', page,
                          re.DOTALL)
    assert topic_row and int(topic_row[1]) == on_disk[0] + on_disk[1]


def test_a_broker_that_cannot_be_asked_for_sizes_leaves_the_partitions_listed(client, django_user_model, stack,
                                                                             monkeypatch):
    from web.dashboard import brokers
    from web.dashboard.topic_browser import KafkaUnavailable

    def refused():
        raise KafkaUnavailable("DescribeLogDirs timed out")

    monkeypatch.setattr(brokers, "sizes_on_disk", refused)
    client.force_login(make_user(django_user_model, "viewer"))
    page = client.get("/brokers/").content.decode()
    assert 'id="no-log-dirs"' in page and "DescribeLogDirs timed out" in page
    assert 'data-broker="' in page and "<tr data-topic=" in page


def test_brokers_page_needs_a_role(client, django_user_model, stack):
    client.force_login(make_user(django_user_model, "none"))
    assert client.get("/brokers/").status_code == 403


def test_no_connector_secret_on_the_kafka_pages(client, django_user_model, stack):
    """The topic, broker and consumer-group pages and the topic configuration API show Kafka's data only: a stored
    connector's password never appears, not even on the page of the topic it writes to."""
    from tests.api_support import SECRET, client_for, create_connector

    prefix = f"secretcheck{tagged_suffix().replace('.', '')}"
    name = f"{prefix}.inventory.orders"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    create_connector("secretive", **{"topic.prefix": prefix})
    operator = make_user(django_user_model, "operator")
    client.force_login(operator)
    for url in (f"/topics/{name}/", f"/connectors/secretive/topics/{name}/", "/topics/", "/brokers/",
                "/consumer-groups/"):
        answer = client.get(url)
        assert answer.status_code == 200, url
        assert SECRET not in answer.content.decode(), url
    assert SECRET not in client_for(operator).get(f"/api/topics/{name}/config/").content.decode()
    topic_page = client.get(f"/topics/{name}/").content.decode()
    assert "Connector secretive writes to this topic" in topic_page and "Delete topic</button>" not in topic_page
