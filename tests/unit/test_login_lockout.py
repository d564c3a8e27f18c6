"""Password guessing is locked out (django-axes) on every way in that takes a password: the login page,
POST /api/auth/token/ and HTTP Basic on /connect/. The tenth failure for one user name from one address, and then
even the right password, is refused with a 429 saying how long the lock lasts; other users and other addresses
are not affected, and `manage.py axes_reset_username` lifts the lock."""

from __future__ import annotations

import base64

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client

from tests.api_support import make_user

pytestmark = pytest.mark.django_db
PASSWORD = "Right-pass-42"  # noqa: S105 - test password
LOCKED = "Too many failed logins for this user name from your address; try again in 15 minutes or ask an admin"


@pytest.fixture(autouse=True)
def _fast_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def user(django_user_model):
    user = make_user(django_user_model, "viewer")
    user.set_password(PASSWORD)
    user.save()
    return user


def login_page(client, username, password):
    return client.post("/login/", {"username": username, "password": password})


def token(client, username, password):
    return client.post("/api/auth/token/", {"username": username, "password": password},
                       content_type="application/json")


def connect_basic(client, username, password):
    credentials = base64.b64encode(f"{username}:{password}".encode()).decode()
    return client.get("/connect/connectors", HTTP_AUTHORIZATION=f"Basic {credentials}")


def succeeded(way, response) -> bool:
    if way is login_page:
        return response.status_code == 302
    return response.status_code == 200


@pytest.mark.parametrize("way", [login_page, token, connect_basic], ids=["login", "token", "connect"])
def test_ten_failures_lock_the_user_name_from_that_address(way, user, django_user_model):
    client = Client(REMOTE_ADDR="203.0.113.7")
    for attempt in range(9):
        response = way(client, user.username, f"wrong-{attempt}")
        assert not succeeded(way, response) and response.status_code != 429, attempt
    assert way(client, user.username, "wrong-9").status_code == 429  # the tenth failure locks
    refused = way(client, user.username, PASSWORD)  # the right password, too late
    assert refused.status_code == 429
    assert LOCKED in refused.content.decode()
    assert refused["Retry-After"] == "900"
    if way is connect_basic:
        assert refused.json()["error_code"] == 429
    elif way is token:
        assert "token" not in refused.json()

    assert succeeded(way, way(Client(REMOTE_ADDR="198.51.100.9"), user.username, PASSWORD))  # another address
    other = django_user_model.objects.create_user("someone-else", password=PASSWORD)
    other.groups.add(Group.objects.get(name="viewer"))
    assert succeeded(way, way(client, other.username, PASSWORD))  # another user name from the same address

    call_command("axes_reset_username", user.username)
    assert succeeded(way, way(client, user.username, PASSWORD))


def test_a_login_before_the_limit_starts_the_count_again(user):
    client = Client(REMOTE_ADDR="203.0.113.8")
    for attempt in range(9):
        login_page(client, user.username, f"wrong-{attempt}")
    assert login_page(client, user.username, PASSWORD).status_code == 302
    client.logout()
    for attempt in range(9):
        assert login_page(client, user.username, f"wrong-{attempt}").status_code == 200
    assert login_page(client, user.username, PASSWORD).status_code == 302


def test_the_login_page_says_why(user):
    client = Client(REMOTE_ADDR="203.0.113.9")
    for attempt in range(10):
        login_page(client, user.username, f"wrong-{attempt}")
    page = login_page(client, user.username, PASSWORD).content.decode()
    assert LOCKED in page and 'name="password"' in page and "did not match" not in page
