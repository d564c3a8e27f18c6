"""The topic browser in Chromium: any topic from the Topics page, headers shown, a message downloaded, and the live
tail showing a message committed after it started (gated on its "Following" status, not on time)."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def produce(bootstrap: str, topic: str, key: bytes, value: bytes, headers: list) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"browser-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value, key, headers=headers)
    producer.commit_transaction(30)


def test_any_topic_download_and_live_tail(session, stack):
    topic = f"browse.ui.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    produce(stack.kafka_bootstrap, topic, b'{"id": 1}', b'{"first": true}', [("origin", b"browser-test")])

    current, page = session("viewer")
    page.goto("/")
    page.get_by_role("link", name="Topics", exact=True).click()
    page.get_by_role("link", name=topic).click()
    page.wait_for_url(f"**/topics/{topic}/")
    first = page.locator("ol.events > li").first
    assert "browser-test" in first.locator("dl.headers").inner_text()
    assert page.locator("#total-messages").inner_text() == "1"  # exact: the commit marker is no message

    with page.expect_download() as download:
        first.get_by_role("button", name="Download").click()
    saved = download.value
    assert saved.suggested_filename == f"{topic}-0-0.json"
    assert json.loads(open(saved.path()).read()) == {"first": True}

    page.get_by_role("button", name="Live tail").click()
    page.wait_for_function("() => document.getElementById('tail-status').textContent.startsWith('Following')")
    produce(stack.kafka_bootstrap, topic, b'{"id": 2}', b'{"second": true}', [("trace", b"t-2")])
    newest = page.locator("ol.events > li.live").first
    newest.wait_for()
    assert '"second": true' in newest.locator("pre.json").inner_text()
    assert "t-2" in newest.locator("dl.headers").inner_text()
    assert "1 new message" in page.locator("#tail-status").inner_text()
    page.get_by_role("button", name="Stop tail").click()
    assert page.locator("#tail-status").inner_text() == "Live tail stopped."
