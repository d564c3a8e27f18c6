"""Issue 13.15 in a real browser: the detail page's activity log shows what was asked and what the pipeline did
(request, phase change, outcome with the pipeline's reason), with times in the page's format."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import (
    create_connector,
    record_socket_messages,
    screenshot,
    wait_for_socket_message,
    wait_streaming,
)
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_the_activity_log_shows_a_pause_from_request_to_outcome(session, platform, mongo_rs):
    name = f"btact{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)
    _, page = session("operator")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    log = page.locator("#activity")
    log.locator('tr[data-kind="state"]', has_text="streaming").first.wait_for(timeout=15_000)

    page.get_by_role("button", name="Pause", exact=True).click()
    log.locator('tr[data-kind="request"]', has_text="pause requested").wait_for(timeout=15_000)
    outcome = log.locator('tr[data-kind="outcome"]', has_text="pause done")
    outcome.wait_for(timeout=30_000)
    assert "stopped after committing its position" in outcome.inner_text()
    log.locator('tr[data-kind="state"]', has_text="streaming → stopped").wait_for(timeout=15_000)
    assert "pause sent to 1 listening pipeline" in log.locator('tr[data-kind="sent"]').first.inner_text()
    assert "bt-operator" in log.locator('tr[data-kind="request"]', has_text="pause requested").inner_text()
    for when in log.locator("time").all_inner_texts():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", when), when
    screenshot(page, "activity-log")


def test_a_failed_replica_set_stays_failed_on_the_pages_when_it_stops_reporting(session, platform, mongo_rs):
    """Issue 13.2: the pages' live phase is the state model's: a failed pipeline without reports is failed (the
    pages once said stale while Connect said FAILED), and a replica set that does not run is "not connected"."""
    name = f"btfail{tagged_suffix()}"
    properties = {"name": name, "topic.prefix": name, "mongodb.connection.string": mongo_rs.uri,
                  "database.include.list": name, "offset.storage.topic": f"{name}.offsets"}
    platform.django(
        "import datetime\n"
        "from django.utils import timezone\n"
        "from web.connectors import drafts, services\n"
        "from web.connectors.models import ReplicaSetState\n"
        f"services.create_connector(drafts.prepare({properties!r}), user=None, source='system',"
        " desired_state='paused')\n"
        "report = {'final': False, 'metrics': {'phase': 'streaming', 'Connected': True, 'Members': ['db1:27017']}}\n"
        f"services.report_observed({name!r}, 'rs0', worker='w1', phase='streaming', metrics=report)\n"
        f"services.report_observed({name!r}, 'rs0', worker='w1', phase='failed', error='Kafka unreachable')\n"
        "ReplicaSetState.objects.filter(connector__name="
        f"{name!r}).update(heartbeat_at=timezone.now() - datetime.timedelta(seconds=60))\n"
    )
    _, page = session("viewer")
    record_socket_messages(page)
    page.goto("/")
    wait_for_socket_message(page, "connectors")  # the hello and the first summary (sent right after it) applied
    row = page.locator(f'tr[data-connector="{name}"]')
    assert "rs0: failed" in row.inner_text() and "stale" not in row.inner_text(), row.inner_text()
    page.goto(f"/connectors/{name}/")
    wait_for_socket_message(page, "connectors")
    card = page.locator('[data-rs$="/rs0"]')
    assert card.locator('[data-bind="phase"]').inner_text() == "failed"
    assert card.locator('[data-bind="members"]').inner_text() == "not connected (failed)"
    assert page.request.get(f"/connect/connectors/{name}/status").json()["tasks"][0]["state"] == "FAILED"
