"""The topic browser in Chromium: any topic from the Topics page, headers shown, a message downloaded, and the live
tail showing a message committed after it started (gated on its "Following" status, not on time)."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
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
    first = page.locator("table.messages > tbody.message").first
    first.locator("tr.summary").click()
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
    newest = page.locator("table.messages > tbody.message.live").first
    newest.wait_for()
    assert newest.locator("td.preview").inner_text() == '{"second": true}'
    assert not newest.locator("tr.detail").is_visible()
    newest.get_by_role("button", name="Message 0/").click()
    assert '"second": true' in newest.locator("pre.json").inner_text()
    assert "t-2" in newest.locator("dl.headers").inner_text()
    assert "1 new message" in page.locator("#tail-status").inner_text()
    page.get_by_role("button", name="Stop tail").click()
    assert page.locator("#tail-status").inner_text() == "Live tail stopped."


def test_messages_are_one_line_each_and_expand_on_click(session, stack):
    """A topic of large messages is a compact table: one line a message (partition, offset, time, key, the value cut
    to a preview); a click shows the whole key, headers and value, a second click hides them again."""
    topic = f"browse.compact.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "transactional.id": f"browser-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for n in range(20):
        value = {"n": n, "lines": [f"line {i} of message {n}" for i in range(40)], "last": f"end-{n}"}
        producer.produce(topic, json.dumps(value).encode(), json.dumps({"id": n}).encode(), headers=[("h", b"v%d" % n)])
    producer.commit_transaction(30)

    current, page = session("viewer")
    page.goto(f"/topics/{topic}/")
    rows = page.locator("table.messages > tbody.message")
    assert rows.count() == 20
    heights = [box["height"] for box in (rows.nth(i).locator("tr.summary").bounding_box() for i in range(20))]
    assert max(heights) < 40, heights  # one line each, not a document per message
    newest = rows.first
    assert newest.get_attribute("data-offset") == "19"
    preview = newest.locator("td.preview").inner_text()
    assert preview.startswith('{"n": 19, "lines": ["line 0 of message 19"') and preview.endswith("…")
    assert "end-19" not in preview
    assert newest.locator("code.key").inner_text() == '{"id": 19}'
    assert not newest.locator("pre.json").is_visible()

    newest.locator("td.preview").click()
    value = newest.locator("pre.json")
    value.wait_for()
    assert json.loads(value.inner_text())["last"] == "end-19"
    assert "v19" in newest.locator("dl.headers").inner_text()
    assert newest.get_by_role("button", name="Message 0/19").get_attribute("aria-expanded") == "true"
    assert not rows.nth(1).locator("pre.json").is_visible()  # only the clicked message opens

    newest.get_by_role("button", name="Message 0/19").click()
    value.wait_for(state="hidden")
    assert page.locator("table.messages").bounding_box()["height"] < 21 * 40  # header and 20 lines


def test_operator_produces_a_message_and_sees_it_in_the_table(session, stack):
    topic = f"browse.produce.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)

    current, viewer = session("viewer")
    viewer.goto(f"/topics/{topic}/")
    viewer.get_by_role("heading", name=f"Topic {topic}").wait_for()
    assert viewer.get_by_text("Produce a message").count() == 0  # viewers only read

    current, page = session("operator")
    page.goto(f"/topics/{topic}/")
    page.get_by_text("Produce a message").click()
    page.get_by_label("Message key").fill('{"id": 42}')
    page.get_by_label("Message value").fill('{"status": "produced from the UI"}')
    page.get_by_label("Header 1 name").fill("origin")
    page.get_by_label("Header 1 value").fill("ui-test")
    page.get_by_role("button", name="Produce").click()
    page.get_by_text(f"Message produced to {topic}: partition 0, offset 0.").wait_for()
    row = page.locator("table.messages > tbody.message").first
    assert row.locator("code.key").inner_text() == '{"id": 42}'
    assert row.locator("td.preview").inner_text() == '{"status": "produced from the UI"}'
    row.locator("tr.summary").click()
    assert "ui-test" in row.locator("dl.headers").inner_text()

    page.goto("/topics/__consumer_offsets/")
    page.get_by_text("Producing is not offered here").wait_for()
    assert page.get_by_text("Produce a message").count() == 0


def test_operator_creates_configures_and_deletes_a_topic(session, stack):
    name = f"browse.admin.{tagged_suffix()}"
    current, page = session("operator")
    page.goto("/topics/")
    page.get_by_text("Create a topic").click()
    page.get_by_label("Name").fill(name)
    page.get_by_label("Partitions").fill("2")
    page.get_by_role("button", name="Create").click()
    page.get_by_text(f"Topic {name} created.").wait_for()
    assert page.locator("table.partitions tbody tr").count() == 2

    page.get_by_label("Property").select_option("retention.ms")
    page.get_by_label("New value").fill("7200000")
    page.get_by_role("button", name="Set", exact=True).click()
    page.get_by_text("retention.ms set to 7200000.").wait_for()
    row = page.locator('tr[data-config="retention.ms"]')
    assert "7200000" in row.inner_text() and "DYNAMIC_TOPIC_CONFIG" in row.inner_text()
    assert "DEFAULT_CONFIG" in page.locator('tr[data-config="segment.bytes"]').inner_text()

    page.get_by_label("Type the topic's name to confirm").fill(name)
    page.get_by_role("button", name="Delete topic").click()
    page.get_by_text(f"Topic {name} deleted.").wait_for()
    assert page.get_by_role("link", name=name).count() == 0


def test_operator_resets_and_deletes_a_consumer_group(session, stack):
    topic = f"browse.groups.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    for n in range(3):
        produce(stack.kafka_bootstrap, topic, b"%d" % n, b'{"n": %d}' % n, [])
    group = f"ui-readers-{tagged_suffix()}"
    consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    consumer.close()

    current, viewer = session("viewer")
    viewer.goto(f"/topics/{topic}/")
    viewer.locator(f'tr[data-group="{group}"]').wait_for()
    assert viewer.get_by_role("button", name="Reset offsets").count() == 0

    current, page = session("operator")
    page.goto(f"/topics/{topic}/")
    page.get_by_label(f"Reset {group} to", exact=True).select_option("latest")
    page.get_by_role("button", name="Reset offsets").click()
    page.get_by_text(f"Consumer group {group} reset on {topic}: partition 0 → 6.").wait_for()  # 3 records, 3 markers
    assert page.locator(f'tr[data-group="{group}"] td.lag').inner_text() == "0"
    page.get_by_role("button", name=f"Delete group {group}").click()
    page.get_by_text(f"Consumer group {group} deleted.").wait_for()
    assert page.locator(f'tr[data-group="{group}"]').count() == 0
