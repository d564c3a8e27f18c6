"""Issue 13.10 in a real browser: a taken name is reported while typing; a line of Other properties that is not
key=value is reported live and, on submit, next to every other problem; the form's fields for the user, hashed
fields, the signal collection and heartbeats reach the stored configuration."""

from __future__ import annotations

import pytest

from tests.browser.conftest import create_connector, screenshot
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_the_form_reports_everything_at_once_and_has_its_fields(session, platform, mongo_rs):
    taken = f"btform{tagged_suffix()}"
    create_connector(platform, mongo_rs, taken)
    current, page = session("admin")
    page.goto("/connectors/new/")
    page.get_by_label("Name", exact=True).fill(taken)
    page.locator("#err-name").get_by_text(f"Connector {taken} already exists").wait_for()  # live, before submit

    name = f"{taken}-new"
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Topic prefix").fill(name)
    page.get_by_label("Connection string").fill(mongo_rs.uri)
    page.get_by_label("Collection include").fill(f"{name}\\.(orders")
    page.get_by_label("Other properties").fill("nonsense\npoll.interval.ms=100")
    page.locator("#err-other").get_by_text('line 1: expected key=value, got "nonsense"').wait_for()  # live
    page.get_by_role("button", name="Create connector").click()
    page.wait_for_load_state("load")
    assert 'got "nonsense"' in page.locator("#err-other").inner_text()
    assert "not a valid regular expression" in page.locator("#err-collection_include").inner_text()
    assert "\\\\" not in page.locator("#err-collection_include").inner_text()  # no Python escaping
    screenshot(page, "form-all-problems")

    page.get_by_label("Collection include").fill(f"{name}\\.orders\n{name}\\.signals")
    page.get_by_label("Other properties").fill(f"poll.interval.ms=100\noffset.storage.topic={name}.offsets")
    page.get_by_label("Signal collection").fill(f"{name}.signals")
    page.get_by_label("Heartbeat interval (ms)").fill("2000")
    page.get_by_label("Hashed fields").fill(f"{name}.orders.email")
    page.get_by_label("Hash salt").fill("pepper")
    page.get_by_label("Start the connector now").uncheck()
    page.get_by_role("button", name="Create connector").click()
    page.wait_for_load_state("load")
    assert "/connectors/new/" not in page.url, [t for t in page.locator(".errorlist").all_inner_texts() if t.strip()]
    # the refused form came back as a 400 page on purpose; the browser logs that as a failed load
    current.errors[:] = [e for e in current.errors if not (e.endswith("status of 400 (Bad Request)")
                                                           and "/connectors/new/" in e)]
    exported = page.request.get(f"/connectors/{name}/config.json").json()["config"]
    assert exported["signal.data.collection"] == f"{name}.signals"
    assert exported["heartbeat.interval.ms"] == "2000"
    assert exported["field.mask.hash.SHA-256.with.salt.********"] == f"{name}.orders.email"
    assert page.get_by_role("button", name="Snapshot", exact=True).count() == 1
