"""Control actions in a real browser against the real platform: a snapshot the connector cannot serve is refused
before it is sent (the button is disabled and says why), a snapshot that can be served and a pause both end in a
visible final state in the Requests panel."""

from __future__ import annotations

import json

import pymongo
import pytest

from tests.browser.conftest import create_connector, screenshot, wait_streaming
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_snapshot_without_signal_collection_is_refused_with_the_reason(session, platform, mongo_rs):
    name = f"btnosig{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)
    _, page = session("operator")
    page.goto(f"/connectors/{name}/")
    button = page.get_by_role("button", name="Snapshot", exact=True)
    assert button.is_disabled()
    refusal = page.locator("#snapshot-refusal")
    assert "signal.data.collection" in refusal.inner_text()
    assert "signal.data.collection" in (button.get_attribute("title") or "")
    screenshot(page, "snapshot-refused")


def test_snapshot_and_pause_end_in_a_visible_final_state(session, platform, mongo_rs):
    name = f"btsig{tagged_suffix()}"
    client = pymongo.MongoClient(mongo_rs.uri)
    client[name].docs.insert_many([{"_id": i, "v": i} for i in range(25)])
    create_connector(platform, mongo_rs, name, **{"signal.data.collection": f"{name}.signals"})
    _, page = session("operator")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    assert page.get_by_role("button", name="Snapshot", exact=True).is_enabled()
    page.get_by_label("Snapshot collections").fill(f"{name}.docs")
    page.get_by_role("button", name="Snapshot", exact=True).click()
    row = page.locator('#requests tr[data-request^="snapshot-"]').first
    row.locator('[data-status="done"]').wait_for(timeout=60_000)
    assert f"{name}.docs: 25 documents" in row.locator(".reason").inner_text()

    page.get_by_role("button", name="Pause", exact=True).click()
    pause = page.locator('#requests tr[data-request^="control-"]').first
    pause.locator('[data-status="done"]').wait_for(timeout=30_000)
    assert "pause" in pause.inner_text() and "stopped after committing its position" in pause.inner_text()
    screenshot(page, "requests-final-states")
    client.close()


def test_both_charts_keep_moving_and_one_point_shows_a_readable_span(session, platform, mongo_rs):
    name = f"btchart{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)
    _, page = session("viewer")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    page.wait_for_function("name => Object.keys(window.cdcLive.charts).some(k => k.startsWith(name + '/'))",
                           arg=name, timeout=30_000)
    key = page.evaluate("name => Object.keys(window.cdcLive.charts).find(k => k.startsWith(name + '/'))", name)
    start = page.evaluate("key => window.cdcLive.charts[key].eps.data[1].length", key)
    # every report (once a second) adds a point to both charts, the events/s one included
    page.wait_for_function("([key, n]) => window.cdcLive.charts[key].eps.data[1].length >= n + 3 && "
                           "window.cdcLive.charts[key].lag.data[1].length >= n + 3", arg=[key, start],
                           timeout=30_000)
    span = page.evaluate("key => { const x = window.cdcLive.charts[key].eps.scales.x; return x.max - x.min; }", key)
    assert span >= 120  # not a one-second axis labelled in milliseconds


def test_offsets_show_the_token_as_json_and_copy_it(session, platform, mongo_rs):
    name = f"btoff{tagged_suffix()}"
    client = pymongo.MongoClient(mongo_rs.uri)
    create_connector(platform, mongo_rs, name)
    current, page = session("admin")
    current.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    client[name].docs.insert_one({"_id": 1})  # a committed position with a resume token
    page.goto(f"/connectors/{name}/offsets/")
    for _ in range(30):
        if page.locator("#token-1").count():
            break
        page.wait_for_timeout(1000)  # the commit is asynchronous: reload until the position is there
        page.reload()
    token = json.loads(page.locator("#token-1").inner_text())
    assert set(token) == {"_data"}
    page.get_by_role("button", name="Copy the resume token of rs0").click()
    page.wait_for_function("() => document.getElementById('announce').textContent.includes('Copied')")
    assert json.loads(page.evaluate("() => navigator.clipboard.readText()")) == token
    client.close()


def test_clone_export_and_delete_from_the_dashboard(session, platform, mongo_rs):
    name = f"btcl{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)
    _, page = session("admin")
    page.goto(f"/connectors/{name}/")
    page.get_by_label("Clone as").fill(f"{name}-copy")
    page.get_by_role("button", name="Clone").click()
    page.wait_for_url(f"**/connectors/{name}-copy/edit/")
    assert f"Connector {name}-copy created from {name}, stopped" in page.locator(".messages").inner_text()

    exported = json.loads(page.request.get(f"/connectors/{name}-copy/config.json").text())
    assert exported["name"] == f"{name}-copy" and exported["config"]["database.include.list"] == name
    assert exported["config"]["topic.prefix"] == f"{name}-copy"
    page.goto(f"/connectors/{name}-copy/")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download config").click()
    assert download.value.suggested_filename == f"{name}-copy.json"

    page.get_by_role("link", name="Delete").click()
    page.get_by_label("Delete them too").check()
    page.get_by_role("button", name=f"Delete {name}-copy").click()
    page.wait_for_url(f"{platform.base_url}/")
    assert "offsets were deleted too" in page.locator(".messages").inner_text()
    assert page.locator(f'[data-connector="{name}-copy"]').count() == 0
    assert page.locator(f'[data-connector="{name}"]').count() >= 1
