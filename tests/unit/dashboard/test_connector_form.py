"""Issue 13.10: the connector form's own fields for the user, hash masks, the signal collection and heartbeats; a
line of Other properties that is not key=value does not hide the other problems; one wording of the name rule; a
taken name reported by the validate action."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.api_support import create_connector, make_user
from tests.unit.dashboard.test_pages import FORM, login
from web.connectors.definitions import flat_of as engine_config
from web.connectors.models import Connector
from web.connectors.validation import NAME_RULE, check

pytestmark = pytest.mark.django_db

HASH_KEY = "field.mask.hash.SHA-256.with.salt."


@pytest.fixture(autouse=True)
def _quiet_redis(no_redis, monkeypatch):
    monkeypatch.setattr("workers.publish.history", lambda connector, rs: [])


def test_a_bad_other_line_does_not_hide_the_other_problems(client, django_user_model):
    login(client, django_user_model, "admin")
    response = client.post("/connectors/new/", {**FORM, "other": "nonsense\npoll.interval.ms=-5",
                                                "collection_include": "inventory.(orders"})
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors["other"]) == ['line 1: expected key=value, got "nonsense"',  # the parse error
                                     "poll.interval.ms: must be at least 1, got -5"]  # and the valid line's problem
    assert "not a valid regular expression" in errors["collection_include"][0]  # and the engine's problems too
    assert not Connector.objects.exists()


def test_user_hash_signal_and_heartbeat_fields(client, django_user_model):
    login(client, django_user_model, "admin")
    page = client.get("/connectors/new/").content.decode()
    for prop in ("mongodb.user", "signal.data.collection", "heartbeat.interval.ms", "heartbeat.topics.prefix"):
        assert f'data-property="{prop}"' in page
    assert 'data-hash="fields"' in page and 'data-hash="salt"' in page
    data = {**FORM, "user": "cdc", "password": "pw-1", "signal_collection": "inventory.signals",
            "heartbeat_interval": "5000", "heartbeat_prefix": "hb", "hash_fields": "inventory.orders.email",
            "hash_algorithm": "SHA-512", "hash_salt": "pepper-1",
            "collection_include": "inventory\\.orders\ninventory\\.signals"}
    response = client.post("/connectors/new/", data)
    assert response.status_code == 302, response.context["form"].errors
    flat = engine_config(Connector.objects.get(name="shop-orders"))
    assert flat["mongodb.user"] == "cdc" and flat["signal.data.collection"] == "inventory.signals"
    assert flat["heartbeat.interval.ms"] == "5000" and flat["heartbeat.topics.prefix"] == "hb"
    assert flat["field.mask.hash.SHA-512.with.salt.pepper-1"] == "inventory.orders.email"

    # the edit form shows them in their fields (the salt never), and an empty salt keeps the stored one
    form = client.get("/connectors/shop-orders/edit/").context["form"]
    assert form.initial["hash_fields"] == "inventory.orders.email" and form.initial["hash_algorithm"] == "SHA-512"
    assert "pepper-1" not in str(form.initial) and "field.mask.hash" not in form.initial["other"]
    assert form.initial["signal_collection"] == "inventory.signals" and form.initial["user"] == "cdc"
    edited = {**{k: v for k, v in form.initial.items() if v is not None}, "heartbeat_interval": "0",
              "hash_fields": "inventory.orders.email\ninventory.orders.phone"}
    response = client.post("/connectors/shop-orders/edit/", edited)
    assert response.status_code == 302, response.context["form"].errors
    flat = engine_config(Connector.objects.get(name="shop-orders"))
    assert flat["field.mask.hash.SHA-512.with.salt.pepper-1"] == "inventory.orders.email,inventory.orders.phone"
    assert flat["heartbeat.interval.ms"] == "0"


def test_a_hash_mask_without_a_salt_is_refused_next_to_its_field(client, django_user_model):
    login(client, django_user_model, "admin")
    response = client.post("/connectors/new/", {**FORM, "hash_fields": "inventory.orders.email"})
    assert response.status_code == 400
    assert "give the salt" in response.context["form"].errors["hash_fields"][0]


def test_the_password_help_names_a_field_of_the_form(client, django_user_model):
    login(client, django_user_model, "admin")
    form = client.get("/connectors/new/").context["form"]
    assert "mongodb.user" in form.fields["password"].help_text
    assert form.fields["user"].widget.attrs["data-property"] == "mongodb.user"


def test_one_wording_of_the_name_rule(client, django_user_model):
    login(client, django_user_model, "admin")
    form = client.get("/connectors/new/").context["form"]
    assert NAME_RULE in form.fields["name"].help_text
    # the engine's own rule (which allows dots) and the platform's give one message, the platform's
    for bad in ("a b", "a.b", "x" * 101):
        messages = [p.message for p in check({"name": bad, "topic.prefix": "t",
                                              "mongodb.connection.string": "mongodb://h/?replicaSet=rs0"})
                    if p.property == "name"]
        assert messages == [f'"{bad}" is not a valid name: {NAME_RULE}'], messages
    response = client.post("/connectors/new/", {**FORM, "name": "a b"})
    assert response.context["form"].errors["name"] == [f'"a b" is not a valid name: {NAME_RULE}']
    create_connector("orders")
    detail = client.get("/connectors/orders/").content.decode()
    assert NAME_RULE in detail  # the clone form's help


def test_validate_reports_a_taken_name(django_user_model):
    create_connector("orders")
    api = APIClient()
    api.force_authenticate(make_user(django_user_model, "admin"))
    body = {"name": "orders", "topic_prefix": "o2", "connection_string": "mongodb://db1:27017/?replicaSet=rs0",
            "config": {}}
    result = api.post("/api/connectors/validate/", body, format="json").json()
    assert result["valid"] is False
    assert {"property": "name", "field": "name", "message": "Connector orders already exists"} in result["problems"]
    assert api.post("/api/connectors/validate/", {**body, "name": "orders-2"}, format="json").json()["valid"]


def test_messages_quote_values_as_typed_without_python_escaping(client, django_user_model):
    login(client, django_user_model, "admin")
    response = client.post("/connectors/new/", {**FORM, "collection_include": "uxshop\\.(customers"})
    message = response.context["form"].errors["collection_include"][0]
    assert message.startswith('collection.include.list: "uxshop\\.(customers" is not a valid regular expression')
    assert "\\\\" not in message
    api = APIClient()
    api.force_authenticate(make_user(django_user_model, "viewer"))
    body = {"name": "x", "topic_prefix": "x", "connection_string": "mongodb://db1:27017/?replicaSet=rs0",
            "config": {"collection.include.list": ["uxshop\\.(customers"]}}
    problems = api.post("/api/connectors/validate/", body, format="json").json()["problems"]
    assert ['"uxshop\\.(customers"' in p["message"] for p in problems] == [True]
