"""Issue 13.11 in a real browser: one date/time format on every page and chart axis, axis labels that do not
overlap (wide and narrow), the offsets page keeping its confirmation after a reset and offering Resume, no UI
message in API words, and nothing loaded from outside the machine (every request's host recorded)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pymongo
import pytest

from tests.browser.conftest import NARROW, WIDE, create_connector, screenshot, wait_streaming
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")

# For each chart: its x-axis labels (lines of multi-line ones) with their centre and width in canvas pixels.
AXIS_LABELS = """key => ["lag", "eps"].map(which => {
  const u = window.cdcLive.charts[key][which], axis = u.axes[0];
  u.ctx.font = axis.font[0];
  const labels = [];
  (axis._splits || []).forEach((v, i) => {
    const text = axis._values[i];
    if (text == null || text === "") return;
    const width = Math.max(...String(text).split("\\n").map(line => u.ctx.measureText(line).width));
    labels.push({text: String(text), at: u.valToPos(v, "x", true), width});
  });
  return labels;
})"""


# A mark on the page's window, gone once the page was reloaded (and loaded completely).
MARK_PAGE = "() => { window.__notReloaded = true; }"
RELOADED = "!window.__notReloaded && document.readyState === 'complete'"


def _overlaps(labels: list[dict]) -> list[tuple[str, str]]:
    found = []
    for left, right in zip(labels, labels[1:], strict=False):
        if right["at"] - left["at"] < (left["width"] + right["width"]) / 2 + 4:
            found.append((left["text"], right["text"]))
    return found


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "narrow"])
def test_one_datetime_format_and_axis_labels_apart(session, platform, mongo_rs, viewport):
    name = f"btfmt{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)
    _, page = session("viewer", viewport)
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    page.wait_for_function("name => Object.keys(window.cdcLive.charts).some(k => k.startsWith(name + '/'))",
                           arg=name, timeout=30_000)
    key = page.evaluate("name => Object.keys(window.cdcLive.charts).find(k => k.startsWith(name + '/'))", name)
    page.wait_for_timeout(3000)  # a few live points drawn
    for labels in page.evaluate(AXIS_LABELS, key):
        assert len(labels) >= 2, labels
        assert not _overlaps(labels), _overlaps(labels)
        for label in labels:  # the clock of the one format: 24-hour HH:MM or HH:MM:SS
            assert re.fullmatch(r"\d{2}:\d{2}(:\d{2})?", label["text"]), label
    texts = page.locator("time").all_inner_texts()
    assert texts and all(DATETIME.match(t.strip()) for t in texts), texts
    live = page.evaluate("() => window.cdcFormat.datetime(Date.UTC(2026, 0, 2, 3, 4, 5))")
    assert DATETIME.match(live)
    screenshot(page, f"detail-axes-{viewport['width']}")


def test_offsets_page_keeps_the_confirmation_and_resumes(session, platform, mongo_rs):
    name = f"btrst{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)
    current, page = session("admin")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    page.goto(f"/connectors/{name}/offsets/")
    assert not page.get_by_role("button", name="Resume", exact=True).count()  # running: nothing to resume

    page.get_by_role("button", name="Reset offsets").click()  # running and "Stop it first" not ticked
    announce = page.locator("#announce")
    announce.wait_for()
    refusal = announce.inner_text()
    assert "stop=true" not in refusal and "Stop it first" in refusal, refusal
    # the API's 409 is the expected refusal; the browser logs it as a failed load
    current.errors[:] = [e for e in current.errors if not e.endswith("status of 409 (Conflict)")]

    page.get_by_label("Stop it first").check()
    page.evaluate(MARK_PAGE)
    page.get_by_role("button", name="Reset offsets").click()
    # the page reloads after a reset: the confirmation must be there on the reloaded page
    page.wait_for_function(f"() => {RELOADED} && /reset/i.test(document.getElementById('announce').textContent) && "
                           "!document.getElementById('announce').hidden", timeout=30_000)
    text = page.locator("#announce").inner_text()
    assert "Offsets of" in text and "reset" in text and "Resume" in text, text
    for time_text in page.locator("time").all_inner_texts():
        assert DATETIME.match(time_text.strip()), time_text

    page.evaluate(MARK_PAGE)
    page.get_by_role("button", name="Resume", exact=True).click()
    page.wait_for_function(f"() => {RELOADED} && "  # reloaded: running again, so no Resume button
                           "document.getElementById('announce').textContent.includes('resume requested')",
                           timeout=15_000)
    assert "resume requested" in page.locator("#announce").inner_text()
    assert not page.get_by_role("button", name="Resume", exact=True).count()
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    screenshot(page, "offsets-after-resume")


def test_nothing_is_loaded_from_outside_the_machine(session, platform, mongo_rs):
    name = f"btnet{tagged_suffix()}"
    client = pymongo.MongoClient(mongo_rs.uri)
    client[name].docs.insert_one({"_id": 1})
    create_connector(platform, mongo_rs, name)
    current, page = session("admin")
    hosts: dict[str, str] = {}
    current.context.on("request", lambda request: hosts.setdefault(urlsplit(request.url).hostname or "", request.url))
    for path in ["/", f"/connectors/{name}/", f"/connectors/{name}/edit/", "/connectors/new/",
                 f"/connectors/{name}/offsets/", "/spark/", "/spark/jobs/new/", "/api/docs/", "/api/redoc/",
                 "/admin/", "/admin/connectors/connector/"]:
        page.goto(path)
        page.wait_for_load_state("networkidle")
    page.goto("/api/redoc/")
    page.get_by_text("CDC platform API").first.wait_for(timeout=30_000)  # Redoc rendered the schema
    page.wait_for_load_state("networkidle")  # and whatever it loads after that
    outside = {host: url for host, url in hosts.items() if host not in ("127.0.0.1", "localhost", "")}
    assert not outside, outside
    client.close()
