"""The MongoDB connector form's live preview of the collections its lists capture, in a real browser: it follows
the lists as they change (the connector's NamespaceFilter deciding on the server), on the edit page too, where the
stored connection is used. (The PostgreSQL form's preview is walked in test_postgres_walk.py.)"""

from __future__ import annotations

import json

import pymongo
import pytest

from tests.browser.conftest import screenshot
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def captured(page, name: str, value: bool, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(
        "([name, value]) => document.querySelector(`#table-preview-list li[data-table=\"${name}\"]`)"
        "?.dataset.captured === value", arg=[name, str(value).lower()], timeout=timeout_ms)


def new_form(session, mongo_rs, name: str):
    """An admin's New connector page with the name, topic prefix and the replica set's connection string filled."""
    _, page = session("admin")
    page.goto("/connectors/new/")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Topic prefix").fill(name)
    page.get_by_label("Connection string").fill(mongo_rs.uri)
    return page


def test_the_mongodb_form_previews_the_collections_its_lists_capture(session, platform, mongo_rs):
    name = f"btprev{tagged_suffix()}"
    client = pymongo.MongoClient(mongo_rs.uri)
    for collection in ("orders", "customers"):
        client[name][collection].insert_one({"_id": 1})
    client.close()
    page = new_form(session, mongo_rs, name)
    page.get_by_label("Database include").fill(name)
    captured(page, f"{name}.orders", True)
    captured(page, f"{name}.customers", True)
    page.get_by_label("Collection exclude").fill(f"{name}\\.customers")
    captured(page, f"{name}.customers", False)
    screenshot(page, "form-collection-preview")
    page.get_by_label("Other properties").fill(f"offset.storage.topic={name}.offsets")
    page.get_by_label("Start the connector now").uncheck()
    page.get_by_role("button", name="Create connector").click()
    page.wait_for_url(f"**/connectors/{name}/", timeout=60_000)

    page.goto(f"/connectors/{name}/edit/")
    page.get_by_label("Collection exclude").fill("")
    captured(page, f"{name}.customers", True)


def test_the_preview_lists_the_configuration_the_live_check_found_valid(session, platform, mongo_rs):
    """The live check's answer arrives after the form changed (here: held until an invalid line is typed): the
    preview lists the body that was checked, not the newer one, which the server would refuse (a 400 the page logs
    as an error)."""
    name = f"btprace{tagged_suffix()}"
    client = pymongo.MongoClient(mongo_rs.uri)
    client[name].orders.insert_one({"_id": 1})
    client.close()
    page = new_form(session, mongo_rs, name)
    held = []
    page.route("**/api/connectors/validate/", lambda route: held.append(route))
    page.get_by_label("Database include").fill(name)
    deadline_ms = 30_000
    while not held and deadline_ms > 0:  # gate: the check of the valid configuration is in flight
        page.wait_for_timeout(100)
        deadline_ms -= 100
    assert held, "the live check did not ask"
    previews = []
    page.on("request", lambda request: "/api/connectors/tables/" in request.url and previews.append(request))
    page.get_by_label("Other properties").evaluate("(area) => { area.value = 'poll.interval.ms=-1'; }")
    for route in held:
        route.continue_()
    page.unroute("**/api/connectors/validate/")
    captured(page, f"{name}.orders", True)
    assert previews and all("poll.interval.ms" not in (request.post_data or "") for request in previews)


def test_a_check_the_server_did_not_run_now_is_asked_again_without_a_keystroke(session, platform, mongo_rs):
    """Past the user's rate of connection checks the server answers "not now" with `retry_after_s`
    (tests/integration/control_plane/test_connectivity_bounds.py shows it does). Here the check of the finished form
    gets that answer: the form asks again by itself when told, and the preview follows, with nothing typed."""
    name = f"btpwait{tagged_suffix()}"
    client = pymongo.MongoClient(mongo_rs.uri)
    client[name].orders.insert_one({"_id": 1})
    client.close()
    page = new_form(session, mongo_rs, name)
    not_now, asked_after = [], []

    def answer(route):
        if not_now:
            asked_after.append(route.request.post_data)
            route.continue_()
            return
        if name not in (route.request.post_data or "").split('"database.include.list"')[-1]:
            route.continue_()  # a check of the form before its last line was typed
            return
        not_now.append(route.request.post_data)
        route.fulfill(status=200, content_type="application/json", body=json.dumps({
            "valid": False, "error_count": 1, "connection_checked": False, "retry_after_s": 2,
            "problems": [{"property": "", "field": "", "message": "too many connection checks (20/min); "
                                                                  "try again in 2 s"}]}))

    page.route("**/api/connectors/validate/", answer)
    page.get_by_label("Database include").fill(name)
    page.get_by_text("Checking again in 2 s").wait_for(timeout=30_000)
    captured(page, f"{name}.orders", True)
    assert not_now and asked_after, (not_now, asked_after)
    page.unroute("**/api/connectors/validate/")
