"""The dashboard's live feed end to end through the real ASGI application and channels-redis: a viewer gets the
stored reports, then what workers publish to the `metrics` group (only its connector's when it asked for one);
anonymous and role-less users are refused before the handshake completes."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group
from django.utils import timezone

from tests.integration.test_websocket_roundtrip import ALLOWED_ORIGIN, session_cookie_for
from web.connectors.models import Connector, ReplicaSetState
from web.dashboard.consumers import FORBIDDEN, UNAUTHENTICATED
from workers.publish import METRICS_GROUP

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def user_with(django_user_model, name, role=None):
    user = django_user_model.objects.create_user(name)
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


async def connect(path, headers):
    from cdcplatform.asgi import application

    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect(timeout=10)
    return communicator, connected, code


def test_viewer_gets_stored_then_published_reports(stack, django_user_model):
    viewer = user_with(django_user_model, "vera", "viewer")
    connector = Connector.objects.create(name="feed-a", topic_prefix="feed-a")
    Connector.objects.create(name="feed-b", topic_prefix="feed-b")
    ReplicaSetState.objects.create(connector=connector, replica_set="rs0", phase="streaming", since=timezone.now(),
                                   heartbeat_at=timezone.now(), metrics={"metrics": {"TotalNumberOfEventsSeen": 5}})
    headers = [(b"origin", ALLOWED_ORIGIN), (b"cookie", session_cookie_for(viewer))]

    async def exchange():
        communicator, connected, _ = await connect("/ws/metrics/?connector=feed-a", headers)
        assert connected
        try:
            hello = await communicator.receive_json_from(timeout=10)
            summary = await communicator.receive_json_from(timeout=10)
            layer = get_channel_layer()
            for name in ("feed-b", "feed-a"):  # the other connector's report is not forwarded
                await layer.group_send(METRICS_GROUP, {"type": "metrics.update", "state": {
                    "connector": name, "replica_set": "rs0", "metrics": {"TotalNumberOfEventsSeen": 6}}})
            update = await communicator.receive_json_from(timeout=10)
            return hello, summary, update
        finally:
            await communicator.disconnect()

    hello, summary, update = async_to_sync(exchange)()
    assert hello["type"] == "hello" and hello["user"] == "vera"
    assert [(s["connector"], s["phase"], s["metrics"]["TotalNumberOfEventsSeen"]) for s in hello["states"]] == [
        ("feed-a", "streaming", 5)]
    assert summary == {"type": "connectors", "connectors": {"feed-a": {
        "desired_state": "running", "status": "running",
        "replica_sets": {"rs0": {"phase": "streaming", "stale": False, "last_error": ""}}}}}
    assert update == {"type": "metrics", "state": {"connector": "feed-a", "replica_set": "rs0",
                                                   "metrics": {"TotalNumberOfEventsSeen": 6}}}


@pytest.mark.parametrize(("role", "code"), [(None, UNAUTHENTICATED), ("none", FORBIDDEN)])
def test_anonymous_and_roleless_are_refused(stack, django_user_model, role, code):
    headers = [(b"origin", ALLOWED_ORIGIN)]
    if role:
        headers.append((b"cookie", session_cookie_for(user_with(django_user_model, "nora"))))

    async def attempt():
        communicator, connected, close_code = await connect("/ws/metrics/", headers)
        await communicator.wait()
        return connected, close_code

    assert async_to_sync(attempt)() == (False, code)
