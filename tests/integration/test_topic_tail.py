"""The topic browser's live tail (`/ws/topics/<topic>/`) through the real ASGI application and Kafka: after `ready`
every committed message matching the filters arrives (aborted ones never), with its headers; bad filters and unknown
topics are answered with an error and a close; anonymous and role-less users are refused."""

from __future__ import annotations

import uuid

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from django.contrib.auth.models import Group

from tests.integration.test_websocket_roundtrip import ALLOWED_ORIGIN, session_cookie_for
from tests.topic_cleanup import tagged_suffix
from web.dashboard.consumers import FORBIDDEN, UNAUTHENTICATED
from web.dashboard.topic_tail import BAD_REQUEST

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def user_with(django_user_model, name, role=None):
    user = django_user_model.objects.create_user(name)
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def write(bootstrap, topic, records, commit=True):
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tail-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for partition, key, value, headers in records:
        producer.produce(topic, value, key, partition=partition, headers=headers)
    producer.flush(30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


async def connect(path, headers):
    from cdcplatform.asgi import application

    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect(timeout=10)
    return communicator, connected, code


def test_tail_sends_new_committed_matching_messages(stack, django_user_model):
    topic = f"tail.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    write(stack.kafka_bootstrap, topic, [(0, b'{"id": 0}', b'{"old": true}', None)])
    viewer = user_with(django_user_model, "t", "viewer")
    headers = [(b"origin", ALLOWED_ORIGIN), (b"cookie", session_cookie_for(viewer))]

    async def exchange():
        communicator, connected, _ = await connect(f"/ws/topics/{topic}/?q=wanted&in=value&in=headers", headers)
        assert connected
        try:
            ready = await communicator.receive_json_from(timeout=20)
            aborted = [(1, b'{"id": 1}', b'{"wanted": "aborted"}', None)]
            await sync_to_async(write)(stack.kafka_bootstrap, topic, aborted, commit=False)
            await sync_to_async(write)(stack.kafka_bootstrap, topic, [
                (0, b'{"id": 2}', b'{"other": 1}', None),
                (1, b'{"id": 3}', b'{"x": "wanted"}', [("trace", b"t-3")]),
                (0, b'{"id": 4}', b'{"y": 1}', [("note", b"wanted here")]),
            ])
            first = await communicator.receive_json_from(timeout=20)
            second = await communicator.receive_json_from(timeout=20)
            assert await communicator.receive_nothing(timeout=1)
            return ready, first, second
        finally:
            await communicator.disconnect()

    ready, first, second = async_to_sync(exchange)()
    assert ready == {"type": "ready", "positions": {"0": 2, "1": 0}}  # p0: the old record and its marker
    got = sorted([first, second], key=lambda m: m["key_text"])
    assert [m["key_text"] for m in got] == ['{"id": 3}', '{"id": 4}']
    assert got[0]["headers"] == [["trace", "t-3"]] and '"wanted"' in got[0]["pretty"] and got[0]["partition"] == 1
    assert got[1]["headers"] == [["note", "wanted here"]] and got[1]["type"] == "message"


@pytest.mark.parametrize(("path", "text"), [("/ws/topics/no.such.topic.x/", "There is no topic no.such.topic.x"),
                                            ("/ws/topics/t/?in=bogus", "in=bogus is not known"),
                                            ("/ws/topics/t/?partition=x", "partition must be")])
def test_bad_filters_and_unknown_topics_are_answered_then_closed(stack, django_user_model, path, text):
    viewer = user_with(django_user_model, "t", "viewer")
    headers = [(b"origin", ALLOWED_ORIGIN), (b"cookie", session_cookie_for(viewer))]

    async def exchange():
        communicator, connected, _ = await connect(path, headers)
        assert connected
        error = await communicator.receive_json_from(timeout=20)
        closed = await communicator.receive_output(timeout=10)
        await communicator.disconnect()
        return error, closed

    error, closed = async_to_sync(exchange)()
    assert error["type"] == "error" and text in error["message"]
    assert closed == {"type": "websocket.close", "code": BAD_REQUEST}


@pytest.mark.parametrize("role", [None, "none"])
def test_anonymous_and_roleless_users_are_refused(stack, django_user_model, role):
    headers = [(b"origin", ALLOWED_ORIGIN)]
    if role:
        headers.append((b"cookie", session_cookie_for(user_with(django_user_model, "r", None))))

    async def exchange():
        communicator, connected, code = await connect("/ws/topics/any/", headers)
        await communicator.disconnect()
        return connected, code

    connected, code = async_to_sync(exchange)()
    assert not connected and code == (FORBIDDEN if role else UNAUTHENTICATED)
