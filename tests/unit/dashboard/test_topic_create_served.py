"""Creating a topic answers once the brokers serve it, not when the controller has it: Kafka's metadata shows a new
topic a little after CreateTopics returns, and a read in between found no topic."""

from __future__ import annotations

import time
from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from web.dashboard import topic_admin, topic_browser

pytestmark = pytest.mark.django_db
LAG_S = 0.3


class LateMetadataAdmin:
    """An AdminClient whose metadata shows a created topic's partitions, with leaders, LAG_S after the create."""

    def __init__(self):
        self.created_at = None

    def create_topics(self, topics, request_timeout):
        self.created_at = time.monotonic()
        done = Future()
        done.set_result(None)
        return {topic.topic: done for topic in topics}

    def served(self) -> bool:
        return self.created_at is not None and time.monotonic() - self.created_at >= LAG_S

    def list_topics(self, topic, timeout):
        if not self.served():
            return SimpleNamespace(topics={})
        partitions = {index: SimpleNamespace(leader=1) for index in range(3)}
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions=partitions)})


def test_create_answers_once_the_brokers_serve_the_topic(monkeypatch, django_user_model):
    admin = LateMetadataAdmin()
    monkeypatch.setattr(topic_admin, "admin_client", lambda: admin)
    user = django_user_model.objects.create_user("op", password="pw")
    topic_admin.create_topic("orders.new", 3, 1, {}, user=user, source="api")
    assert admin.served()


def test_a_topic_never_served_is_a_sentence(monkeypatch, django_user_model):
    admin = LateMetadataAdmin()
    admin.served = lambda: False
    monkeypatch.setattr(topic_admin, "admin_client", lambda: admin)
    monkeypatch.setattr(topic_admin, "TIMEOUT_S", 0.5)
    user = django_user_model.objects.create_user("op", password="pw")
    with pytest.raises(topic_browser.KafkaUnavailable, match="created topic orders.new, but its brokers did not"):
        topic_admin.create_topic("orders.new", 3, 1, {}, user=user, source="api")
