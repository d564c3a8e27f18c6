"""After submit, the connector form shows every problem at once in a real browser: a taken name, a line of Other
properties that is not key=value, and a value the API refuses on another line."""

from __future__ import annotations

import pytest

from tests.browser.conftest import create_connector
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_a_bad_line_hides_neither_the_taken_name_nor_a_refused_value(session, platform, mongo_rs):
    taken = f"btall{tagged_suffix()}"
    create_connector(platform, mongo_rs, taken)
    current, page = session("admin")
    page.goto("/connectors/new/")
    page.get_by_label("Name", exact=True).fill(taken)
    page.get_by_label("Topic prefix").fill(taken)
    page.get_by_label("Connection string").fill(mongo_rs.uri)
    page.get_by_label("Other properties").fill("garbage line\ncapture.mode=bogus")
    page.get_by_role("button", name="Create connector").click()
    page.wait_for_load_state("load")
    assert "/connectors/new/" in page.url
    assert f"Connector {taken} already exists" in page.locator("#err-name").inner_text()
    other = page.locator("#err-other").inner_text()
    assert 'got "garbage line"' in other and "capture.mode" in other and "bogus" in other
    # the refused form came back as a 400 page on purpose; the browser logs that as a failed load
    current.errors[:] = [e for e in current.errors if not (e.endswith("status of 400 (Bad Request)")
                                                           and "/connectors/new/" in e)]
