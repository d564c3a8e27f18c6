"""workers.control.notify tells its caller how many pipelines heard a command (for the activity log), on the
stack's real Redis: a subscribed control listener counts, none is 0."""

from __future__ import annotations

import pytest

from tests.topic_cleanup import tagged_suffix
from workers import control

pytestmark = pytest.mark.integration


def test_notify_reports_the_listening_pipelines(stack, monkeypatch):
    monkeypatch.setenv("REDIS_URL", stack.redis_url)
    monkeypatch.setattr(control, "redis_url", lambda: stack.redis_url)
    name = f"recv-{tagged_suffix()}"
    heard: list[int | None] = []
    assert control.notify(name, "pause", on_sent=heard.append)
    listener = control.client().pubsub()
    listener.subscribe(control.control_channel(name))
    listener.get_message(timeout=1.0)  # the subscription's confirmation
    try:
        assert control.notify(name, "stop", on_sent=heard.append)
        assert listener.get_message(timeout=2.0)["data"]
    finally:
        listener.close()
    assert heard == [0, 1]
