"""After an offset reset the page says "press Resume to start it" only where a Resume button is there to press: the
answer is shown on the reloaded page (which offers Resume), not on the page before the reload (whose connector was
running, so it has no Resume button)."""

from __future__ import annotations

import pytest

from tests.browser.conftest import create_connector, wait_streaming
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration]

# Records in sessionStorage (it outlives the reload) each moment #announce says "press Resume" while the page shows
# no Resume button.
WATCH_THE_HINT = """(() => {
  const check = () => {
    const box = document.getElementById("announce");
    if (!box || box.hidden || !box.textContent.includes("press Resume")) return;
    const resume = document.querySelector('button[data-action="resume"]');
    if (resume && resume.offsetParent !== null) return;
    const seen = JSON.parse(sessionStorage.getItem("hint-without-button") || "[]");
    seen.push(box.textContent);
    sessionStorage.setItem("hint-without-button", JSON.stringify(seen));
  };
  new MutationObserver(check).observe(document, {subtree: true, childList: true, characterData: true,
                                                 attributes: true});
})()"""


def test_press_resume_is_said_only_beside_a_resume_button(session, platform, mongo_rs):
    name = f"btrsh{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)
    _, page = session("admin")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    page.add_init_script(WATCH_THE_HINT)
    page.goto(f"/connectors/{name}/offsets/")
    assert not page.locator('button[data-action="resume"]').count()  # running: nothing to resume yet

    page.get_by_label("Stop it first").check()
    page.get_by_role("button", name="Reset offsets").click()
    page.wait_for_function("() => document.getElementById('announce').textContent.includes('press Resume') && "
                           "document.querySelector('button[data-action=\"resume\"]')", timeout=30_000)
    assert page.get_by_role("button", name="Resume", exact=True).is_visible()
    seen = page.evaluate("() => JSON.parse(sessionStorage.getItem('hint-without-button') || '[]')")
    assert seen == [], f"the page said 'press Resume' with no Resume button: {seen}"
