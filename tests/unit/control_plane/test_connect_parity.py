"""/connect/ calls Kafka Connect tools make beyond the basics: restart one task, /admin/loggers (Connect's
LoggingResource semantics and KIP-976's last_modified), and the roles each needs. Topics (KIP-558) and the cluster id
need Kafka: tests/integration/control_plane/test_connect_kafka.py."""

from __future__ import annotations

import logging

import pytest
from celery.worker.control import Panel
from django.utils import timezone

from tests.api_support import client_for, create_connector, make_user
from web.connectors.models import AuditEntry, ControlRequest, DesiredState, ReplicaSetState

pytestmark = pytest.mark.django_db


@pytest.fixture
def restore_loggers():
    names = ["cdc.parity", "cdc.parity.child", "cdc.parity.plain", "cdc.parity.cluster"]
    yield names
    for name in names:
        logging.getLogger(name).setLevel(logging.NOTSET)


def with_tasks(name="orders", state=DesiredState.RUNNING):
    connector = create_connector(name, state=state)
    for rs in ("rs1", "rs0"):
        ReplicaSetState.objects.create(connector=connector, replica_set=rs, phase="streaming", since=timezone.now(),
                                       heartbeat_at=timezone.now())
    return connector


def test_restart_one_task(admin_client):
    with_tasks()
    response = admin_client.post("/connect/connectors/orders/tasks/1/restart")
    assert response.status_code == 204 and response.content == b""
    request = ControlRequest.objects.get(command="restart")
    assert request.replica_set == "rs1"  # task ids are the replica sets in name order
    missing = admin_client.post("/connect/connectors/orders/tasks/2/restart")
    assert missing.status_code == 404
    assert missing.json() == {"error_code": 404, "message": "Task orders-2 not found"}
    assert admin_client.post("/connect/connectors/nope/tasks/0/restart").status_code == 404
    assert admin_client.post(f"/connect/connectors/orders/tasks/{'9' * 5000}/restart").status_code == 404


def test_restart_task_of_a_paused_connector_is_refused(admin_client):
    with_tasks(state=DesiredState.PAUSED)
    response = admin_client.post("/connect/connectors/orders/tasks/0/restart")
    assert response.status_code == 409 and "resume it" in response.json()["message"]


def test_restart_task_needs_the_operator_role(django_user_model, no_redis):
    with_tasks()
    viewer = client_for(make_user(django_user_model, "viewer"))
    assert viewer.post("/connect/connectors/orders/tasks/0/restart").status_code == 403
    operator = client_for(make_user(django_user_model, "operator"))
    assert operator.post("/connect/connectors/orders/tasks/0/restart").status_code == 204


def test_loggers_list_get_and_set(admin_client, restore_loggers):
    logging.getLogger("cdc.parity.child").setLevel(logging.ERROR)
    logging.getLogger("cdc.parity.plain")  # exists, no level of its own
    listed = admin_client.get("/connect/admin/loggers").json()
    assert "root" in listed and set(listed["root"]) == {"level", "last_modified"}
    assert listed["cdc.parity.child"] == {"level": "ERROR", "last_modified": None}
    assert "cdc.parity.plain" not in listed
    assert list(listed) == sorted(listed)

    changed = admin_client.put("/connect/admin/loggers/cdc.parity", {"level": "debug"}, format="json")
    assert changed.status_code == 200
    assert changed.json() == ["cdc.parity", "cdc.parity.child"]  # descendants with a level of their own
    assert logging.getLogger("cdc.parity.child").level == logging.DEBUG
    assert logging.getLogger("cdc.parity.plain").getEffectiveLevel() == logging.DEBUG
    one = admin_client.get("/connect/admin/loggers/cdc.parity").json()
    assert one["level"] == "DEBUG" and isinstance(one["last_modified"], int)
    assert admin_client.get("/connect/admin/loggers/cdc.parity.plain").json()["level"] == "DEBUG"
    trace = admin_client.put("/connect/admin/loggers/cdc.parity", {"level": "TRACE"}, format="json")
    assert trace.status_code == 200 and admin_client.get("/connect/admin/loggers/cdc.parity").json()["level"] == "TRACE"
    entry = AuditEntry.objects.filter(action="logger.level").latest("at")
    assert entry.target == "logger:cdc.parity" and entry.after == {"level": "TRACE", "scope": "worker"}


def test_logger_errors_as_connect_answers_them(admin_client, restore_loggers):
    assert admin_client.get("/connect/admin/loggers/no.such.logger.anywhere").json() == {
        "error_code": 404, "message": "Logger no.such.logger.anywhere not found."}
    missing = admin_client.put("/connect/admin/loggers/cdc.parity", {}, format="json")
    assert missing.status_code == 400
    assert missing.json()["message"] == "Desired 'level' parameter was not specified in request."
    invalid = admin_client.put("/connect/admin/loggers/cdc.parity", {"level": "LOUD"}, format="json")
    assert invalid.status_code == 404 and invalid.json()["message"] == "invalid log level 'LOUD'."
    assert admin_client.put("/connect/admin/loggers/cdc.parity", {"level": 5}, format="json").status_code == 404
    assert admin_client.put("/connect/admin/loggers/cdc.parity", ["x"], format="json").status_code == 400
    scope = admin_client.put("/connect/admin/loggers/cdc.parity?scope=everywhere", {"level": "INFO"}, format="json")
    assert scope.status_code == 400


def test_cluster_scope_broadcasts_to_the_workers(admin_client, restore_loggers, monkeypatch):
    sent = []
    monkeypatch.setattr("workers.loggers.broadcast", lambda app, logger, level: sent.append((logger, level)))
    response = admin_client.put("/connect/admin/loggers/cdc.parity.cluster?scope=cluster", {"level": "warn"},
                                format="json")
    assert response.status_code == 204
    assert sent == [("cdc.parity.cluster", "WARN")]
    assert logging.getLogger("cdc.parity.cluster").level == logging.WARNING
    # What each worker runs on the broadcast (Celery's remote-control registry):
    reply = Panel.data["cdc_set_log_level"](None, logger="cdc.parity.cluster", level="ERROR")
    assert reply == {"ok": ["cdc.parity.cluster"]}
    assert logging.getLogger("cdc.parity.cluster").level == logging.ERROR
    assert "error" in Panel.data["cdc_set_log_level"](None, logger="cdc.parity.cluster", level="LOUD")


def test_loggers_roles(django_user_model, no_redis, restore_loggers):
    viewer = client_for(make_user(django_user_model, "viewer"))
    assert viewer.get("/connect/admin/loggers").status_code == 200
    assert viewer.get("/connect/admin/loggers/root").status_code == 200
    assert viewer.put("/connect/admin/loggers/cdc.parity", {"level": "INFO"}, format="json").status_code == 403
    operator = client_for(make_user(django_user_model, "operator"))
    assert operator.put("/connect/admin/loggers/cdc.parity", {"level": "INFO"}, format="json").status_code == 403
    from rest_framework.test import APIClient

    assert APIClient().get("/connect/admin/loggers").status_code == 401


def test_paths_answer_with_and_without_the_trailing_slash(admin_client):
    with_tasks()
    for path in ("/connect/connectors", "/connect/connectors/orders/status", "/connect/admin/loggers"):
        assert admin_client.get(path).status_code == 200
        assert admin_client.get(path + "/").status_code == 200
    assert admin_client.get("/connect").json()["version"] == admin_client.get("/connect/").json()["version"]
