"""Small things a person notices: a disabled button looks disabled, destructive buttons are red, Restart is not
offered on a paused connector, a 404 speaks of what is missing (not of a model class), and at 390 px a table wider
than its card says that it scrolls."""

from __future__ import annotations

import pytest

from tests.browser.conftest import NARROW, create_connector, wait_streaming
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

BAD = "rgb(176, 0, 32)"  # --bad in dashboard.css
DISABLED_BACKGROUND, DISABLED_TEXT = "rgb(233, 236, 239)", "rgb(107, 119, 133)"  # button:disabled there


def style(locator, prop: str) -> str:
    return locator.evaluate("(node, prop) => getComputedStyle(node)[prop]", prop)


def test_buttons_say_what_they_do(session, platform, mongo_rs):
    name = f"btux{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)  # no signal collection: no ad-hoc snapshot
    _, page = session("admin")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    snapshot = page.locator('button[data-action="snapshot"]')
    pause = page.locator('button[data-action="pause"]')
    assert snapshot.is_disabled()
    assert style(snapshot, "backgroundColor") != style(pause, "backgroundColor")
    assert style(snapshot, "cursor") == "not-allowed"
    assert style(page.locator('a[data-action="delete"]'), "color") == BAD
    assert page.locator('button[data-action="restart"]').is_visible()
    pause.click()  # the confirmation is accepted
    page.locator('button[data-action="resume"]').wait_for()
    assert not page.locator('button[data-action="restart"]').is_visible()
    page.goto(f"/connectors/{name}/")  # also as the server renders it
    page.locator('button[data-action="resume"]').wait_for()
    assert not page.locator('button[data-action="restart"]').is_visible()
    page.goto(f"/connectors/{name}/delete/")
    assert style(page.locator('button[data-action="confirm-delete"]'), "backgroundColor") == BAD


def test_every_disabled_button_looks_disabled(session, platform, mongo_rs):
    """The red-outlined Stop snapshot too: its `danger secondary` style outranked the disabled style, so without a
    signal collection it stayed white with a red label, as when it can be pressed."""
    name = f"btuxd{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)  # no signal collection: no snapshot signal can be sent
    _, page = session("admin")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    disabled = page.locator("main button:disabled")
    labels = disabled.all_inner_texts()
    assert {"Snapshot", "Pause snapshot", "Resume snapshot", "Stop snapshot"} <= set(labels), labels
    looks = {(label, style(button, "backgroundColor"), style(button, "color"), style(button, "cursor"))
             for label, button in zip(labels, disabled.all(), strict=True)}
    assert {look[1:] for look in looks} == {(DISABLED_BACKGROUND, DISABLED_TEXT, "not-allowed")}, looks


def test_a_missing_connector_is_named_not_its_model(session, platform):
    current, page = session("viewer")
    response = page.goto("/connectors/no-such-connector-here/")
    assert response.status == 404
    current.errors[:] = [e for e in current.errors if "status of 404" not in e]  # the browser logs the 404 itself
    text = page.locator("main").inner_text()
    assert "matches the given query" not in text and "Connector matches" not in text
    assert "There is no such connector" in text


def test_a_table_wider_than_its_card_says_it_scrolls(session, platform, mongo_rs):
    name = f"btuxw{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)
    _, page = session("viewer", NARROW)
    page.goto(f"/connectors/{name}/")
    page.locator("#activity table.activity").wait_for()
    box = page.locator("#activity")
    page.wait_for_function("() => document.querySelector('#activity').classList.contains('overflows')",
                           timeout=10_000)
    assert box.evaluate("node => node.scrollWidth > node.clientWidth")
    assert page.locator("#activity + .scroll-hint").inner_text().startswith("Scroll sideways")
