"""Consumer groups through /api/consumer-groups/ against the real Kafka: listed; a group's offsets on a topic reset
to the earliest or latest offsets or to a time, and the group deleted, only while it has no active member; viewers
refused; each write audited."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.api_support import client_for, make_user, no_redis  # noqa: F401 - a fixture
from tests.topic_cleanup import tagged_suffix
from web.connectors.models import AuditEntry

pytestmark = [pytest.mark.integration, pytest.mark.django_db, pytest.mark.usefixtures("no_redis")]
BASE_MS = 1_700_000_000_000


@pytest.fixture
def topic_and_group(stack):
    """A topic of 10 messages stamped a second apart, and a group committed at offset 5 with no member left."""
    name = f"groups.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap})
    for i in range(10):
        producer.produce(name, b"%d" % i, timestamp=BASE_MS + i * 1000)
    producer.flush(30)
    group = f"readers-{name}"
    consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(name, 0, 5)], asynchronous=False)
    consumer.close()
    return name, group


def committed(stack, topic: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": group})
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    finally:
        consumer.close()


def test_reset_to_earliest_latest_and_a_time_then_delete(django_user_model, stack, topic_and_group):
    topic, group = topic_and_group
    client = client_for(make_user(django_user_model, "operator"))
    listed = client.get("/api/consumer-groups/")
    assert listed.status_code == 200
    assert group in [row["group"] for row in listed.json()["results"]]

    url = f"/api/consumer-groups/{group}/reset/"
    earliest = client.post(url, {"topic": topic, "to": "earliest"}, format="json")
    assert earliest.status_code == 200, earliest.content
    assert earliest.json() == {"group": group, "topic": topic, "offsets": {"0": 0}}
    assert committed(stack, topic, group) == 0
    assert client.post(url, {"topic": topic, "to": "latest"}, format="json").json()["offsets"] == {"0": 10}
    assert committed(stack, topic, group) == 10
    at_time = client.post(url, {"topic": topic, "to": "timestamp", "timestamp_ms": BASE_MS + 3500}, format="json")
    assert at_time.json()["offsets"] == {"0": 4}
    assert committed(stack, topic, group) == 4
    assert client.post(url, {"topic": topic, "to": "timestamp"}, format="json").status_code == 400
    entry = AuditEntry.objects.filter(action="group.reset", target=f"group:{group}").latest("id")
    assert entry.after == {"topic": topic, "to": "timestamp", "timestamp_ms": BASE_MS + 3500, "offsets": {"0": 4}}

    assert client.delete(f"/api/consumer-groups/{group}/").status_code == 204
    assert group not in [row["group"] for row in client.get("/api/consumer-groups/").json()["results"]]
    assert AuditEntry.objects.filter(action="group.delete", target=f"group:{group}").exists()


def test_a_group_with_an_active_member_is_not_touched(django_user_model, stack, topic_and_group):
    topic, group = topic_and_group
    member = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": group, "enable.auto.commit": False,
                       "session.timeout.ms": 30000})
    try:
        member.subscribe([topic])
        client = client_for(make_user(django_user_model, "operator"))
        answer = None
        for _ in range(60):  # gated on the member having joined (Kafka then lists it), not on time
            member.poll(0.5)
            answer = client.post(f"/api/consumer-groups/{group}/reset/", {"topic": topic, "to": "earliest"},
                                 format="json")
            if answer.status_code == 409:
                break
        assert answer.status_code == 409, answer.content
        assert "active member" in answer.json()["detail"]
        assert client.delete(f"/api/consumer-groups/{group}/").status_code == 409
    finally:
        member.close()
    assert committed(stack, topic, group) == 5


def test_viewer_lists_but_changes_nothing(django_user_model, stack, topic_and_group):
    topic, group = topic_and_group
    client = client_for(make_user(django_user_model, "viewer"))
    assert client.get("/api/consumer-groups/").status_code == 200
    assert client.post(f"/api/consumer-groups/{group}/reset/", {"topic": topic, "to": "earliest"},
                       format="json").status_code == 403
    assert client.delete(f"/api/consumer-groups/{group}/").status_code == 403
    assert committed(stack, topic, group) == 5


def test_unknown_group_and_topic(django_user_model, stack, topic_and_group):
    topic, _ = topic_and_group
    client = client_for(make_user(django_user_model, "operator"))
    assert client.delete(f"/api/consumer-groups/no-such-group-{tagged_suffix()}/").status_code == 404
    answer = client.post(f"/api/consumer-groups/no-such-{tagged_suffix()}/reset/",
                         {"topic": f"{topic}.missing", "to": "earliest"}, format="json")
    assert answer.status_code == 404


def test_the_consumer_groups_page_lists_them(client, django_user_model, stack, topic_and_group):
    _, group = topic_and_group
    client.force_login(make_user(django_user_model, "viewer"))
    page = client.get("/consumer-groups/").content.decode()
    row = f'<tr data-group="{group}"><th scope="row"><code>{group}</code></th><td data-label="State">empty</td>'
    assert row in page
