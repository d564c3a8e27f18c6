"""Helpers for the control-plane API tests: users per role, an API client per role, a sample connector."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from web.connectors import drafts, services
from web.connectors.models import DesiredState

SECRET = "Sup3r-S3cret-pw"  # noqa: S105 - test secret that must never appear in a response or log line
SALT = "pepper-salt-77"
ROLES = (None, "none", "viewer", "operator", "admin")  # None = anonymous


def sample_config(name: str = "orders", **extra) -> dict:
    return {
        "name": name,
        "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
        "topic.prefix": "shop",
        "mongodb.connection.string": f"mongodb://cdc:{SECRET}@db1:27017,db2:27017/?replicaSet=rs0",
        "collection.include.list": "inventory.orders,inventory.lines",
        f"field.mask.hash.SHA-256.with.salt.{SALT}": "inventory.orders.email",
        "snapshot.mode": "initial",
        **extra,
    }


def make_user(django_user_model, role: str | None):
    if role is None:
        return None
    user = django_user_model.objects.create_user(f"user-{role}")  # no password: hashing is slow
    if role != "none":
        user.groups.add(Group.objects.get_or_create(name=role)[0])  # transactional tests flush the groups
    return user


def client_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def create_connector(name: str = "orders", state: str = DesiredState.RUNNING, user=None, **extra):
    parts = drafts.prepare(sample_config(name, **extra))
    return services.create_connector(parts, user=user, source="system", desired_state=state)


@pytest.fixture
def no_redis(monkeypatch):
    """Unit tests run without Redis: no pipeline holds a lease, notifications are recorded."""
    sent = []
    monkeypatch.setattr("workers.control.running_pipelines", lambda name: {})
    monkeypatch.setattr("workers.control.notify", lambda *a, on_sent=None, **k: sent.append((a, k)) or True)
    return sent


@pytest.fixture
def admin_client(django_user_model, no_redis):
    return client_for(make_user(django_user_model, "admin"))
