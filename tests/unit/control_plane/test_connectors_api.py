"""/api/connectors: CRUD, validation reporting every bad field by name, filters, actions, audit."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.api_support import SALT, SECRET, create_connector, sample_config
from web.connectors import services
from web.connectors.models import AuditEntry, Connector, ControlRequest, SnapshotRequest

pytestmark = pytest.mark.django_db


def api_body(name="orders", **config):
    full = sample_config(name, **config)
    return {
        "name": full.pop("name"),
        "topic_prefix": full.pop("topic.prefix"),
        "connection_string": full.pop("mongodb.connection.string"),
        "config": full,
    }


def test_create_read_update_delete(admin_client):
    created = admin_client.post("/api/connectors/", api_body(), format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["name"] == "orders" and body["desired_state"] == "running"
    assert body["connection_string"] == "mongodb://cdc:********@db1:27017,db2:27017/?replicaSet=rs0"
    assert body["has_password"] is True
    assert [f["value"] for f in body["filters"] if f["kind"] == "collection_include"] == [
        "inventory.orders", "inventory.lines"]

    listed = admin_client.get("/api/connectors/").json()
    assert [c["name"] for c in listed] == ["orders"]

    # GET -> change one option -> PUT back: masked secrets mean "keep the stored ones".
    current = admin_client.get("/api/connectors/orders/").json()
    current["config"]["snapshot.mode"] = "never"
    replaced = admin_client.put("/api/connectors/orders/", current, format="json")
    assert replaced.status_code == 200, replaced.json()
    stored = Connector.objects.get(name="orders")
    assert SECRET in stored.connection_string
    assert stored.properties["snapshot.mode"] == "never"
    assert stored.filters.get(kind="field_mask_hash").salt == SALT

    patched = admin_client.patch("/api/connectors/orders/", {"config": {"max.batch.size": 64}}, format="json")
    assert patched.status_code == 200, patched.json()
    assert patched.json()["config"]["max.batch.size"] == 64
    assert patched.json()["config"]["snapshot.mode"] == "never"

    assert admin_client.delete("/api/connectors/orders/").status_code == 204
    assert not Connector.objects.exists()
    actions = list(AuditEntry.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["connector.create", "connector.update", "connector.update", "connector.delete"]


def test_duplicate_name_is_refused(admin_client):
    assert admin_client.post("/api/connectors/", api_body(), format="json").status_code == 201
    again = admin_client.post("/api/connectors/", api_body(), format="json")
    assert again.status_code == 409
    assert "already exists" in again.json()["detail"]


BAD = {
    "name": "bad name!",
    "topic_prefix": "",
    "connection_string": "http://nope",
    "config": {
        "snapshot.mode": "sometimes",
        "max.batch.size": "lots",
        "collection.include.list": "inventory.(unclosed",
        "heartbeat.interval.ms": -5,
        "snapshot.collection.filter.overrides.inventory.orders": "{not json",
        "no.such.property": 1,
    },
}


def test_every_bad_field_is_named_at_once(admin_client):
    response = admin_client.post("/api/connectors/", BAD, format="json")
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) >= {"name", "topic_prefix", "connection_string", "config"}
    assert set(errors["config"]) >= {
        "snapshot.mode", "max.batch.size", "collection.include.list", "heartbeat.interval.ms",
        "snapshot.collection.filter.overrides.inventory.orders", "no.such.property",
    }
    assert not Connector.objects.exists()


def test_validate_action_returns_all_problems_with_their_property(admin_client):
    response = admin_client.post("/api/connectors/validate/", BAD, format="json")
    assert response.status_code == 200
    result = response.json()
    assert result["valid"] is False
    assert result["error_count"] == len(result["problems"]) >= 9
    named = {p["property"] for p in result["problems"]}
    assert {"name", "topic.prefix", "mongodb.connection.string", "snapshot.mode", "no.such.property"} <= named
    ok = admin_client.post("/api/connectors/validate/", api_body(), format="json").json()
    assert ok == {"valid": True, "error_count": 0, "problems": [], "connection_checked": False,
                  "retry_after_s": None}
    assert not Connector.objects.exists()


def test_validate_changes_of_an_existing_connector(admin_client):
    create_connector()
    result = admin_client.post("/api/connectors/orders/validate/", {"config": {"max.queue.size": 10}},
                               format="json").json()
    assert result["valid"] is False
    assert [p["property"] for p in result["problems"]] == ["max.queue.size"]


def test_cross_property_rules_come_from_the_engine(admin_client):
    body = api_body(**{"collection.exclude.list": "inventory.tmp"})
    response = admin_client.post("/api/connectors/", body, format="json")
    assert response.status_code == 400
    assert "collection.exclude.list" in response.json()["config"]


def test_name_cannot_change(admin_client):
    create_connector()
    response = admin_client.patch("/api/connectors/orders/", {"name": "other"}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()


def test_debezium_style_config_only(admin_client):
    """Everything inside `config` with Debezium names works as well as the top-level fields."""
    config = sample_config("flat")
    response = admin_client.post("/api/connectors/", {"name": "flat", "config": config}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["topic_prefix"] == "shop"


def test_filters_sub_resource(admin_client):
    create_connector()
    url = "/api/connectors/orders/filters/"
    assert len(admin_client.get(url).json()) == 3
    added = admin_client.post(url, {"kind": "field_exclude", "value": "inventory.orders.notes"}, format="json")
    assert added.status_code == 201, added.json()
    assert added.json()["property"] == "field.exclude.list"
    row_id = added.json()["id"]
    changed = admin_client.patch(f"{url}{row_id}/", {"value": "inventory.orders.memo"}, format="json")
    assert changed.status_code == 200
    assert Connector.objects.get().filters.get(pk=row_id).value == "inventory.orders.memo"
    # An exclude list next to an include list is refused by the engine's rule, naming the conflict.
    bad = admin_client.post(url, {"kind": "collection_exclude", "value": "inventory.tmp"}, format="json")
    assert bad.status_code == 400
    assert "collection.exclude.list" in str(bad.json())
    bad_value = admin_client.post(url, {"kind": "field_exclude", "value": "a,b"}, format="json")
    assert bad_value.status_code == 400 and "value" in bad_value.json()
    bad_regex = admin_client.post(url, {"kind": "collection_include", "value": "inv.(x"}, format="json")
    assert bad_regex.status_code == 400 and "value" in bad_regex.json()
    hashed = admin_client.post(url, {"kind": "field_mask_hash", "value": "inventory.orders.phone",
                                     "argument": "SHA-256", "salt": "s"}, format="json")
    assert hashed.status_code == 201 and "salt" not in hashed.json()
    assert admin_client.delete(f"{url}{row_id}/").status_code == 204
    assert AuditEntry.objects.filter(action__startswith="filter.").count() == 4


def test_state_actions_record_desired_state_and_notify(admin_client, no_redis, django_capture_on_commit_callbacks):
    create_connector()
    for action, state, command in [("pause", "paused", "pause"), ("resume", "running", "resume"),
                                   ("stop", "stopped", "stop")]:
        with django_capture_on_commit_callbacks(execute=True):
            response = admin_client.post(f"/api/connectors/orders/{action}/")
        assert response.status_code == 202
        request_id = ControlRequest.objects.get(command=command).pk
        assert response.json() == {"name": "orders", "desired_state": state, "requested": command,
                                   "request": request_id}
        assert Connector.objects.get().desired_state == state
        assert no_redis[-1][0] == ("orders", command, {"request_id": request_id})
    admin_client.post("/api/connectors/orders/resume/")
    services.report_observed("orders", "rs0", worker="w1", phase="streaming")
    with django_capture_on_commit_callbacks(execute=True):
        assert admin_client.post("/api/connectors/orders/restart/", {"replica_set": "rs0"},
                                 format="json").status_code == 202
    restart = ControlRequest.objects.get(command="restart")
    assert no_redis[-1] == (("orders", "restart", {"request_id": restart.pk}), {"replica_set": "rs0"})
    assert AuditEntry.objects.filter(action="connector.pause", username="user-admin").exists()


def test_snapshot_request(admin_client, no_redis, django_capture_on_commit_callbacks):
    create_connector(**{"signal.data.collection": "inventory.signals"})
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post("/api/connectors/orders/snapshot/",
                                     {"collections": ["inventory.orders"], "filter": {"status": "open"}},
                                     format="json")
    assert response.status_code == 202, response.json()
    request = SnapshotRequest.objects.get()
    assert request.collections == ["inventory.orders"] and '"status"' in request.filter
    name, command, payload = no_redis[-1][0]
    assert (name, command) == ("orders", "snapshot")
    assert payload["collections"] == ["inventory.orders"] and payload["request_id"] == request.pk
    bad = admin_client.post("/api/connectors/orders/snapshot/",
                            {"collections": ["other.coll", "nodot"], "filter": "{bad"}, format="json")
    assert bad.status_code == 400
    assert set(bad.json()) == {"collections", "filter"}
    assert len(bad.json()["collections"]) == 2


def test_status_shows_each_replica_set(admin_client):
    from web.connectors import services

    create_connector()
    services.report_observed("orders", "rs0", worker="w1@host", phase="streaming", metrics={"events": 5})
    services.report_observed("orders", "rs1", worker="w2@host", phase="failed", error="boom")
    body = admin_client.get("/api/connectors/orders/status/").json()
    assert body["desired_state"] == "running" and body["running"] == {}
    by_rs = {s["replica_set"]: s for s in body["replica_sets"]}
    assert by_rs["rs0"]["phase"] == "streaming" and by_rs["rs0"]["metrics"] == {"events": 5}
    assert by_rs["rs1"]["last_error"] == "boom" and by_rs["rs1"]["stale"] is False


def test_secrets_are_encrypted_at_rest(admin_client):
    create_connector()
    with connection.cursor() as cursor:
        cursor.execute("SELECT connection_string FROM connectors_connector")
        (stored,) = cursor.fetchone()
        cursor.execute("SELECT salt FROM connectors_connectorfilter WHERE kind = 'field_mask_hash'")
        (salt,) = cursor.fetchone()
    assert SECRET not in stored and stored.startswith("gAAAAA")
    assert SALT not in salt
    assert SECRET in Connector.objects.get().connection_string


def test_observed_state_reports(no_redis):
    from web.connectors import services
    from web.connectors.models import ReplicaSetState

    create_connector()
    first = services.report_observed("orders", "rs0", worker="w1", phase="snapshot")
    services.report_observed("orders", "rs0", worker="w1", phase="snapshot", metrics={"rows": 10})
    assert ReplicaSetState.objects.get().since == first.since  # same phase: since stays
    services.report_observed("orders", "rs0", worker="w1", phase="failed", error="boom")
    recovered = services.report_observed("orders", "rs0", worker="w2", phase="streaming")
    assert recovered.since > first.since and recovered.last_error == "boom" and recovered.worker == "w2"
    assert recovered.metrics == {"rows": 10}
    assert services.report_observed("gone", "rs0", worker="w", phase="stopped") is None


def test_snapshot_request_status(admin_client, no_redis):
    from web.connectors import services

    connector = create_connector(**{"signal.data.collection": "inventory.signals"})
    request = services.request_snapshot(connector, ["inventory.orders"], user=None, source="system")
    assert services.mark_snapshot(request.pk, "running", "taken up by rs0")
    assert services.mark_snapshot(request.pk, "done", "snapshot done (inventory.orders: 3 documents)")
    stored = SnapshotRequest.objects.get()
    assert (stored.status, stored.reason) == ("done", "snapshot done (inventory.orders: 3 documents)")
    assert stored.finished_at is not None
    assert not services.mark_snapshot(request.pk, "failed", "late")  # a final state stays
    assert not services.mark_snapshot(request.pk + 1, "done")
    rows = admin_client.get("/api/connectors/orders/requests/").json()
    assert [(r["kind"], r["command"], r["status"], r["reason"]) for r in rows] == [
        ("snapshot", "snapshot", "done", "snapshot done (inventory.orders: 3 documents)")]


def test_a_snapshot_the_pipeline_cannot_serve_is_refused_before_it_is_accepted(admin_client, no_redis):
    create_connector()  # no signal.data.collection
    response = admin_client.post("/api/connectors/orders/snapshot/", {"collections": ["inventory.orders"]},
                                 format="json")
    assert response.status_code == 409
    assert "signal.data.collection" in response.json()["detail"]
    assert not SnapshotRequest.objects.exists() and not no_redis  # nothing recorded, nothing sent
    paused = create_connector("paused", state="paused", **{"signal.data.collection": "inventory.signals"})
    answer = admin_client.post(f"/api/connectors/{paused.name}/snapshot/", {"collections": ["inventory.orders"]},
                               format="json")
    assert answer.status_code == 409 and "resume it" in answer.json()["detail"]
    assert not SnapshotRequest.objects.exists()


def test_restart_of_an_unknown_replica_set_or_a_stopped_connector_is_refused(admin_client, no_redis):
    create_connector()
    services.report_observed("orders", "rs0", worker="w1", phase="streaming")
    unknown = admin_client.post("/api/connectors/orders/restart/", {"replica_set": 5}, format="json")
    assert unknown.status_code == 400 and "'5'" in unknown.json()["detail"] and "rs0" in unknown.json()["detail"]
    admin_client.post("/api/connectors/orders/stop/")
    stopped = admin_client.post("/api/connectors/orders/restart/", {}, format="json")
    assert stopped.status_code == 409 and "stopped" in stopped.json()["detail"]
    assert not ControlRequest.objects.filter(command="restart").exists()
    assert not AuditEntry.objects.filter(action="connector.restart").exists()


def test_a_resume_ends_when_a_pipeline_reports_running_or_failing(admin_client, no_redis):
    create_connector(state="paused")
    admin_client.post("/api/connectors/orders/resume/")
    services.report_observed("orders", "rs0", worker="w1", phase="streaming")
    first = ControlRequest.objects.get()
    assert (first.status, first.reason) == ("done", "rs0 is streaming")
    admin_client.post("/api/connectors/orders/pause/")
    admin_client.post("/api/connectors/orders/resume/")
    services.report_observed("orders", "rs0", worker="w1", phase="failed", error="cannot reach db1:27017")
    second = ControlRequest.objects.filter(command="resume").first()
    assert second.status == "failed" and "cannot reach db1:27017" in second.reason


def test_bad_paging_and_unknown_filters_are_refused(admin_client):
    for query, field in [("limit=abc", "limit"), ("limit=0", "limit"), ("offset=-1", "offset"),
                         ("limit=1.5", "limit"), ("bogus=1", "bogus")]:
        response = admin_client.get(f"/api/audit/?{query}")
        assert response.status_code == 400, (query, response.content)
        assert field in response.json(), response.json()
    assert admin_client.get("/api/audit/?limit=2&offset=1&target=connector:x").status_code == 200
    runs = admin_client.get("/api/spark/runs/?status=bogus")
    assert runs.status_code == 400 and "'bogus' is not one of" in runs.json()["status"][0]
    assert admin_client.get("/api/spark/runs/?limit=abc").status_code == 400
    assert isinstance(admin_client.get("/api/spark/runs/?status=failed").json(), list)


def test_a_reset_to_a_garbage_token_or_an_unknown_replica_set_is_refused(admin_client, monkeypatch):
    create_connector(state="stopped")
    services.report_observed("orders", "rs0", worker="w1", phase="stopped")
    monkeypatch.setattr(services, "read_offsets", lambda connector: {})
    garbage = admin_client.post("/api/connectors/orders/offsets/reset/",
                                {"mode": "token", "resume_token": {"_data": "not-hex"}}, format="json")
    assert garbage.status_code == 400 and "not hexadecimal" in garbage.json()["resume_token"][0]
    unknown = admin_client.post("/api/connectors/orders/offsets/reset/",
                                {"mode": "latest", "replica_sets": ["rs9"]}, format="json")
    assert unknown.status_code == 400 and "'rs9'" in unknown.json()["detail"]


def test_the_connector_list_refuses_filters_it_does_not_have(admin_client):
    create_connector()
    refused = admin_client.get("/api/connectors/?status=bogus")
    assert refused.status_code == 400 and "unknown parameter" in refused.json()["status"][0]
    assert admin_client.get("/api/connectors/").status_code == 200


def test_dashboard_actions_are_audited_as_dashboard(client, django_user_model, no_redis):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from tests.api_support import make_user

    create_connector()
    client.force_login(make_user(django_user_model, "operator"))
    assert client.post("/api/connectors/orders/pause/", HTTP_X_CDC_SOURCE="dashboard").status_code == 202
    assert AuditEntry.objects.get(action="connector.pause").source == "dashboard"
    scripted = APIClient()  # a token is not the dashboard, whatever its headers say
    scripted.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=make_user(django_user_model, 'admin'))}")
    assert scripted.post("/api/connectors/orders/resume/", HTTP_X_CDC_SOURCE="dashboard").status_code == 202
    assert AuditEntry.objects.get(action="connector.resume").source == "api"


def test_a_paused_connector_is_not_stale(admin_client):
    """A paused (or stopped, or failed) pipeline does not report: that is no sign of a hung worker."""
    import datetime

    from django.utils import timezone

    from web.connectors import services
    from web.connectors.models import ReplicaSetState

    create_connector()
    services.report_observed("orders", "rs0", worker="w1@host", phase="streaming", metrics={"events": 5})
    admin_client.post("/api/connectors/orders/pause/")
    services.report_observed("orders", "rs0", worker="w1@host", phase="stopped", metrics={"events": 5})
    ReplicaSetState.objects.update(heartbeat_at=timezone.now() - datetime.timedelta(minutes=5))
    body = admin_client.get("/api/connectors/orders/status/").json()
    assert body["desired_state"] == "paused"
    assert body["replica_sets"][0]["live_phase"] == "stopped"
    assert body["replica_sets"][0]["stale"] is False
    services.report_observed("orders", "rs0", worker="w1@host", phase="streaming", metrics={"events": 5})
    ReplicaSetState.objects.update(heartbeat_at=timezone.now() - datetime.timedelta(minutes=5))
    assert admin_client.get("/api/connectors/orders/status/").json()["replica_sets"][0]["stale"] is True
