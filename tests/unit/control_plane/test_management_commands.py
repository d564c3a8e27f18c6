"""manage.py connector_create / connector_list / connector_start|stop|pause / connector_reset_offsets."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from tests.api_support import SECRET, sample_config
from web.connectors import services
from web.connectors.models import AuditEntry, Connector

pytestmark = pytest.mark.django_db


def run(*args, **kwargs) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, **kwargs)
    return out.getvalue()


def test_create_from_a_kafka_connect_file_then_list_and_change_state(tmp_path, no_redis):
    config = sample_config("orders")
    path = tmp_path / "orders.json"
    path.write_text(json.dumps({"name": config.pop("name"), "config": config}))
    output = run("connector_create", str(path), "--state", "stopped")
    assert "created connector orders (desired state stopped)" in output and SECRET not in output
    assert Connector.objects.get().desired_state == "stopped"
    with pytest.raises(CommandError, match="exists"):
        run("connector_create", str(path))
    path.write_text(json.dumps({**sample_config("orders"), "max.batch.size": 7}))  # bare Debezium properties
    assert "updated connector orders" in run("connector_create", str(path), "--update")
    assert Connector.objects.get().properties["max.batch.size"] == 7

    assert "orders" in run("connector_list")
    assert json.loads(run("connector_list", "--json"))[0]["desired_state"] == "stopped"
    assert "desired state running" in run("connector_start", "orders")
    assert "desired state paused" in run("connector_pause", "orders")
    assert "desired state stopped" in run("connector_stop", "orders")
    assert [e.source for e in AuditEntry.objects.all()] == ["cli"] * 5
    with pytest.raises(CommandError, match="no connector"):
        run("connector_start", "nope")


def test_create_prints_every_problem(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"name": "bad", "snapshot.mode": "x", "max.batch.size": 0}))
    with pytest.raises(CommandError) as failure:
        run("connector_create", str(path))
    message = str(failure.value)
    assert "snapshot.mode" in message and "max.batch.size" in message and "topic.prefix" in message


def test_reset_offsets_arguments(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(services, "reset_offsets", lambda connector, mode, **kw: calls.append((mode, kw)) or [])
    path = tmp_path / "c.json"
    path.write_text(json.dumps(sample_config("orders")))
    run("connector_create", str(path), "--state", "stopped")
    run("connector_reset_offsets", "orders", "--to", "timestamp", "--timestamp", "2024-01-01T00:00:00Z",
        "--replica-set", "rs0", "--stop")
    mode, kwargs = calls[-1]
    assert mode == "timestamp" and kwargs["timestamp"].time == 1704067200
    assert kwargs["replica_sets"] == ["rs0"] and kwargs["stop"] is True and kwargs["source"] == "cli"
    with pytest.raises(CommandError, match="--token"):
        run("connector_reset_offsets", "orders", "--to", "token", "--token", "nope")


def test_key_rotation(settings, tmp_path):
    from cryptography.fernet import Fernet
    from django.db import connection

    from tests.api_support import create_connector

    old = settings.CDC_ENCRYPTION_KEY
    create_connector("orders")
    settings.CDC_ENCRYPTION_KEY = f"{Fernet.generate_key().decode()},{old}"
    assert SECRET in Connector.objects.get().connection_string  # the old key still decrypts
    assert "re-encrypted the secrets of 1 connector(s) and 1 filter row(s)" in run("connector_reencrypt")
    settings.CDC_ENCRYPTION_KEY = settings.CDC_ENCRYPTION_KEY.split(",")[0]  # old key dropped
    assert SECRET in Connector.objects.get().connection_string
    with connection.cursor() as cursor:
        cursor.execute("SELECT connection_string FROM connectors_connector")
        assert SECRET not in cursor.fetchone()[0]
