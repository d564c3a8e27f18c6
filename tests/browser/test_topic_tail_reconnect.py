"""The topic browser's live tail under trouble: it survives Redis answering late (the socket's reader would time
out after 5 s) and, when its connection is cut, says so, reconnects by itself and shows what was committed
meanwhile, once."""

from __future__ import annotations

import time

import pytest
import redis
from confluent_kafka.admin import AdminClient, NewTopic

from tests.browser.test_topic_browser import produce
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

# Every text the tail's status line shows, in order (the page replaces it as things happen)
STATUS_HISTORY = """(() => {
  window.__tailStatus = [];
  document.addEventListener("DOMContentLoaded", () => {
    const status = document.getElementById("tail-status");
    new MutationObserver(() => window.__tailStatus.push(status.textContent))
      .observe(status, { childList: true, characterData: true, subtree: true });
  });
})()"""


def open_tail(session, stack):
    topic = f"browse.tail.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    produce(stack.kafka_bootstrap, topic, b"1", b'{"n": 1}', [])
    _, page = session("viewer")
    page.add_init_script(STATUS_HISTORY)
    page.goto(f"/topics/{topic}/")
    page.get_by_role("button", name="Live tail").click()
    page.wait_for_function("() => document.getElementById('tail-status').textContent.startsWith('Following')")
    return topic, page


def shown(page, marker: str) -> int:
    return page.locator("table.messages > tbody.message.live", has_text=marker).count()


def test_live_tail_survives_redis_answering_late(session, stack, platform):
    topic, page = open_tail(session, stack)
    client = redis.Redis.from_url(stack.redis_url)
    pause_ms = 8000
    client.execute_command("CLIENT", "PAUSE", pause_ms, "WRITE")  # what a loaded Redis looks like to its readers
    time.sleep(pause_ms / 1000 + 1)  # the stall is the condition under test: it must last past the 5 s read
    produce(stack.kafka_bootstrap, topic, b"2", b'{"after": "stall"}', [])
    page.locator("table.messages > tbody.message.live", has_text="stall").wait_for()
    history = page.evaluate("window.__tailStatus")
    assert not [text for text in history if "lost its connection" in text or "disconnected" in text], history


def test_cut_tail_reconnects_visibly_and_misses_nothing(session, stack, platform):
    topic, page = open_tail(session, stack)
    produce(stack.kafka_bootstrap, topic, b"2", b'{"before": "cut"}', [])
    page.locator("table.messages > tbody.message.live", has_text="before").wait_for()
    page.evaluate("window.cdcTail.socket.close()")  # the connection ends without the user stopping the tail
    page.wait_for_function("() => document.getElementById('tail-status').textContent.includes('Reconnecting in')")
    produce(stack.kafka_bootstrap, topic, b"3", b'{"during": "cut"}', [])
    page.wait_for_function("() => window.__tailStatus.some(text => text.startsWith('Reconnected'))", timeout=30_000)
    page.locator("table.messages > tbody.message.live", has_text="during").wait_for()
    produce(stack.kafka_bootstrap, topic, b"4", b'{"after": "cut"}', [])
    page.locator("table.messages > tbody.message.live", has_text='"after"').wait_for()
    assert (shown(page, "before"), shown(page, "during"), shown(page, '"after"')) == (1, 1, 1)
    assert page.get_by_role("button", name="Stop tail").is_visible()
    page.get_by_role("button", name="Stop tail").click()
    assert page.locator("#tail-status").inner_text() == "Live tail stopped."
