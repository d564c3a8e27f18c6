"""After submit, the connector forms show every problem at once: a line of Other properties that is not key=value
does not hide a name already taken nor the values the API refuses, and values the API refuses do not hide a
name already taken."""

from __future__ import annotations

import pytest

from tests.api_support import create_connector
from tests.unit.dashboard.test_pages import FORM, login
from web.connectors.models import Connector

pytestmark = pytest.mark.django_db

POSTGRES_FORM = {"source": "postgres", "name": "demo", "topic_prefix": "pg", "hostname": "db1", "port": "5432",
                 "user": "cdc", "password": "secret", "dbname": "shop", "snapshot_mode": "initial", "start": "on"}


@pytest.fixture(autouse=True)
def _quiet_redis(no_redis, monkeypatch):
    monkeypatch.setattr("workers.publish.history", lambda connector, rs: [])


def errors_of(response) -> dict[str, list[str]]:
    assert response.status_code == 400
    return response.context["form"].errors


def test_mongodb_form_shows_the_bad_line_the_taken_name_and_the_bad_value(client, django_user_model):
    create_connector("demo")
    login(client, django_user_model, "admin")
    errors = errors_of(client.post("/connectors/new/", {**FORM, "name": "demo",
                                                        "other": "garbage line\ncapture.mode=bogus"}))
    assert errors["name"] == ["Connector demo already exists"]
    assert errors["other"][0] == 'line 1: expected key=value, got "garbage line"'
    assert any("capture.mode" in message and "bogus" in message for message in list(errors["other"])[1:]), errors
    assert Connector.objects.count() == 1


def test_mongodb_form_shows_the_taken_name_with_a_bad_value(client, django_user_model):
    create_connector("demo")
    login(client, django_user_model, "admin")
    errors = errors_of(client.post("/connectors/new/", {**FORM, "name": "demo", "other": "capture.mode=bogus"}))
    assert errors["name"] == ["Connector demo already exists"]
    assert any("bogus" in message for message in errors["other"]), errors


def test_postgres_form_shows_the_bad_line_the_taken_name_and_the_bad_value(client, django_user_model):
    create_connector("demo")
    login(client, django_user_model, "admin")
    errors = errors_of(client.post("/connectors/new/?source=postgres",
                                   {**POSTGRES_FORM, "other": "garbage line\nslot.max.retries=lots"}))
    assert errors["name"] == ["Connector demo already exists"]
    assert errors["other"][0] == 'line 1: expected key=value, got "garbage line"'
    assert any("slot.max.retries" in message for message in list(errors["other"])[1:]), errors
