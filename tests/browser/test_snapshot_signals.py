"""From the connector page, in a real browser against the real platform: pause, resume and stop of a running
incremental snapshot (Debezium's pause-snapshot, resume-snapshot and stop-snapshot), the snapshot card following each
step and the Requests panel showing how each request ended (a viewer is offered none of the buttons); a pipeline's
log level set and then reported as its current level."""

from __future__ import annotations

import pymongo
import pytest

from tests.browser.conftest import create_connector, screenshot, wait_streaming
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

DOCUMENTS = 30_000


def press(page, label: str) -> None:
    """Clicks the button; the session accepts its confirmation."""
    page.get_by_role("button", name=label, exact=True).click()


def snapshot_state(page, state: str, timeout_ms: int = 60_000) -> None:
    page.locator(f'#replica-sets [data-snapshot-state="{state}"]').first.wait_for(timeout=timeout_ms)


def test_operator_pauses_resumes_and_stops_an_incremental_snapshot(session, platform, mongo_rs):
    name = f"btsigs{tagged_suffix()}"
    client = pymongo.MongoClient(mongo_rs.uri)
    client[name].docs.insert_many([{"_id": i, "v": i} for i in range(DOCUMENTS)])
    create_connector(platform, mongo_rs, name, **{"signal.data.collection": f"{name}.signals",
                                                  "incremental.snapshot.chunk.size": 20})
    _, viewer = session("viewer")
    viewer.goto(f"/connectors/{name}/")
    assert viewer.get_by_role("button", name="Pause snapshot").count() == 0
    viewer.close()

    _, page = session("operator")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    page.get_by_label("Snapshot collections").fill(f"{name}.docs")
    press(page, "Snapshot")
    snapshot_state(page, "running")

    press(page, "Pause snapshot")
    pause = page.locator('#requests tr[data-request^="control-"]').first
    pause.locator('[data-status="done"]').wait_for(timeout=30_000)
    assert "snapshot-pause" in pause.inner_text() and "pausing its incremental snapshot" in pause.inner_text()
    snapshot_state(page, "paused")
    screenshot(page, "incremental-snapshot-paused")

    press(page, "Resume snapshot")
    snapshot_state(page, "running")

    press(page, "Stop snapshot")
    snapshot_state(page, "stopped")
    asked = page.locator('#requests tr[data-request^="snapshot-"]').first
    asked.locator('[data-status="failed"]').wait_for(timeout=30_000)
    assert "stopped before it finished" in asked.locator(".reason").inner_text()

    press(page, "Pause snapshot")  # nothing runs any more: the pipeline says so
    refused = page.locator('#requests tr[data-request^="control-"]').first
    refused.locator('[data-status="failed"]').wait_for(timeout=30_000)
    assert "no incremental snapshot running" in refused.locator(".reason").inner_text()
    screenshot(page, "incremental-snapshot-stopped")
    client.close()


def test_operator_sets_a_pipelines_log_level_and_sees_it_reported(session, platform, mongo_rs):
    name = f"btlog{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)
    _, page = session("operator")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    page.get_by_label("Pipeline log level").select_option("DEBUG")
    press(page, "Set log level")
    row = page.locator('#requests tr[data-request^="control-"]').first
    row.locator('[data-status="done"]').wait_for(timeout=30_000)
    assert "log-level" in row.inner_text() and "at DEBUG" in row.locator(".reason").inner_text()
    for _ in range(30):  # the pipeline reports its level with its next report, about a second later
        page.reload()
        if "DEBUG" in page.locator("#log-level-help").inner_text():
            break
        page.wait_for_timeout(1000)
    assert "rs0 DEBUG" in page.locator("#log-level-help").inner_text()
    assert page.get_by_label("Pipeline log level").input_value() == "DEBUG"
    screenshot(page, "pipeline-log-level")
