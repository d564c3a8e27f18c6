"""Resume tokens, snapshot progress and pending resets are shown as canonical JSON (what the token field and the API
accept), never as Python reprs, with a copy button on the dashboard's offsets page and plain JSON in the admin's."""

from __future__ import annotations

import html
import json

import pytest
from bson import Timestamp

from connectors.kafka import OffsetRecord
from tests.api_support import create_connector, make_user
from web.connectors import services

pytestmark = pytest.mark.django_db

TOKEN = {"_data": "8265A1B2C3000000012B0229296E04"}


@pytest.fixture
def stored(no_redis, monkeypatch):
    connector = create_connector("orders", state="stopped")
    record = OffsetRecord(connector="orders", replica_set="rs0", resume_token=TOKEN,
                          cluster_time=Timestamp(1705096899, 1),
                          startup={"mode": "timestamp", "timestamp": Timestamp(1705096800, 0),
                                   "requested_by": "alice"})
    monkeypatch.setattr(services, "read_offsets", lambda c: {"rs0": record})
    return connector


def codes(page: str) -> list[str]:
    return [html.unescape(part.split(">", 1)[1].split("</code>", 1)[0]) for part in page.split("<code")[1:]]


def test_dashboard_offsets_page_shows_json_with_copy_buttons(client, django_user_model, stored):
    client.force_login(make_user(django_user_model, "admin"))
    page = client.get("/connectors/orders/offsets/").content.decode()
    shown = codes(page)
    assert json.dumps(TOKEN) in shown
    pending = next(json.loads(text) for text in shown if "requested_by" in text)
    assert pending["timestamp"]["t"] == 1705096800 and pending["mode"] == "timestamp"
    assert "{'_data'" not in html.unescape(page)
    assert 'data-copy="#token-1"' in page and 'data-copy="#reset-1"' in page


def test_admin_offsets_page_shows_json(client, django_user_model, stored):
    user = make_user(django_user_model, "admin")
    user.is_staff = True
    user.save()
    client.force_login(user)
    page = client.get(f"/admin/connectors/connector/{stored.pk}/offsets/").content.decode()
    assert json.dumps(TOKEN) in codes(page)
    assert "{'_data'" not in html.unescape(page) and "{'mode'" not in html.unescape(page)
