"""Producing a message into a topic through POST /api/topics/<topic>/messages/ against the real Kafka: the message
is written (key, value, headers) and audited; viewers are refused; Kafka's internal topics and the connectors' offsets
and transaction topics are refused; an unknown topic is a 404 and is not created; sizes are bounded."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.api_support import client_for, create_connector, make_user, no_redis  # noqa: F401 - a fixture
from tests.topic_cleanup import tagged_suffix
from web.connectors.models import AuditEntry
from web.dashboard import topic_produce

pytestmark = [pytest.mark.integration, pytest.mark.django_db, pytest.mark.usefixtures("no_redis")]


@pytest.fixture
def topic(stack):
    name = f"produce.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})  # referenced until the answer
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


def read_one(bootstrap: str, topic: str, offset: int):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    try:
        consumer.assign([TopicPartition(topic, 0, offset)])
        for _ in range(100):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                return message
        raise AssertionError(f"no message at {topic}/0/{offset}")
    finally:
        consumer.close()


def test_operator_produces_a_message_that_is_written_and_audited(django_user_model, stack, topic):
    operator = make_user(django_user_model, "operator")
    answer = client_for(operator).post(f"/api/topics/{topic}/messages/", {
        "key": '{"id": 7}', "value": '{"status": "paid"}', "headers": [{"name": "trace", "value": "t-7"}]},
        format="json")
    assert answer.status_code == 201, answer.content
    assert answer.json() == {"topic": topic, "partition": 0, "offset": 0}
    message = read_one(stack.kafka_bootstrap, topic, 0)
    assert (message.key(), message.value(), message.headers()) == (b'{"id": 7}', b'{"status": "paid"}',
                                                                   [("trace", b"t-7")])
    entry = AuditEntry.objects.get(action="topic.produce", target=f"topic:{topic}")
    assert entry.username == "user-operator" and entry.source == "api"
    assert entry.after == {"partition": 0, "offset": 0, "key_bytes": 9, "value_bytes": 18, "headers": ["trace"]}


def test_a_tombstone_has_no_value(django_user_model, stack, topic):
    answer = client_for(make_user(django_user_model, "admin")).post(
        f"/api/topics/{topic}/messages/", {"key": "k", "value": None}, format="json")
    assert answer.status_code == 201, answer.content
    assert read_one(stack.kafka_bootstrap, topic, 0).value() is None


def test_viewer_is_refused(django_user_model, stack, topic):
    answer = client_for(make_user(django_user_model, "viewer")).post(
        f"/api/topics/{topic}/messages/", {"value": "x"}, format="json")
    assert answer.status_code == 403
    assert not AuditEntry.objects.filter(action="topic.produce").exists()


@pytest.mark.parametrize("name", ["__consumer_offsets", "__transaction_state", "cdc.offsets", "own.offsets",
                                  "shop.transaction"])
def test_the_platforms_own_topics_are_refused(django_user_model, stack, name):
    create_connector("shop", **{"offset.storage.topic": "own.offsets", "provide.transaction.metadata": "true"})
    answer = client_for(make_user(django_user_model, "operator")).post(
        f"/api/topics/{name}/messages/", {"value": "x"}, format="json")
    assert answer.status_code == 400, answer.content
    assert "only" in answer.json()["detail"] and name in answer.json()["detail"]
    assert not AuditEntry.objects.filter(action="topic.produce").exists()


def test_unknown_topic_is_404_and_not_created(django_user_model, stack):
    name = f"produce.missing.{tagged_suffix()}"
    answer = client_for(make_user(django_user_model, "operator")).post(
        f"/api/topics/{name}/messages/", {"value": "x"}, format="json")
    assert answer.status_code == 404
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    metadata = admin.list_topics(timeout=10)
    assert name not in metadata.topics


def test_sizes_are_bounded(django_user_model, stack, topic):
    client = client_for(make_user(django_user_model, "operator"))
    big = client.post(f"/api/topics/{topic}/messages/", {"value": "x" * (topic_produce.MAX_VALUE_BYTES + 1)},
                      format="json")
    assert big.status_code == 400 and "at most" in big.json()["detail"]
    many = client.post(f"/api/topics/{topic}/messages/",
                       {"value": "x", "headers": [{"name": f"h{i}", "value": ""} for i in range(40)]}, format="json")
    assert many.status_code == 400
