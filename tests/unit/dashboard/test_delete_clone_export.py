"""Delete (with the offsets choice), clone and export a connector from the dashboard."""

from __future__ import annotations

import json

import pytest

from tests.api_support import SALT, SECRET, create_connector, make_user
from web.connectors import services
from web.connectors.models import AuditEntry, Connector

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _quiet(no_redis, monkeypatch):
    monkeypatch.setattr("workers.publish.history", lambda connector, rs: [])


def login(client, django_user_model, role):
    client.force_login(make_user(django_user_model, role))


def test_admin_sees_delete_clone_and_export(client, django_user_model):
    login(client, django_user_model, "admin")
    create_connector("orders")
    page = client.get("/connectors/orders/").content.decode()
    for action in ("delete", "clone", "export", "download"):
        assert f'data-action="{action}"' in page


def test_delete_keeps_offsets_by_default(client, django_user_model, monkeypatch):
    login(client, django_user_model, "admin")
    create_connector("orders")
    monkeypatch.setattr(services, "alter_offsets", lambda *a, **k: pytest.fail("offsets must be kept"))
    confirm = client.get("/connectors/orders/delete/").content.decode()
    assert 'value="keep" checked' in confirm and 'value="delete"' in confirm
    response = client.post("/connectors/orders/delete/", {"offsets": "keep"}, follow=True)
    assert not Connector.objects.exists()
    assert "its offsets were kept in Kafka" in response.content.decode()
    assert AuditEntry.objects.get(action="connector.delete").source == "dashboard"


def test_delete_with_offsets_writes_tombstones_after_stopping(client, django_user_model, monkeypatch):
    login(client, django_user_model, "admin")
    create_connector("orders")
    services.report_observed("orders", "rs0", worker="w1", phase="streaming")
    written = []
    monkeypatch.setattr(services, "read_offsets", lambda connector: {})
    monkeypatch.setattr(services, "alter_offsets", lambda connector, records, **k: written.extend(records))
    monkeypatch.setattr("workers.control.wait_until_stopped", lambda name, timeout: True)
    client.post("/connectors/orders/delete/", {"offsets": "delete"})
    assert [(r.connector, r.replica_set, r.to_value()) for r in written] == [("orders", "rs0", None)]
    assert not Connector.objects.exists()


def test_viewer_cannot_delete_or_clone(client, django_user_model):
    login(client, django_user_model, "viewer")
    create_connector("orders")
    assert client.post("/connectors/orders/delete/", {"offsets": "keep"}).status_code == 403
    assert client.post("/connectors/orders/clone/", {"name": "copy"}).status_code == 403
    assert Connector.objects.count() == 1


def test_clone_copies_secrets_and_filters_server_side(client, django_user_model):
    login(client, django_user_model, "admin")
    original = create_connector("orders")
    response = client.post("/connectors/orders/clone/", {"name": "orders-copy", "topic_prefix": "copy"})
    assert response.status_code == 302 and response["Location"] == "/connectors/orders-copy/edit/"
    clone = Connector.objects.get(name="orders-copy")
    assert clone.desired_state == "stopped" and clone.topic_prefix == "copy"
    assert clone.connection_string == original.connection_string and SECRET in clone.connection_string
    assert {(f.kind, f.value, f.salt) for f in clone.filters.all()} == {
        (f.kind, f.value, f.salt) for f in original.filters.all()}
    assert any(f.salt == SALT for f in clone.filters.all())
    bad = client.post("/connectors/orders/clone/", {"name": "orders"}, follow=True)
    assert "already exists" in bad.content.decode()


def test_export_is_the_connect_shape_with_secrets_masked(client, django_user_model):
    login(client, django_user_model, "viewer")
    create_connector("orders")
    response = client.get("/connectors/orders/config.json?download=1")
    assert response["Content-Disposition"] == 'attachment; filename="orders.json"'
    body = json.loads(response.content)
    assert set(body) == {"name", "config"} and body["name"] == "orders"
    assert body["config"]["connector.class"] == "io.debezium.connector.mongodb.MongoDbConnector"
    assert all(isinstance(value, str) for value in body["config"].values())
    assert SECRET not in response.content.decode() and SALT not in response.content.decode()
    from rest_framework.test import APIClient
    api = APIClient()
    api.force_authenticate(make_user(django_user_model, "admin"))
    assert api.get("/connect/connectors/orders/config").json() == body["config"]
