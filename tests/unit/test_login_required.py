"""Login required everywhere, except the login page, /healthz, static files and the APIs (which answer 401/403)."""

from __future__ import annotations

import pytest

from web.accounts.middleware import is_exempt

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/", "/admin/", "/no/such/page"])
def test_anonymous_is_redirected_to_login(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={path}"


def test_healthz_is_open_and_json(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_login_page_is_open(client):
    response = client.get("/login/")
    assert response.status_code == 200
    assert b'name="password"' in response.content


def test_api_answers_401_instead_of_redirecting(client):
    response = client.get("/api/schema/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_logged_in_user_sees_home(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("bob"))
    response = client.get("/")
    assert response.status_code == 200
    assert b"CDC platform" in response.content


def test_login_then_logout(client, django_user_model):
    django_user_model.objects.create_user("carol", password="a-long-test-password")
    response = client.post("/login/", {"username": "carol", "password": "a-long-test-password", "next": "/"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200
    client.post("/logout/")
    assert client.get("/").status_code == 302


@pytest.mark.parametrize(
    ("path", "exempt"),
    [("/healthz", True), ("/healthz/x", False), ("/api/v1/connectors", True), ("/api", False),
     ("/connect/connectors", True), ("/static/app.css", True), ("/staticx", False)],
)
def test_exempt_entries_are_exact_or_slash_prefixes(path, exempt):
    assert is_exempt(path, ["/healthz", "/api/", "/connect/", "/static/"]) is exempt
