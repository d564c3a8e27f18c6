"""The dashboard in a real browser against the real platform: log in, create a connector through the form (a bad
regex is reported next to its field), the snapshot's progress bar reaches 100 %, the overview's counters rise while a
workload writes, a primary step-down shows up as an election within 3 s, pause changes the state badge, a viewer
sees no buttons that change anything and the server refuses them anyway, an anonymous WebSocket is refused.

Tests share the module's replica set and its streaming connector, which none of them stops.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import pymongo
import pytest
from pymongo.errors import PyMongoError

from tests.browser.conftest import NARROW, create_connector, screenshot, text_number, wait_streaming
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

SNAPSHOT_DOCS = 3000


def _name(prefix: str) -> str:
    return f"{prefix}{tagged_suffix()}"


@pytest.fixture(scope="module")
def streaming(platform, mongo_rs):
    """A streaming connector (no snapshot) over database `<name>`, created through the services like the API does,
    with a writer thread inserting about 20 documents a second while the module runs."""
    name = _name("btstream")
    create_connector(platform, mongo_rs, name, **{"mongodb.heartbeat.frequency.ms": 500})
    stop = threading.Event()
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=5000)

    def write():
        i = 0
        while not stop.is_set():
            try:
                client[name].orders.insert_one({"_id": i, "sku": f"sku-{i % 7}", "qty": i % 5})
                i += 1
            except PyMongoError:
                time.sleep(0.2)  # a step-down: retry on the new primary
            stop.wait(0.05)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    yield name
    stop.set()
    writer.join(5)
    client.close()


def test_create_connector_through_the_form_and_watch_its_snapshot(session, platform, mongo_rs):
    name = _name("btform")
    client = pymongo.MongoClient(mongo_rs.uri)
    client[name].items.insert_many([{"_id": i, "n": i} for i in range(SNAPSHOT_DOCS)])
    client.close()
    current, page = session("admin")
    page.get_by_role("link", name="New connector").first.click()
    page.wait_for_url("**/connectors/new/")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Topic prefix").fill(name)
    page.get_by_label("Connection string").fill(mongo_rs.uri)
    include = page.get_by_label("Collection include")
    include.fill(f"{name}.(items")
    error = page.locator("#err-collection_include")
    error.get_by_text("not a valid regular expression").wait_for()
    assert include.get_attribute("aria-invalid") == "true"
    screenshot(page, "connector-form")
    include.fill(f"{name}\\.items")
    page.wait_for_function("() => !document.querySelector('#err-collection_include li')")
    page.get_by_label("Other properties").fill(
        f"snapshot.chunk.size=100\noffset.storage.topic={name}.offsets\npoll.interval.ms=100")
    mongo_rs.set_delay(120, commands=["find"])  # chunk reads take a while, so progress is seen moving
    try:
        page.get_by_role("button", name="Create connector").click()
        page.wait_for_url(f"**/connectors/{name}/")
        assert page.locator("#state-badge").inner_text() in ("starting", "snapshot", "running")

        # the progress bar appears (live, no reload) and moves to 100 %
        label = f"Snapshot progress of {name}.items"
        page.evaluate("""label => { window.__progress = []; setInterval(() => {
            const bar = document.querySelector(`progress[aria-label='${label}']`);
            if (bar) window.__progress.push(bar.value); }, 50); }""", label)
        page.get_by_label(label).wait_for(timeout=60_000)
        page.wait_for_function("label => document.querySelector(`progress[aria-label='${label}']`).value === 100",
                               arg=label, timeout=60_000)
    finally:
        mongo_rs.set_delay(0, commands=["find"])
    seen = page.evaluate("() => window.__progress")
    assert any(0 < value < 100 for value in seen), sorted(set(seen))  # seen moving, then 100 (waited for)
    documents = page.locator(f'tr[data-collection="{name}.items"] td').nth(1).inner_text()
    assert text_number(documents.split("/")[0]) == SNAPSHOT_DOCS
    wait_streaming(page, name)
    page.wait_for_function("() => document.querySelector('#state-badge').textContent === 'running'")


def test_overview_counters_rise_as_the_workload_writes(session, streaming):
    current, page = session("viewer")
    row = page.locator(f'tr[data-connector="{streaming}"]')
    events = row.locator('[data-bind="events"]')
    wait_streaming(page, streaming)
    page.wait_for_function("cell => parseInt(cell.textContent.replace(/\\D/g, '') || '0') > 0",
                           arg=events.element_handle(), timeout=30_000)
    page.evaluate("() => { window.__sameDocument = true; }")
    first = text_number(events.inner_text())
    page.wait_for_function("([cell, n]) => parseInt(cell.textContent.replace(/\\D/g, '')) >= n + 20",
                           arg=[events.element_handle(), first], timeout=15_000)
    assert page.evaluate("() => window.__sameDocument") is True, "the page reloaded instead of updating"
    assert text_number(row.locator('[data-bind="eps"]').inner_text()) > 0
    assert row.locator('[data-bind="status"]').inner_text() == "running"
    page.locator(".probe").first.wait_for()
    page.wait_for_timeout(5500)  # a sparkline point every 5 s
    screenshot(page, "overview")
    _, narrow = session("viewer", NARROW)
    narrow.locator(f'tr[data-connector="{streaming}"] [data-bind="status"]').wait_for()
    narrow.locator(".probe").first.wait_for()
    screenshot(narrow, "overview-narrow")
    assert narrow.evaluate("() => document.documentElement.scrollWidth") <= NARROW["width"]


def test_step_down_shows_as_an_election_within_3_seconds(session, streaming, mongo_rs):
    current, page = session("operator")
    page.goto(f"/connectors/{streaming}/")
    wait_streaming(page, streaming)
    elections = page.locator('[data-bind="metrics.NumberOfPrimaryElections"]').first
    page.wait_for_function("() => window.cdcLive.state === 'live'")
    before = text_number(elections.inner_text())
    old_primary = page.locator(".members li.primary").first.inner_text()
    started = time.monotonic()
    mongo_rs.step_down(seconds=2)
    page.wait_for_function("([cell, n]) => parseInt(cell.textContent.replace(/\\D/g, '') || '0') > n",
                           arg=[elections.element_handle(), before], timeout=3000)
    took = time.monotonic() - started
    assert took < 3, f"the election showed after {took:.1f}s"
    assert page.locator('[data-bind="metrics.LastPrimaryElectionMs"]').first.inner_text() != "never"
    page.wait_for_function("old => { const p = document.querySelector('.members li.primary');"
                           " return p && !p.textContent.startsWith(old.split(' ')[0]); }", arg=old_primary)
    page.locator("#topics-title + div table").wait_for()
    page.wait_for_timeout(1500)
    screenshot(page, "detail")
    _, narrow = session("operator", NARROW)
    narrow.goto(f"/connectors/{streaming}/")
    wait_streaming(narrow, streaming)
    narrow.locator("#topics-title + div table").wait_for()
    screenshot(narrow, "detail-narrow")
    assert narrow.evaluate("() => document.documentElement.scrollWidth") <= NARROW["width"]


def test_lost_socket_is_reported_and_reconnects(session, streaming):
    current, page = session("viewer")
    page.wait_for_function("() => window.cdcLive.state === 'live'")
    page.evaluate("() => window.cdcLive.close()")
    status = page.locator("#live-status")
    page.wait_for_function("() => window.cdcLive.state === 'down'")
    assert "Disconnected" in status.inner_text() and "reconnecting" in status.inner_text()
    page.wait_for_function("() => window.cdcLive.state === 'live'", timeout=5000)


def test_topic_browser_filters_by_key(session, streaming):
    current, page = session("viewer")
    page.goto(f"/connectors/{streaming}/")
    topic = f"{streaming}.{streaming}.orders"
    page.get_by_role("link", name=topic).click()
    page.wait_for_url(f"**/topics/{topic}/")
    assert page.locator("table.messages > tbody.message").count() == 20
    wanted = int(json.loads(page.locator("code.key").nth(10).inner_text())["id"])
    page.get_by_label("Search", exact=True).fill(f'"{wanted}"')
    page.get_by_label("Value", exact=True).uncheck()
    page.get_by_label("Headers", exact=True).uncheck()
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**q=*")
    keys = page.locator("code.key").all_inner_texts()
    assert keys and all(f'"{wanted}"' in key for key in keys)
    # `after` is shown as a document, not as a JSON string
    assert f'"sku": "sku-{wanted % 7}"' in page.locator("pre.json").first.inner_text()


def test_admin_offsets_page_shows_positions(session, streaming):
    current, page = session("admin")
    page.goto(f"/connectors/{streaming}/offsets/")
    row = page.locator('tr[data-rs="rs0"]')
    row.wait_for()
    assert "_data" in row.inner_text()
    assert page.get_by_label("Reset to").is_visible()

    # the edit form validates live against the stored connector (PATCH semantics of the validate action)
    page.goto(f"/connectors/{streaming}/edit/")
    other = page.get_by_label("Other properties")
    assert "offset.storage.topic=" in other.input_value()
    assert page.get_by_label("Connection string").input_value().startswith("mongodb://")
    other.fill(other.input_value() + "\npoll.interval.ms=-1")
    page.locator("#err-other").get_by_text("poll.interval.ms").wait_for()
    other.fill(other.input_value().replace("\npoll.interval.ms=-1", ""))
    page.wait_for_function("() => !document.querySelector('#err-other li')")
    page.get_by_text("The configuration is valid.").wait_for()


def test_viewer_sees_no_buttons_and_the_server_refuses_them(session, platform, streaming):
    current, page = session("viewer")
    page.goto(f"/connectors/{streaming}/")
    page.locator('[data-bind="status"]').first.wait_for()
    assert page.locator("form[data-api], [data-action]").count() == 0
    assert page.get_by_role("button").all_inner_texts() == ["Log out"]
    assert page.get_by_role("link", name="New connector").count() == 0
    csrf = current.csrf(page)
    for action in ("pause", "stop", "restart"):
        refused = page.request.post(f"/api/connectors/{streaming}/{action}/", headers={"X-CSRFToken": csrf})
        assert refused.status == 403, action
    assert page.request.get("/connectors/new/").status == 403
    assert page.request.post("/connectors/new/", form={"csrfmiddlewaretoken": csrf, "name": "x"}).status == 403
    assert page.request.get(f"/connectors/{streaming}/offsets/").status == 403
    desired = platform.django(f"from web.connectors.models import Connector as C; "
                              f"print(C.objects.get(name={streaming!r}).desired_state)").strip().splitlines()[-1]
    assert desired == "running"


def test_anonymous_websocket_is_refused(browser, platform, session):
    probe = """url => new Promise(resolve => {
        const ws = new WebSocket(url); let opened = false;
        ws.onopen = () => { opened = true; ws.close(); };
        ws.onclose = () => resolve(opened);
        setTimeout(() => resolve(opened), 5000);
    })"""
    url = platform.base_url.replace("http", "ws") + "/ws/metrics/"
    anonymous = browser.new_context(base_url=platform.base_url)
    try:
        page = anonymous.new_page()
        page.goto("/login/")
        assert page.evaluate(probe, url) is False
    finally:
        anonymous.close()
    _, page = session("viewer")
    assert page.evaluate(probe, url) is True


def test_metrics_endpoint_takes_a_viewer_token(platform, streaming):
    request = urllib.request.Request(f"{platform.base_url}/metrics",  # noqa: S310 - the test's own server
                                     headers={"Authorization": f"Bearer {platform.viewer_token}"})
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the test's own server
        text = response.read().decode()
    assert f'cdc_events_seen_total{{connector="{streaming}",replica_set="rs0"}}' in text
    assert f'cdc_primary_elections_total{{connector="{streaming}",replica_set="rs0"}}' in text
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{platform.base_url}/metrics", timeout=10)  # noqa: S310
    assert refused.value.code == 401


def test_pause_changes_the_state_badge(session, platform, mongo_rs):
    name = _name("btpause")  # its own: the module's streaming connector stays running for the other tests
    create_connector(platform, mongo_rs, name)
    current, page = session("operator")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    badge = page.locator("#state-badge")
    page.wait_for_function("badge => badge.textContent === 'running'", arg=badge.element_handle(), timeout=30_000)
    page.get_by_role("button", name="Pause", exact=True).click()  # the confirmation is accepted by the session
    page.wait_for_function("badge => badge.textContent === 'paused'", arg=badge.element_handle(), timeout=15_000)
    assert page.locator('[data-bind="desired"]').inner_text() == "paused"
    assert page.get_by_role("button", name="Resume", exact=True).is_visible()
    assert not page.get_by_role("button", name="Pause", exact=True).is_visible()
    page.wait_for_function("() => document.querySelector('[data-rs] [data-bind=phase]').textContent === 'stopped'")
