"""Control actions in a real browser against the real platform: a snapshot the connector cannot serve is refused
before it is sent (the button is disabled and says why), a snapshot that can be served and a pause both end in a
visible final state in the Requests panel."""

from __future__ import annotations

import uuid

import pymongo
import pytest

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def _create(platform, mongo_rs, name: str, **extra) -> None:
    properties = {"name": name, "topic.prefix": name, "mongodb.connection.string": mongo_rs.uri,
                  "database.include.list": name, "snapshot.mode": "no_data", "poll.interval.ms": 100,
                  "offset.storage.topic": f"{name}.offsets", **extra}
    platform.django(
        "from web.connectors import drafts, services\n"
        f"services.create_connector(drafts.prepare({properties!r}), user=None, source='system')\n"
    )


def _wait_streaming(page, name: str, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(
        """name => Object.values(window.cdcLive.reports).some(r => r.connector === name &&
             r.metrics && r.metrics.phase === "streaming" && r.metrics.Connected && !r.final)""",
        arg=name, timeout=timeout_ms)


def test_snapshot_without_signal_collection_is_refused_with_the_reason(session, platform, mongo_rs):
    name = f"btnosig{uuid.uuid4().hex[:6]}"
    _create(platform, mongo_rs, name)
    _, page = session("operator")
    page.goto(f"/connectors/{name}/")
    button = page.get_by_role("button", name="Snapshot")
    assert button.is_disabled()
    refusal = page.locator("#snapshot-refusal")
    assert "signal.data.collection" in refusal.inner_text()
    assert "signal.data.collection" in (button.get_attribute("title") or "")
    screenshot(page, "snapshot-refused")


def test_snapshot_and_pause_end_in_a_visible_final_state(session, platform, mongo_rs):
    name = f"btsig{uuid.uuid4().hex[:6]}"
    client = pymongo.MongoClient(mongo_rs.uri)
    client[name].docs.insert_many([{"_id": i, "v": i} for i in range(25)])
    _create(platform, mongo_rs, name, **{"signal.data.collection": f"{name}.signals"})
    _, page = session("operator")
    page.goto(f"/connectors/{name}/")
    _wait_streaming(page, name)
    assert page.get_by_role("button", name="Snapshot").is_enabled()
    page.get_by_label("Snapshot collections").fill(f"{name}.docs")
    page.get_by_role("button", name="Snapshot").click()
    row = page.locator('#requests tr[data-request^="snapshot-"]').first
    row.locator('[data-status="done"]').wait_for(timeout=60_000)
    assert f"{name}.docs: 25 documents" in row.locator(".reason").inner_text()

    page.get_by_role("button", name="Pause").click()
    pause = page.locator('#requests tr[data-request^="control-"]').first
    pause.locator('[data-status="done"]').wait_for(timeout=30_000)
    assert "pause" in pause.inner_text() and "stopped after committing its position" in pause.inner_text()
    screenshot(page, "requests-final-states")
    client.close()
