"""The WebSocket stack end to end: the real ASGI application (origin check, session auth, URL routing) and a
consumer whose echo travels through channels-redis on the stack's Redis."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from channels_redis.core import RedisChannelLayer
from django.conf import settings
from django.test import Client

from web.dashboard.consumers import UNAUTHENTICATED

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

ALLOWED_ORIGIN = b"http://localhost:8000"  # localhost is in the development ALLOWED_HOSTS


def session_cookie_for(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}".encode()


async def open_ping_socket(headers):
    from cdcplatform.asgi import application

    communicator = WebsocketCommunicator(application, "/ws/ping/", headers=headers)
    connected, detail = await communicator.connect(timeout=10)
    return communicator, connected, detail


def test_channel_layer_is_redis(stack):
    assert isinstance(get_channel_layer(), RedisChannelLayer)


def test_authenticated_user_gets_pong_through_redis(stack, django_user_model):
    user = django_user_model.objects.create_user("alice", password="not-used-here")
    headers = [(b"origin", ALLOWED_ORIGIN), (b"cookie", session_cookie_for(user))]

    async def exchange():
        communicator, connected, _ = await open_ping_socket(headers)
        assert connected
        try:
            await communicator.send_json_to({"hello": [1, 2, 3]})
            return await communicator.receive_json_from(timeout=10)
        finally:
            await communicator.disconnect()

    assert async_to_sync(exchange)() == {"pong": {"hello": [1, 2, 3]}, "user": "alice"}


def test_anonymous_user_is_rejected(stack):
    async def attempt():
        communicator, connected, code = await open_ping_socket([(b"origin", ALLOWED_ORIGIN)])
        await communicator.wait()
        return connected, code

    assert async_to_sync(attempt)() == (False, UNAUTHENTICATED)


def test_foreign_origin_is_rejected(stack, django_user_model):
    user = django_user_model.objects.create_user("mallory-target", password="not-used-here")
    headers = [(b"origin", b"https://evil.example"), (b"cookie", session_cookie_for(user))]

    async def attempt():
        communicator, connected, _ = await open_ping_socket(headers)
        await communicator.wait()
        return connected

    assert async_to_sync(attempt)() is False
