"""Malformed requests are answered with a 4xx that says what is wrong, never a 500: bodies that are not the
object an endpoint expects, values Python cannot encode, JSON nested deeper than any real document, and paths
under /static/ that try to leave it."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from tests.api_support import client_for, create_connector, make_user, sample_config

pytestmark = pytest.mark.django_db

VALIDATE = "/api/connectors/validate/"
CONNECT_VALIDATE = "/connect/connector-plugins/MongoDbConnector/config/validate"


@pytest.fixture
def admin(django_user_model, no_redis):
    client = client_for(make_user(django_user_model, "admin"))
    client.raise_request_exception = False
    return client


@pytest.mark.parametrize("body", ["{}", "", "[]", '{"name": 5}', '{"name": ["a"]}', "null", '"text"'])
def test_validate_answers_any_json_body_without_a_server_error(admin, body):
    response = admin.post(VALIDATE, body, content_type="application/json")
    assert response.status_code in (200, 400), response.content
    assert response.json()


def test_connect_create_with_an_initial_state_object_is_a_400(admin):
    body = {"name": "orders", "config": sample_config("orders"), "initial_state": {}}
    response = admin.post("/connect/connectors", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["message"] == "Invalid initial state {}; use RUNNING, PAUSED or STOPPED"


def test_lone_surrogate_in_a_connect_value_is_a_clear_400(admin):
    body = '{"topic.prefix": "shop\\ud800", "connector.class": "io.debezium.connector.mongodb.MongoDbConnector"}'
    response = admin.put(CONNECT_VALIDATE, body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "surrogate" in response.json()["message"] or "UTF-8" in response.json()["message"]


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(("method", "url"), [
    ("post", VALIDATE), ("post", "/api/connectors/"), ("put", CONNECT_VALIDATE), ("post", "/connect/connectors"),
    ("post", "/api/auth/token/"),
])
def test_json_nested_too_deep_is_a_400(admin, method, url):
    create_connector("orders", state="stopped")
    response = getattr(admin, method)(url, DEEP, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "nested" in response.content.decode()


def test_nested_json_of_a_sane_depth_still_parses(admin):
    body = '{"name": "n", "connector.class": ' + "[" * 30 + "]" * 30 + "}"
    assert admin.post(VALIDATE, body, content_type="application/json").status_code in (200, 400)


async def asgi_get(path: str) -> dict:
    """One GET through the ASGI application daphne serves (static files are answered before any middleware)."""
    from channels.testing import HttpCommunicator

    from cdcplatform.asgi import application

    communicator = HttpCommunicator(application, "GET", path, headers=[(b"host", b"127.0.0.1")])
    return await communicator.get_response(timeout=10)


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
@pytest.mark.parametrize("path", ["/static/..%2f..%2fcdcplatform/settings.py", "/static/..%2fmanage.py",
                                  "/static/%2e%2e/%2e%2e/etc/passwd", "/static/no-such-file.css"])
def test_static_outside_or_missing_is_a_plain_404_for_anyone(path, debug, settings):
    settings.DEBUG = debug
    response = async_to_sync(asgi_get)(path)
    assert response["status"] == 404, response["body"][:300]
    assert response["body"] == b"Not found.\n"


@pytest.mark.parametrize("accept", ["", "text/html", "application/xml;q=1", ";;"])
@pytest.mark.parametrize("path", ["/api/connectors/", "/connect/connectors", "/connect/connectors/orders/config"])
def test_an_accept_header_the_api_cannot_satisfy_still_gets_json(admin, path, accept):
    """The API writes JSON only; an empty or foreign Accept header is disregarded (HTTP allows it), not a 406."""
    create_connector("orders", state="stopped")
    response = admin.get(path, HTTP_ACCEPT=accept)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("application/json") and response.json() is not None
