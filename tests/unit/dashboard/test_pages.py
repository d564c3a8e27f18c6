"""Dashboard pages without the stack: roles, the connector form (through the API's serializer), /metrics auth."""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from tests.api_support import SECRET, create_connector, make_user
from web.connectors.models import AuditEntry, Connector, ReplicaSetState
from web.dashboard.forms import ConnectorForm, parse_other

pytestmark = pytest.mark.django_db

FORM = {
    "name": "shop-orders",
    "topic_prefix": "shop",
    "connection_string": "mongodb://db1:27017/?replicaSet=rs0",
    "snapshot_mode": "initial",
    "collection_include": "inventory\\.orders\ninventory\\.c{1,3}",
    "skipped_operations": ["t"],
    "other": "# comment\ncapture.mode=change_streams_update_full\npoll.interval.ms=200",
    "start": "on",
}


@pytest.fixture(autouse=True)
def _quiet_redis(no_redis, monkeypatch):
    monkeypatch.setattr("workers.publish.history", lambda connector, rs: [])


def login(client, django_user_model, role):
    user = make_user(django_user_model, role)
    client.force_login(user)
    return user


def test_form_builds_the_api_body():
    form = ConnectorForm(FORM)
    assert form.is_valid(), form.errors
    assert form.api_body() == {
        "name": "shop-orders", "topic_prefix": "shop", "connection_string": "mongodb://db1:27017/?replicaSet=rs0",
        "desired_state": "running",
        "config": {"capture.mode": "change_streams_update_full", "poll.interval.ms": "200", "snapshot.mode": "initial",
                   "collection.include.list": ["inventory\\.orders", "inventory\\.c{1,3}"],
                   "skipped.operations": ["t"]},
    }


def test_parse_other_reports_lines_without_equals():
    found, bad = parse_other("a=1\n\n#x\nb = two=2\nnonsense")
    assert found == {"a": "1", "b": "two=2"}
    assert bad == ['line 5: expected key=value, got "nonsense"']


def test_admin_creates_a_connector_through_the_form(client, django_user_model):
    login(client, django_user_model, "admin")
    response = client.post("/connectors/new/", FORM)
    assert response.status_code == 302 and response["Location"] == "/connectors/shop-orders/"
    connector = Connector.objects.get(name="shop-orders")
    assert connector.properties["capture.mode"] == "change_streams_update_full"
    values = sorted(connector.filters.values_list("value", flat=True))
    assert values == ["inventory\\.c{1,3}", "inventory\\.orders", "t"]
    assert AuditEntry.objects.get(action="connector.create").source == "dashboard"


def test_bad_regex_is_shown_next_to_its_field(client, django_user_model):
    login(client, django_user_model, "admin")
    response = client.post("/connectors/new/", {**FORM, "collection_include": "inventory.(orders"})
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "not a valid regular expression" in errors["collection_include"][0]
    assert not Connector.objects.exists()


def test_unknown_property_problem_lands_on_other(client, django_user_model):
    login(client, django_user_model, "admin")
    response = client.post("/connectors/new/", {**FORM, "other": "poll.interval.ms=-5"})
    assert response.status_code == 400
    assert response.context["form"].errors["other"]


def test_edit_keeps_secrets_and_removes_cleared_lists(client, django_user_model):
    login(client, django_user_model, "admin")
    create_connector("orders")
    form = client.get("/connectors/orders/edit/").context["form"]
    assert SECRET not in str(form.initial)
    data = {**{k: v for k, v in form.initial.items() if v is not None}, "collection_include": ""}
    data["other"] = data["other"] + "\npoll.interval.ms=250"
    response = client.post("/connectors/orders/edit/", data)
    assert response.status_code == 302, response.context["form"].errors
    connector = Connector.objects.get(name="orders")
    assert SECRET in connector.connection_string
    assert not connector.filters.filter(kind="collection_include").exists()
    assert connector.properties["poll.interval.ms"] == "250"


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_forms_need_admin(client, django_user_model, role):
    login(client, django_user_model, role)
    create_connector("orders")
    assert client.get("/connectors/new/").status_code == 403
    assert client.post("/connectors/new/", FORM).status_code == 403
    assert client.get("/connectors/orders/edit/").status_code == 403
    assert client.get("/connectors/orders/offsets/").status_code == 403
    assert not Connector.objects.filter(name="shop-orders").exists()


def test_viewer_sees_no_buttons(client, django_user_model):
    login(client, django_user_model, "viewer")
    create_connector("orders")
    page = client.get("/connectors/orders/").content.decode()
    assert "data-action" not in page and "data-api" not in page
    overview = client.get("/").content.decode()
    assert "/connectors/new/" not in overview


def test_operator_sees_state_buttons_not_admin_ones(client, django_user_model):
    login(client, django_user_model, "operator")
    create_connector("orders")
    page = client.get("/connectors/orders/").content.decode()
    assert 'data-action="pause"' in page and 'data-action="snapshot"' in page
    assert 'data-action="edit"' not in page and 'data-action="offsets"' not in page


def test_user_without_role_sees_whom_to_ask(client, django_user_model):
    login(client, django_user_model, "none")
    create_connector("orders")
    assert b"without a role" in client.get("/").content
    assert client.get("/connectors/orders/").status_code == 403


def test_overview_and_detail_render_reports(client, django_user_model):
    login(client, django_user_model, "viewer")
    connector = create_connector("orders")
    ReplicaSetState.objects.create(
        connector=connector, replica_set="rs0", phase="streaming", since=timezone.now(), heartbeat_at=timezone.now(),
        metrics={"metrics": {"TotalNumberOfEventsSeen": 4321, "EventsPerSecond": 3.5, "MilliSecondsBehindSource": 1500,
                             "NumberOfPrimaryElections": 2, "Members": ["h1:1", "h2:2"], "Primary": "h2:1"},
                 "snapshot": {"SnapshotKind": "initial", "SnapshotRunning": True,
                              "Collections": {"inventory.orders": {"chunks_total": 4, "chunks_done": 3, "rows": 30,
                                                                   "estimated_rows": 40}}}})
    overview = client.get("/").content.decode()
    assert "4\u202f321" in overview and "3.5/s" in overview and "1.5 s" in overview
    assert 'data-status="running"' in overview
    detail = client.get("/connectors/orders/").content.decode()
    assert 'value="75"' in detail and "Snapshot progress of inventory.orders" in detail


def test_metrics_needs_a_viewer_token_or_session(client, django_user_model):
    create_connector("orders")
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics").headers["WWW-Authenticate"].startswith("Bearer")
    viewer = make_user(django_user_model, "viewer")
    token = Token.objects.create(user=viewer)
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token.key}")
    assert response.status_code == 200
    assert 'cdc_connector_desired_state{connector="orders",state="running"} 1.0' in response.content.decode()
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    nobody = make_user(django_user_model, "none")
    nobody_token = Token.objects.create(user=nobody).key
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Token {nobody_token}").status_code == 403
    client.force_login(viewer)
    assert client.get("/metrics").status_code == 200
