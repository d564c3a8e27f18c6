"""Credentials never leave the server: not in any response of /api/ or /connect/ (reads, writes, validation errors,
audit log), not in any log line, not in the audit table, and not in the database in clear."""

from __future__ import annotations

import logging

import pytest

from tests.api_support import SALT, SECRET, create_connector, sample_config
from web.connectors import services
from web.connectors.models import AuditEntry

pytestmark = pytest.mark.django_db
PASSWORD = "Pw-Only-In-Field-42"  # noqa: S105


def leaked(text: str) -> list[str]:
    return [secret for secret in (SECRET, SALT, PASSWORD) if secret in text]


def test_no_secret_in_any_response_or_log_line(admin_client, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(services, "read_offsets", lambda connector: {})
    responses = []

    def call(method, path, body=None):
        response = getattr(admin_client, method)(path, body, format="json")
        responses.append((method, path, response.status_code, response.content.decode()))
        return response

    config = sample_config("orders")
    call("post", "/api/connectors/", {"name": "orders", "config": config})
    call("post", "/connect/connectors", {"name": "other", "config": {
        **sample_config("other"), "mongodb.connection.string": "mongodb://db1:27017/?replicaSet=rs0",
        "mongodb.user": "cdc", "mongodb.password": PASSWORD}})
    for path in ("/api/connectors/", "/api/connectors/orders/", "/api/connectors/other/",
                 "/api/connectors/orders/filters/", "/api/connectors/orders/status/", "/api/audit/",
                 "/connect/connectors?expand=info&expand=status", "/connect/connectors/orders",
                 "/connect/connectors/other/config", "/connect/connectors/orders/tasks", "/api/schema/"):
        call("get", path)
    call("patch", "/api/connectors/orders/", {"config": {"max.batch.size": 10}})
    call("put", "/connect/connectors/other/config", {**call("get", "/connect/connectors/other/config").json(),
                                                     "max.batch.size": "20"})
    # Invalid input that carries the secrets: the errors must not echo them.
    call("post", "/api/connectors/", {"name": "bad", "topic_prefix": "x",
                                      "connection_string": f"mongodb://u:{SECRET}@bad host:99999",
                                      "password": PASSWORD, "config": {"mongodb.user": 5}})
    call("post", "/api/connectors/validate/", {"name": "bad", "connection_string": f"mongodb://u:{SECRET}@",
                                               "config": {f"field.mask.hash.NOPE.with.salt.{SALT}": "a.b.c"}})
    call("put", "/connect/connector-plugins/x/config/validate", {
        "mongodb.connection.string": f"mongodb://u:{SECRET}@:bad", f"field.mask.hash.SHA-256.with.salt.{SALT}": "x"})
    call("post", "/connect/connectors", {"name": "bad2", "config": {
        "mongodb.connection.string": f"mongodb://u:{SECRET}@h:notaport", "mongodb.password": PASSWORD}})
    call("delete", "/api/connectors/orders/")
    # A browser asking for HTML gets JSON too: no form that would echo the submitted password.
    html = admin_client.post("/api/connectors/", {"name": "h", "connection_string": f"mongodb://u:{SECRET}@h:x",
                                                  "password": PASSWORD}, HTTP_ACCEPT="text/html")
    responses.append(("post", "/api/connectors/ (html)", html.status_code, html.content.decode()))

    assert all(status < 500 for _, _, status, _ in responses), responses
    assert {status for _, _, status, _ in responses} >= {200, 201, 204, 400}
    for method, path, status, body in responses:
        assert not leaked(body), (method, path, status, body)
    for record in caplog.records:
        assert not leaked(record.getMessage()), record.getMessage()
    for entry in AuditEntry.objects.all():
        assert not leaked(repr(entry.before) + repr(entry.after)), entry.action


def test_connection_string_is_returned_masked_but_usable_by_the_engine():
    from web.connectors.definitions import engine_config

    connector = create_connector()
    config = engine_config(connector)
    assert SECRET in config.mongo_client_options()["host"]
    assert SECRET not in repr(config)
