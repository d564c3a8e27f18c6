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
