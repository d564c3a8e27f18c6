"""API tokens are stored hashed: the database holds a SHA-256 digest and the first 8 characters, never the key. A
key works on /api/, /connect/ and /metrics; a token written in clear into DRF's table (drf_create_token, old
scripts) is converted at once and keeps working; migration 0002 converts the clear tokens of an existing
database the same way."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from rest_framework.authtoken.models import Token as ClearToken
from rest_framework.test import APIClient

from tests.api_support import make_user, no_redis  # noqa: F401 - fixture
from web.accounts.models import ApiToken

PASSWORD = "Token-pass-42"  # noqa: S105 - test password


pytestmark = pytest.mark.usefixtures("no_redis")


@pytest.fixture(autouse=True)
def _fast_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def works_everywhere(key: str) -> bool:
    client = APIClient()
    answers = [client.get("/api/me/", HTTP_AUTHORIZATION=f"Token {key}").status_code,
               client.get("/connect/connectors", HTTP_AUTHORIZATION=f"Token {key}").status_code,
               client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {key}").status_code]
    return answers == [200, 200, 200]


def stored_anywhere(key: str) -> list[str]:
    """Tables holding the key in clear (every text column of every table)."""
    found = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            for column in connection.introspection.get_table_description(cursor, table):
                cursor.execute(f'SELECT COUNT(*) FROM "{table}" WHERE CAST("{column.name}" AS TEXT) LIKE %s',  # noqa: S608
                               [f"%{key}%"])
                if cursor.fetchone()[0]:
                    found.append(f"{table}.{column.name}")
    return found


@pytest.mark.django_db
def test_issued_key_works_and_is_stored_hashed(django_user_model):
    user = make_user(django_user_model, "viewer")
    user.set_password(PASSWORD)
    user.save()
    answer = APIClient().post("/api/auth/token/", {"username": user.username, "password": PASSWORD}, format="json")
    assert answer.status_code == 200
    key = answer.json()["token"]
    assert len(key) == 40 and works_everywhere(key)
    assert stored_anywhere(key) == []
    token = ApiToken.objects.get(user=user)
    assert token.prefix == key[:8] and len(token.digest) == 64
    assert not works_everywhere(key[:-1] + ("0" if key[-1] != "0" else "1"))
    token.delete()
    assert not works_everywhere(key)


@pytest.mark.django_db
def test_a_clear_drf_token_keeps_working_and_is_converted(django_user_model):
    user = make_user(django_user_model, "viewer")
    key = ClearToken.objects.create(user=user).key  # what drf_create_token and older scripts do
    assert not ClearToken.objects.exists()
    assert stored_anywhere(key) == [] and works_everywhere(key)
    call_command("drf_create_token", user.username)
    assert not ClearToken.objects.exists() and ApiToken.objects.filter(user=user).count() == 2


@pytest.mark.django_db(transaction=True)
def test_migration_converts_the_clear_tokens_of_an_existing_database(django_user_model):
    user = make_user(django_user_model, "viewer")
    call_command("migrate", "accounts", "0001", verbosity=0)
    try:
        ClearToken.objects.bulk_create([ClearToken(key="0123456789abcdef0123456789abcdef01234567", user=user)])
        call_command("migrate", "accounts", verbosity=0)
    finally:
        call_command("migrate", verbosity=0)
    key = "0123456789abcdef0123456789abcdef01234567"
    assert not ClearToken.objects.exists() and stored_anywhere(key) == []
    assert works_everywhere(key)


@pytest.mark.django_db
def test_admin_page_issues_a_token_shown_once(client, django_user_model):
    import re

    owner = make_user(django_user_model, "viewer")
    client.force_login(django_user_model.objects.create_superuser("root-admin", password=PASSWORD))
    page = client.post("/admin/accounts/apitoken/add/", {"user": owner.pk}, follow=True).content.decode()
    key = re.search(r"is ([0-9a-f]{40}) — copy it now", page).group(1)
    assert works_everywhere(key) and stored_anywhere(key) == []
    listing = client.get("/admin/accounts/apitoken/").content.decode()
    assert key[:8] in listing and key not in listing
