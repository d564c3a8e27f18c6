"""/connect/: the Kafka Connect REST API's shapes and status codes for the same calls."""

from __future__ import annotations

import pytest

from tests.api_support import SECRET, create_connector, sample_config
from web.connectors import services
from web.connectors.models import Connector, DesiredState

pytestmark = pytest.mark.django_db


def connect_config(name="orders", **extra):
    config = sample_config(name, **extra)
    config.pop("name")
    return config


def test_create_list_get_delete(admin_client):
    created = admin_client.post("/connect/connectors", {"name": "orders", "config": connect_config()}, format="json")
    assert created.status_code == 201, created.json()
    assert created["Location"].endswith("/connect/connectors/orders")
    body = created.json()
    assert set(body) == {"name", "config", "tasks", "type"}
    assert body["name"] == "orders" and body["tasks"] == [] and body["type"] == "source"
    assert body["config"]["connector.class"] == "io.debezium.connector.mongodb.MongoDbConnector"
    assert body["config"]["name"] == "orders"
    assert all(isinstance(value, str) for value in body["config"].values())
    assert SECRET not in created.content.decode()

    again = admin_client.post("/connect/connectors", {"name": "orders", "config": connect_config()}, format="json")
    assert again.status_code == 409
    assert again.json() == {"error_code": 409, "message": "Connector orders already exists"}

    assert admin_client.get("/connect/connectors").json() == ["orders"]
    expanded = admin_client.get("/connect/connectors?expand=status&expand=info").json()
    assert set(expanded["orders"]) == {"status", "info"}
    assert admin_client.get("/connect/connectors/orders").json() == body

    assert admin_client.delete("/connect/connectors/orders").status_code == 204
    missing = admin_client.get("/connect/connectors/orders")
    assert missing.status_code == 404
    assert missing.json() == {"error_code": 404, "message": "Connector orders not found"}


def test_invalid_configuration_lists_every_error(admin_client):
    config = connect_config(**{"snapshot.mode": "x", "max.batch.size": "-1"})
    response = admin_client.post("/connect/connectors", {"name": "orders", "config": config}, format="json")
    assert response.status_code == 400
    message = response.json()["message"]
    assert message.startswith("Connector configuration is invalid and contains the following 2 error(s):\n")
    assert "snapshot.mode" in message and "max.batch.size" in message
    assert message.endswith("`/connector-plugins/{connectorType}/config/validate`")


def test_name_in_config_must_match(admin_client):
    response = admin_client.post("/connect/connectors", {"name": "a", "config": {**connect_config(), "name": "b"}},
                                 format="json")
    assert response.status_code == 400
    assert response.json()["message"] == "Connector name configuration (b) doesn't match connector name in the URL (a)"


def test_put_config_creates_then_updates(admin_client, no_redis, django_capture_on_commit_callbacks):
    created = admin_client.put("/connect/connectors/orders/config", connect_config(), format="json")
    assert created.status_code == 201
    config = admin_client.get("/connect/connectors/orders/config").json()
    assert config["mongodb.connection.string"] == "mongodb://cdc:********@db1:27017,db2:27017/?replicaSet=rs0"
    with django_capture_on_commit_callbacks(execute=True):
        updated = admin_client.put("/connect/connectors/orders/config", {**config, "max.batch.size": "10"},
                                   format="json")
    assert updated.status_code == 200
    assert updated.json()["config"]["max.batch.size"] == "10"
    assert SECRET in Connector.objects.get().connection_string  # the masked value kept the stored secret
    assert no_redis[-1][0][:2] == ("orders", "restart")  # a running connector picks up its new configuration


def test_status_and_lifecycle(admin_client):
    create_connector()
    services.report_observed("orders", "rs0", worker="w1:8083", phase="streaming")
    services.report_observed("orders", "rs1", worker="w2:8083", phase="failed", error="Traceback: boom")
    status = admin_client.get("/connect/connectors/orders/status").json()
    assert status == {
        "name": "orders",
        "connector": {"state": "RUNNING", "worker_id": "w1:8083"},
        "tasks": [
            {"id": 0, "state": "RUNNING", "worker_id": "w1:8083"},
            {"id": 1, "state": "FAILED", "worker_id": "w2:8083", "trace": "Traceback: boom"},
        ],
        "type": "source",
    }
    assert admin_client.get("/connect/connectors/orders/tasks/1/status").json()["state"] == "FAILED"
    assert admin_client.get("/connect/connectors/orders/tasks/5/status").status_code == 404
    assert [t["id"] for t in admin_client.get("/connect/connectors/orders/tasks").json()] == [
        {"connector": "orders", "task": 0}, {"connector": "orders", "task": 1}]

    restarted = admin_client.post("/connect/connectors/orders/restart")
    assert restarted.status_code == 204 and restarted.content == b""
    only_failed = admin_client.post("/connect/connectors/orders/restart?includeTasks=true&onlyFailed=true")
    assert only_failed.status_code == 202
    assert [t["state"] for t in only_failed.json()["tasks"]] == ["RUNNING", "RESTARTING"]
    assert only_failed.json()["connector"]["state"] == "RUNNING"
    everything = admin_client.post("/connect/connectors/orders/restart?includeTasks=true").json()
    assert everything["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in everything["tasks"]] == ["RESTARTING", "RESTARTING"]
    nothing_failed = admin_client.post("/connect/connectors/orders/restart?onlyFailed=true")
    assert nothing_failed.status_code == 202
    assert "RESTARTING" not in str(nothing_failed.json())

    paused = admin_client.put("/connect/connectors/orders/pause")
    assert (paused.status_code, paused.content) == (202, b"")
    services.report_observed("orders", "rs0", worker="w1:8083", phase="stopped")  # the pipeline obeyed
    assert admin_client.get("/connect/connectors/orders/status").json()["connector"]["state"] == "PAUSED"
    assert admin_client.put("/connect/connectors/orders/resume").status_code == 202
    assert Connector.objects.get().desired_state == DesiredState.RUNNING
    stopped = admin_client.put("/connect/connectors/orders/stop")
    assert (stopped.status_code, stopped.content) == (204, b"")
    status = admin_client.get("/connect/connectors/orders/status").json()
    assert status["connector"]["state"] == "STOPPED" and status["tasks"] == []
    assert admin_client.get("/connect/connectors/orders").json()["tasks"] == []


def test_offsets_can_only_change_while_stopped(admin_client, monkeypatch):
    create_connector()
    monkeypatch.setattr(services, "alter_offsets", lambda *a, **k: None)
    monkeypatch.setattr(services, "read_offsets", lambda connector: {})
    body = {"offsets": [{"partition": {"rs": "rs0"}, "offset": {"resume_token": {"_data": TOKEN}}}]}
    refused = admin_client.patch("/connect/connectors/orders/offsets", body, format="json")
    assert refused.status_code == 400
    assert refused.json()["message"].startswith("Connectors must be in the STOPPED state before their offsets can")
    assert admin_client.delete("/connect/connectors/orders/offsets").status_code == 400
    admin_client.put("/connect/connectors/orders/stop")
    assert admin_client.patch("/connect/connectors/orders/offsets", {"offsets": []}, format="json").json() == {
        "error_code": 400, "message": "Partitions / offsets cannot be empty for an alter offsets request"}
    bad = admin_client.patch("/connect/connectors/orders/offsets", {"offsets": [{"partition": {}}]}, format="json")
    assert bad.status_code == 400
    ok = admin_client.patch("/connect/connectors/orders/offsets", body, format="json")
    assert ok.json() == {"message": "The offsets for this connector have been altered successfully"}


TOKEN = "8265A1B2C3000000012B0229296E04"


def test_offsets_patch_refuses_a_garbage_token_and_an_unknown_partition(admin_client, monkeypatch):
    create_connector(state="stopped")
    services.report_observed("orders", "rs0", worker="w1", phase="stopped")
    monkeypatch.setattr(services, "alter_offsets", lambda *a, **k: pytest.fail("nothing may be written"))
    monkeypatch.setattr(services, "read_offsets", lambda connector: {})
    garbage = admin_client.patch("/connect/connectors/orders/offsets", {"offsets": [
        {"partition": {"rs": "rs0"}, "offset": {"resume_token": {"_data": "not-hex"}}}]}, format="json")
    assert garbage.status_code == 400
    assert garbage.json() == {"error_code": 400, "message": "Invalid offset for partition rs0: the resume token's "
                                                           "_data 'not-hex' is not hexadecimal"}
    unknown = admin_client.patch("/connect/connectors/orders/offsets", {"offsets": [
        {"partition": {"rs": "rs5"}, "offset": {"resume_token": {"_data": TOKEN}}}]}, format="json")
    assert unknown.status_code == 400
    assert unknown.json()["message"] == "Unknown partition(s) 'rs5' of connector orders; its partitions are 'rs0'"


def test_plugins_and_validate(admin_client):
    plugins = admin_client.get("/connect/connector-plugins").json()
    assert plugins[0]["class"] == "io.debezium.connector.mongodb.MongoDbConnector"
    result = admin_client.put("/connect/connector-plugins/MongoDbConnector/config/validate",
                              {**connect_config(), "name": "x", "snapshot.mode": "bad"}, format="json").json()
    assert result["error_count"] == 1
    by_name = {c["value"]["name"]: c["value"] for c in result["configs"]}
    assert by_name["snapshot.mode"]["errors"] and by_name["topic.prefix"]["errors"] == []


def test_paused_is_reported_only_once_the_pipeline_stopped(admin_client):
    create_connector()
    services.report_observed("orders", "rs0", worker="w1", phase="streaming")
    admin_client.put("/connect/connectors/orders/pause")
    pausing = admin_client.get("/connect/connectors/orders/status").json()
    assert pausing["connector"]["state"] == "RUNNING" and pausing["tasks"][0]["state"] == "RUNNING"
    services.report_observed("orders", "rs0", worker="w1", phase="stopped")
    paused = admin_client.get("/connect/connectors/orders/status").json()
    assert paused["connector"]["state"] == "PAUSED" and paused["tasks"][0]["state"] == "PAUSED"
