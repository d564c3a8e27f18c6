"""The Brokers page against the real Kafka: each broker with its address, the controller marked, and the topic
partitions it hosts; without AdminClient.describe_log_dirs in the installed confluent-kafka it says sizes on disk are
not shown."""

from __future__ import annotations

import pytest
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
    assert ('id="no-log-dirs"' in page) == (not hasattr(AdminClient, "describe_log_dirs"))


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
