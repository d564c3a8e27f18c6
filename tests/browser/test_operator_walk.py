"""Issue 13's walk, in a real browser against the real platform: create a connector (a refused host first, reported
next to the connection string, nothing saved) → a snapshot request refused with the reason → fix the form (set the
signal collection) → a snapshot request done → pause, really paused (a write made now is not in Kafka until resume)
→ clone → export → delete."""

from __future__ import annotations

import json
import socket

import pymongo
import pytest

from tests.browser.conftest import screenshot
from tests.integration.kafka_reading import read_topic
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def request_row(page, kind: str, command: str):
    """The newest request row of this kind and command (the panel refreshes itself every few seconds)."""
    return page.locator(f'#requests tr[data-request^="{kind}-"]').filter(has_text=command).first


def ids_in(bootstrap: str, topic: str) -> set:
    found = set()
    for record in read_topic(bootstrap, topic):
        if record.value:
            payload = json.loads(record.value).get("payload", json.loads(record.value))
            after = payload.get("after")
            if after:
                found.add(json.loads(after)["_id"])
    return found


def test_create_snapshot_pause_clone_export_delete(session, platform, mongo_rs, stack):
    name = f"btwalk{tagged_suffix()}"
    client = pymongo.MongoClient(mongo_rs.uri)
    client[name].docs.insert_many([{"_id": i} for i in range(20)])
    current, page = session("admin")

    # create: a refused port is reported in the form and nothing is saved
    page.goto("/connectors/new/")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Topic prefix").fill(name)
    port = free_port()
    page.get_by_label("Connection string").fill(f"mongodb://127.0.0.1:{port}/?replicaSet=rs0")
    page.get_by_label("Database include").fill(name)
    page.get_by_label("Snapshot mode").select_option("no_data")
    page.get_by_label("Other properties").fill(f"offset.storage.topic={name}.offsets\npoll.interval.ms=100")
    page.get_by_role("button", name="Create connector").click()
    page.get_by_text(f"refused the connection: nothing listens on port {port}").first.wait_for()
    assert "/connectors/new/" in page.url
    # the refused form comes back as a 400 page on purpose; the browser logs that as a failed load
    current.errors[:] = [e for e in current.errors if not (e.endswith("status of 400 (Bad Request)")
                                                           and "/connectors/new/" in e)]
    screenshot(page, "walk-refused-host")
    page.get_by_label("Connection string").fill(mongo_rs.uri)
    page.get_by_role("button", name="Create connector").click()
    page.wait_for_url(f"**/connectors/{name}/")

    # a snapshot it cannot serve is refused before it is sent, with the reason
    assert page.get_by_role("button", name="Snapshot", exact=True).is_disabled()
    assert "signal.data.collection" in page.locator("#snapshot-refusal").inner_text()

    # fix the form: set the signal collection
    page.locator("#snapshot-refusal").get_by_role("link", name="Edit the connector").click()
    other = page.get_by_label("Other properties")
    other.fill(other.input_value() + f"\nsignal.data.collection={name}.signals")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/connectors/{name}/")
    page.wait_for_function("() => document.querySelector('#state-badge').textContent === 'running'",
                           timeout=60_000)
    page.get_by_label("Snapshot collections").fill(f"{name}.docs")
    page.get_by_role("button", name="Snapshot", exact=True).click()
    request_row(page, "snapshot", "snapshot").locator('[data-status="done"]').wait_for(timeout=90_000)
    assert f"{name}.docs: 20 documents" in request_row(page, "snapshot", "snapshot").inner_text()

    # pause: really paused once the request is done; a write made now reaches Kafka only after resume
    page.get_by_role("button", name="Pause", exact=True).click()
    request_row(page, "control", "pause").locator('[data-status="done"]').wait_for(timeout=30_000)
    topic = f"{name}.{name}.docs"
    client[name].docs.insert_one({"_id": "while-paused"})
    assert "while-paused" not in ids_in(stack.kafka_bootstrap, topic)
    assert json.loads(page.request.get(f"/connect/connectors/{name}/status").text())["connector"]["state"] \
        == "PAUSED"
    page.get_by_role("button", name="Resume", exact=True).click()
    page.wait_for_function("() => document.querySelector('#state-badge').textContent === 'running'",
                           timeout=60_000)
    request_row(page, "control", "resume").locator('[data-status="done"]').wait_for(timeout=60_000)
    seen = set()
    for _ in range(30):  # the resumed pipeline publishes it with its next batch
        seen = ids_in(stack.kafka_bootstrap, topic)
        if "while-paused" in seen:
            break
        page.wait_for_timeout(1000)
    assert "while-paused" in seen

    # clone, export, delete
    page.get_by_label("Clone as").fill(f"{name}-b")
    page.get_by_role("button", name="Clone").click()
    page.wait_for_url(f"**/connectors/{name}-b/edit/")
    exported = json.loads(page.request.get(f"/connectors/{name}-b/config.json").text())
    assert exported["config"]["signal.data.collection"] == f"{name}.signals"
    page.goto(f"/connectors/{name}-b/delete/")
    page.get_by_role("button", name=f"Delete {name}-b").click()
    page.wait_for_url(f"{platform.base_url}/")
    page.goto(f"/connectors/{name}/delete/")
    page.get_by_label("Delete them too").check()
    page.get_by_role("button", name=f"Delete {name}").click()
    page.wait_for_url(f"{platform.base_url}/")
    assert "offsets were deleted too" in page.locator(".messages").inner_text()
    screenshot(page, "walk-deleted")
    client.close()
