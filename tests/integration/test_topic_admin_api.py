"""Topic administration through /api/topics/ against the real Kafka: create a topic, change and reset its
configuration (sources by name), delete it; each audited; viewers refused; the platform's own topics and a topic a
connector writes to are not deleted."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.api_support import client_for, create_connector, make_user, no_redis  # noqa: F401 - a fixture
from tests.topic_cleanup import tagged_suffix
from web.connectors.models import AuditEntry

pytestmark = [pytest.mark.integration, pytest.mark.django_db, pytest.mark.usefixtures("no_redis")]


def topics(stack) -> set[str]:
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    return set(admin.list_topics(timeout=10).topics)


def rows_by_name(answer) -> dict:
    return {row["name"]: row for row in answer.json()}


def test_create_configure_and_delete_a_topic(django_user_model, stack):
    client = client_for(make_user(django_user_model, "operator"))
    name = f"admin.api.{tagged_suffix()}"
    created = client.post("/api/topics/", {"name": name, "partitions": 3, "config": {"retention.ms": "3600000"}},
                          format="json")
    assert created.status_code == 201, created.content
    assert name in topics(stack)

    config = client.get(f"/api/topics/{name}/config/")
    assert config.status_code == 200
    retention = rows_by_name(config)["retention.ms"]
    assert (retention["value"], retention["source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert rows_by_name(config)["segment.bytes"]["source"] == "DEFAULT_CONFIG"

    changed = client.patch(f"/api/topics/{name}/config/", {"set": {"cleanup.policy": "compact"},
                                                            "reset": ["retention.ms"]}, format="json")
    assert changed.status_code == 200, changed.content
    rows = rows_by_name(changed)
    assert (rows["cleanup.policy"]["value"], rows["cleanup.policy"]["source"]) == ("compact", "DYNAMIC_TOPIC_CONFIG")
    assert rows["retention.ms"]["source"] != "DYNAMIC_TOPIC_CONFIG"
    entry = AuditEntry.objects.get(action="topic.config", target=f"topic:{name}")
    assert entry.before == {"cleanup.policy": "delete", "retention.ms": "3600000"}
    assert entry.after["cleanup.policy"] == "compact"

    assert client.patch(f"/api/topics/{name}/config/", {"set": {"no.such.property": "1"}},
                        format="json").status_code == 400
    assert client.delete(f"/api/topics/{name}/").status_code == 204
    assert name not in topics(stack)
    assert [entry.action for entry in AuditEntry.objects.filter(target=f"topic:{name}").order_by("id")] == [
        "topic.create", "topic.config", "topic.delete"]
    assert client.delete(f"/api/topics/{name}/").status_code == 404


def test_viewer_reads_but_changes_nothing(django_user_model, stack):
    name = f"admin.viewer.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    client = client_for(make_user(django_user_model, "viewer"))
    assert client.get(f"/api/topics/{name}/config/").status_code == 200
    assert client.post("/api/topics/", {"name": f"{name}.x"}, format="json").status_code == 403
    assert client.patch(f"/api/topics/{name}/config/", {"set": {"retention.ms": "1"}},
                        format="json").status_code == 403
    assert client.delete(f"/api/topics/{name}/").status_code == 403
    assert name in topics(stack) and f"{name}.x" not in topics(stack)


def test_a_topic_a_connector_writes_to_is_not_deleted(django_user_model, stack):
    prefix = f"admincon{tagged_suffix().replace('.', '')}"
    name = f"{prefix}.inventory.orders"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    create_connector("writer", **{"topic.prefix": prefix})
    answer = client_for(make_user(django_user_model, "operator")).delete(f"/api/topics/{name}/")
    assert answer.status_code == 409
    assert "Connector writer writes to" in answer.json()["detail"]
    assert name in topics(stack)


@pytest.mark.parametrize("name", ["__consumer_offsets", "cdc.offsets"])
def test_the_platforms_own_topics_are_not_deleted_or_reconfigured(django_user_model, stack, name):
    client = client_for(make_user(django_user_model, "operator"))
    if name not in topics(stack):
        admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
        admin.create_topics([NewTopic(name, 1, 1, config={"cleanup.policy": "compact"})])[name].result(30)
    assert client.delete(f"/api/topics/{name}/").status_code == 400
    assert client.patch(f"/api/topics/{name}/config/", {"set": {"retention.ms": "1"}},
                        format="json").status_code == 400
    assert client.post("/api/topics/", {"name": "__mine"}, format="json").status_code == 400
    assert name in topics(stack)
