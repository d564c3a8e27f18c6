"""The connector page's Verify panel in a real browser against the real platform: an operator's "Verify now" runs
on the worker, the panel follows it to its end and shows the outcome in the history; a viewer sees the history
without the button."""

from __future__ import annotations

import pymongo
import pytest

from tests.browser.conftest import create_connector, screenshot, wait_streaming
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_verify_now_runs_and_its_outcome_shows_in_the_history(session, platform, mongo_rs):
    name = f"btverify{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)  # no snapshot: only what is written from now on is captured
    _, page = session("operator")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    client = pymongo.MongoClient(mongo_rs.uri)
    client[name].docs.insert_many([{"_id": i, "v": i} for i in range(20)])
    page.get_by_role("button", name="Verify now").click()
    page.wait_for_selector("#verify-runs tr[data-status='done']", timeout=120_000)
    done = page.locator("#verify-runs tr[data-status='done']").first
    assert "equal: 20 rows" in done.inner_text()
    assert "bt-operator" in done.inner_text()
    screenshot(page, "verify-done")

    _, viewer = session("viewer")
    viewer.goto(f"/connectors/{name}/")
    viewer.wait_for_selector("#verify-runs tr[data-status='done']", timeout=30_000)
    assert viewer.get_by_role("button", name="Verify now").count() == 0
    client.close()
