"""/connect/ against the real Kafka, driven by a Kafka Connect REST client library (kafka-connect-py) over HTTP as
tools call it: the cluster id on GET /, KIP-558 active topics and their reset, restarting one task, validate."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from django.conf import settings
from django.contrib.auth.models import Group
from django.utils import timezone
from kafka_connect import KafkaConnect
from requests import HTTPError

from tests.api_support import create_connector, sample_config
from web.connectors.models import ControlRequest, ReplicaSetState

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
PASSWORD = "connect-client-pw"  # noqa: S105 - a test user's


@pytest.fixture
def client(live_server, django_user_model, stack, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    user = django_user_model.objects.create_user("connect-client", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    return KafkaConnect(url=f"{live_server.url}/connect", auth=f"connect-client:{PASSWORD}")


def create_topics(*names: str) -> None:
    admin = AdminClient({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS})
    for future in admin.create_topics([NewTopic(name, 2, 1) for name in names]).values():
        future.result(30)


def produce(topic: str) -> int:
    """Writes one record; its timestamp (ms) as Kafka stored it."""
    reports = []
    producer = Producer({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS})
    producer.produce(topic, b"{}", b"{}", on_delivery=lambda error, message: reports.append((error, message)))
    assert producer.flush(30) == 0
    error, message = reports[0]
    assert error is None, error
    return message.timestamp()[1]


def after(stamp_ms: int) -> None:
    """Returns once the clock has passed `stamp_ms`, so a reset made now is later than that record."""
    while time.time() * 1000 <= stamp_ms + 1:
        time.sleep(0.002)


def test_cluster_id_is_the_kafka_clusters(client):
    consumer = Consumer({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS, "group.id": "cluster-id-check"})
    try:
        expected = consumer.list_topics(timeout=10).cluster_id
    finally:
        consumer.close()
    info = client.get_cluster_info()
    assert expected and info["kafka_cluster_id"] == expected
    assert set(info) == {"version", "commit", "kafka_cluster_id"}


def test_active_topics_and_their_reset(client, unique_name):
    prefix = unique_name.replace("-", "")[-30:]
    create_connector(unique_name[-40:].strip("-"), **{"topic.prefix": prefix})
    name = unique_name[-40:].strip("-")
    assert client.list_connector_topics(name) == {name: {"topics": []}}

    orders, lines, foreign = f"{prefix}.shop.orders", f"{prefix}.shop.lines", f"other{prefix}.shop.orders"
    create_topics(orders, lines, foreign, f"{prefix}.shop.empty")
    assert client.list_connector_topics(name) == {name: {"topics": []}}  # topics without records are not active
    produce(orders)
    produce(foreign)  # not a topic of this connector
    stamp = produce(lines)
    assert client.list_connector_topics(name) == {name: {"topics": [lines, orders]}}

    after(stamp)
    assert client.reset_connector_topics(name) is None  # 202, no body
    assert client.list_connector_topics(name) == {name: {"topics": []}}
    produce(orders)  # written after the reset: active again
    assert client.list_connector_topics(name) == {name: {"topics": [orders]}}

    with pytest.raises(HTTPError) as missing:
        client.list_connector_topics("no-such-connector")
    assert missing.value.response.status_code == 404
    assert missing.value.response.json() == {"error_code": 404, "message": "Connector no-such-connector not found"}


def test_restart_a_task_and_validate_through_the_client(client, no_redis):
    connector = create_connector("client-orders")
    ReplicaSetState.objects.create(connector=connector, replica_set="rs0", phase="streaming", since=timezone.now(),
                                   heartbeat_at=timezone.now())
    assert client.restart_connector_task("client-orders", 0) is None
    assert ControlRequest.objects.get(connector=connector, command="restart").replica_set == "rs0"
    with pytest.raises(HTTPError) as missing:
        client.restart_connector_task("client-orders", 3)
    assert missing.value.response.status_code == 404

    result = client.validate_connector_config("MongoDbConnector", {**sample_config("x"), "snapshot.mode": "bad"})
    assert result["error_count"] == 1
    by_name = {entry["definition"]["name"]: entry for entry in result["configs"]}
    assert by_name["snapshot.mode"]["value"]["errors"]
    assert "initial" in by_name["snapshot.mode"]["value"]["recommended_values"]
