"""Issue 13.15 in a real browser: the detail page's activity log shows what was asked and what the pipeline did
(request, phase change, outcome with the pipeline's reason), with times in the page's format."""

from __future__ import annotations

import re
import uuid

import pytest

from tests.browser.conftest import screenshot
from tests.browser.test_control_requests import _create, _wait_streaming

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_the_activity_log_shows_a_pause_from_request_to_outcome(session, platform, mongo_rs):
    name = f"btact{uuid.uuid4().hex[:6]}"
    _create(platform, mongo_rs, name)
    _, page = session("operator")
    page.goto(f"/connectors/{name}/")
    _wait_streaming(page, name)
    log = page.locator("#activity")
    log.locator('tr[data-kind="state"]', has_text="streaming").first.wait_for(timeout=15_000)

    page.get_by_role("button", name="Pause").click()
    log.locator('tr[data-kind="request"]', has_text="pause requested").wait_for(timeout=15_000)
    outcome = log.locator('tr[data-kind="outcome"]', has_text="pause done")
    outcome.wait_for(timeout=30_000)
    assert "stopped after committing its position" in outcome.inner_text()
    log.locator('tr[data-kind="state"]', has_text="streaming → stopped").wait_for(timeout=15_000)
    assert "bt-operator" in log.locator('tr[data-kind="request"]', has_text="pause requested").inner_text()
    for when in log.locator("time").all_inner_texts():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", when), when
    screenshot(page, "activity-log")
