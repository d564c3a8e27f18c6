"""Dates in the one format of every page (YYYY-MM-DD HH:MM:SS): a connector's pending offset reset on its offsets
page (the time it resets to and when it was asked, not the stored JSON's ISO string and epoch milliseconds, which
stay under "As stored"), and the admin's lists and offsets page (not Django's "Nov. 29, 2026, 8:14 a.m.")."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import PASSWORD, screenshot
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration]

RESET_TO_MS = 1704067200000  # 2024-01-01T00:00:00Z
ASKED_AT_MS = 1704067260000  # a minute later
DATETIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


@pytest.fixture
def pending_reset(platform):
    """A stopped MongoDB connector whose replica set rs0 has a committed position and a pending timestamp reset;
    (name, primary key)."""
    name = f"btdates{tagged_suffix()}"
    properties = {"name": name, "topic.prefix": name, "offset.storage.topic": f"{name}.offsets",
                  "mongodb.connection.string": "mongodb://127.0.0.1:1/?replicaSet=rs0"}
    pk = platform.django(
        "from bson import Timestamp\n"
        "from django.contrib.auth.models import Group, User\n"
        "from connectors.kafka import OffsetRecord\n"
        "from web.connectors import drafts, services\n"
        "from web.connectors import offsets as offset_views\n"
        f"connector = services.create_connector(drafts.prepare({properties!r}), user=None, source='system',\n"
        "                                       desired_state='stopped')\n"
        "offset_views.store_for(connector).write(OffsetRecord(\n"
        f"    {name!r}, 'rs0', resume_token={{'_data': '8265A1B2C3000000072B022C0100296E5A1004'}},\n"
        f"    startup={{'mode': 'timestamp', 'timestamp': Timestamp({RESET_TO_MS // 1000}, 0),\n"
        f"             'requested_by': 'bt-staffdates', 'requested_at_ms': {ASKED_AT_MS}}}))\n"
        "staff, _ = User.objects.get_or_create(username='bt-staffdates', defaults={'is_staff': True})\n"
        f"staff.set_password({PASSWORD!r})\n"
        "staff.save()\n"
        "staff.groups.add(Group.objects.get(name='admin'))\n"
        "print(connector.pk)\n"
    ).strip().splitlines()[-1]
    yield name, int(pk)
    platform.django(
        "from web.connectors import services\n"
        "from web.connectors.models import Connector\n"
        f"services.delete_connector(Connector.objects.get(name={name!r}), user=None, source='system')\n")


def test_pending_reset_and_admin_dates_use_the_one_format(session, pending_reset):
    name, pk = pending_reset
    current, page = session("staffdates")  # an admin with the admin site (is_staff)
    page.goto(f"/connectors/{name}/offsets/")
    cell = page.locator('tr[data-rs="rs0"] td[data-label="Pending reset"]')
    cell.wait_for()
    reset_to, asked_at = page.evaluate(f"[{RESET_TO_MS}, {ASKED_AT_MS}].map((ms) => window.cdcFormat.datetime(ms))")
    shown = cell.inner_text()
    assert shown.splitlines()[0] == f"timestamp from {reset_to}, asked by bt-staffdates at {asked_at}", shown
    assert "2024-01-01T" not in shown and str(ASKED_AT_MS) not in shown  # the stored JSON is folded away
    screenshot(page, "offsets-pending-reset-dates")

    page.goto("/admin/connectors/connector/")
    row = page.locator("#result_list tr", has_text=name)
    assert DATETIME.search(row.inner_text()), row.inner_text()
    assert not re.search(r"\b(a\.m\.|p\.m\.)", row.inner_text())

    page.goto(f"/admin/connectors/connector/{pk}/offsets/")
    positions = page.locator("#positions tbody tr").first.inner_text()
    assert "timestamp from 2024-01-01 00:00:00, asked by bt-staffdates at 2024-01-01 00:01:00" in positions, positions
    assert "2024-01-12 21:44:35" in positions  # the cluster time of the resume token, the server's zone (UTC)
    assert "2024-01-12T21:44:35Z" not in positions and str(ASKED_AT_MS) not in positions
    screenshot(page, "admin-offsets-dates")
