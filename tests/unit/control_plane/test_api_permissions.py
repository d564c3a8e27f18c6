"""Every endpoint of /api/ and /connect/ against every role: anonymous callers get 401, roles below the one an
endpoint needs get 403, the others get through. Kafka and Redis are replaced by stubs (the integration tests use
the real ones); only the permission decision is under test here."""

from __future__ import annotations

import pytest

from tests.api_support import ROLES, client_for, create_connector, make_user
from web.connectors import connectivity, services
from web.connectors.models import DesiredState

pytestmark = pytest.mark.django_db

RANK = {None: 0, "none": 1, "viewer": 2, "operator": 3, "admin": 4}
NEW = {"name": "fresh", "topic_prefix": "fresh", "connection_string": "mongodb://h:27017/?replicaSet=rs0"}
CONNECT_NEW = {"name": "fresh", "config": {"topic.prefix": "fresh",
                                           "mongodb.connection.string": "mongodb://h:27017/?replicaSet=rs0"}}
TOKEN = {"_data": "8265A1B2C3000000012B0229296E04"}
OFFSETS = {"offsets": [{"partition": {"rs": "rs0"}, "offset": {"resume_token": TOKEN}}]}

# (method, path, body, the weakest role allowed; "any" = any authenticated user)
ENDPOINTS = [
    ("get", "/api/connectors/", None, "viewer"),
    ("post", "/api/connectors/", NEW, "admin"),
    ("post", "/api/connectors/validate/", NEW, "viewer"),
    ("get", "/api/connectors/orders/", None, "viewer"),
    ("put", "/api/connectors/orders/", {"name": "orders", "topic_prefix": "shop"}, "admin"),
    ("patch", "/api/connectors/orders/", {"config": {"max.batch.size": 5}}, "admin"),
    ("delete", "/api/connectors/orders/", None, "admin"),
    ("post", "/api/connectors/orders/validate/", {}, "viewer"),
    ("post", "/api/connectors/orders/pause/", None, "operator"),
    ("post", "/api/connectors/orders/resume/", None, "operator"),
    ("post", "/api/connectors/orders/stop/", None, "operator"),
    ("post", "/api/connectors/orders/restart/", {}, "operator"),
    ("post", "/api/connectors/orders/snapshot/", {"collections": ["inventory.orders"]}, "operator"),
    ("post", "/api/connectors/orders/snapshot/stop/", {}, "operator"),
    ("post", "/api/connectors/orders/snapshot/pause/", None, "operator"),
    ("post", "/api/connectors/orders/snapshot/resume/", None, "operator"),
    ("post", "/api/connectors/orders/log-level/", {"level": "DEBUG"}, "operator"),
    ("post", "/api/connectors/tables/", NEW, "operator"),
    ("post", "/api/connectors/orders/tables/", {}, "operator"),
    ("get", "/api/connectors/orders/status/", None, "viewer"),
    ("get", "/api/connectors/orders/activity/", None, "viewer"),
    ("get", "/api/connectors/orders/offsets/", None, "viewer"),
    ("post", "/api/connectors/orders/offsets/reset/", {"mode": "latest"}, "admin"),
    ("get", "/api/connectors/orders/filters/", None, "viewer"),
    ("post", "/api/connectors/orders/filters/", {"kind": "field_exclude", "value": "a.b.c"}, "admin"),
    ("get", "/api/connectors/orders/filters/{filter}/", None, "viewer"),
    ("put", "/api/connectors/orders/filters/{filter}/", {"kind": "collection_include", "value": "a.b"}, "admin"),
    ("patch", "/api/connectors/orders/filters/{filter}/", {"value": "a.c"}, "admin"),
    ("delete", "/api/connectors/orders/filters/{filter}/", None, "admin"),
    ("get", "/api/audit/", None, "viewer"),
    ("get", "/api/me/", None, "any"),
    ("get", "/api/schema/", None, "any"),
    ("get", "/connect/", None, "viewer"),
    ("get", "/connect/connector-plugins", None, "viewer"),
    ("put", "/connect/connector-plugins/MongoDbConnector/config/validate", {"name": "x"}, "viewer"),
    ("get", "/connect/connectors", None, "viewer"),
    ("post", "/connect/connectors", CONNECT_NEW, "admin"),
    ("get", "/connect/connectors/orders", None, "viewer"),
    ("delete", "/connect/connectors/orders", None, "admin"),
    ("get", "/connect/connectors/orders/config", None, "viewer"),
    ("put", "/connect/connectors/orders/config", {"topic.prefix": "shop",
                                                 "mongodb.connection.string": "mongodb://h:1"}, "admin"),
    ("get", "/connect/connectors/orders/status", None, "viewer"),
    ("get", "/connect/connectors/orders/tasks", None, "viewer"),
    ("post", "/connect/connectors/orders/restart", None, "operator"),
    ("put", "/connect/connectors/orders/pause", None, "operator"),
    ("put", "/connect/connectors/orders/resume", None, "operator"),
    ("put", "/connect/connectors/orders/stop", None, "operator"),
    ("get", "/connect/connectors/orders/offsets", None, "viewer"),
    ("patch", "/connect/connectors/orders/offsets", OFFSETS, "admin"),
    ("delete", "/connect/connectors/orders/offsets", None, "admin"),
]


@pytest.fixture
def stubbed_kafka(monkeypatch):
    monkeypatch.setattr(services, "read_offsets", lambda connector: {})
    monkeypatch.setattr(services, "reset_offsets", lambda *a, **k: [])
    monkeypatch.setattr(services, "alter_offsets", lambda *a, **k: None)
    monkeypatch.setattr(connectivity, "list_tables", lambda parts, request: {"tables": [], "total": 0,
                                                                              "captured": 0})


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r))
@pytest.mark.parametrize(("method", "path", "body", "needs"), ENDPOINTS, ids=lambda v: v if isinstance(v, str) else "")
def test_role_limits(django_user_model, no_redis, stubbed_kafka, settings, role, method, path, body, needs):
    if "/tables/" in path:  # the table preview answers 409 while connection checks are off
        settings.CDC_CONNECTIVITY_CHECK_MS = 1000
    if "/snapshot/" in path or path.endswith(("/restart/", "/restart", "/log-level/")):  # for running pipelines
        connector = create_connector(**{"signal.data.collection": "inventory.signals"})
    else:
        connector = create_connector(state=DesiredState.STOPPED)
    row = connector.filters.filter(kind="collection_include").first()
    client = client_for(make_user(django_user_model, role))
    response = getattr(client, method)(path.format(filter=row.pk), body, format="json")
    if role is None:
        assert response.status_code == 401, response.content
        assert response.has_header("WWW-Authenticate")
    elif needs != "any" and RANK[role] < RANK[needs]:
        assert response.status_code == 403, response.content
    else:
        assert response.status_code < 300, (response.status_code, response.content)


def test_the_connect_surface_answers_errors_in_its_own_shape(django_user_model, no_redis):
    create_connector()
    viewer = client_for(make_user(django_user_model, "viewer"))
    denied = viewer.put("/connect/connectors/orders/pause")
    assert denied.status_code == 403
    assert denied.json() == {"error_code": 403, "message": "This needs the operator role."}
    anonymous = client_for(None).get("/connect/connectors")
    assert anonymous.status_code == 401 and anonymous.json()["error_code"] == 401
    assert anonymous["WWW-Authenticate"].startswith("Basic")


def test_token_and_basic_authentication(django_user_model, no_redis):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    create_connector()
    user = make_user(django_user_model, "viewer")
    token = Token.objects.create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get("/api/connectors/").status_code == 200
    assert client.get("/connect/connectors").json() == ["orders"]
    client.credentials(HTTP_AUTHORIZATION="Token wrong")
    assert client.get("/api/connectors/").status_code == 401
