"""Issue 13.2: one state model (web/connectors/state.py) rendered the same by the overview, the detail page, the
live feed, the REST API's status and Kafka Connect's status: a failed pipeline that stopped reporting is failed
everywhere (not stale on the overview while Connect says FAILED); a running one gone quiet is stale everywhere; a
replica set whose pipeline does not run says it is not connected instead of "Members unknown"."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tests.api_support import create_connector, make_user
from web.connectors import services
from web.connectors.connect import shapes
from web.connectors.models import ReplicaSetState
from web.dashboard import feed

pytestmark = pytest.mark.django_db

REPORT = {"final": False, "metrics": {"phase": "streaming", "Connected": True, "Members": ["db1:27017"],
                                      "Primary": "db1:27017"}}


@pytest.fixture(autouse=True)
def _quiet(no_redis, monkeypatch):
    monkeypatch.setattr("workers.publish.history", lambda connector, rs: [])
    monkeypatch.setattr(services, "running_pipelines", lambda connector: {})


def quiet_for(seconds: int) -> None:
    ReplicaSetState.objects.update(heartbeat_at=timezone.now() - datetime.timedelta(seconds=seconds))


def everywhere(client, django_user_model, name="orders") -> dict:
    user = make_user(django_user_model, "viewer")
    client.force_login(user)
    api = APIClient()
    api.force_authenticate(user)
    status = api.get(f"/api/connectors/{name}/status/").json()
    overview = client.get("/").content.decode()
    return {
        "api": status["status"],
        "api_rs": status["replica_sets"][0]["live_phase"],
        "feed": feed.connectors_summary(name)[name]["status"],
        "feed_rs": feed.connectors_summary(name)[name]["replica_sets"]["rs0"]["phase"],
        "hello_rs": next(s["phase"] for s in feed.stored_states(name) if s["replica_set"] == "rs0"),
        "overview": overview,
        "detail": client.get(f"/connectors/{name}/").content.decode(),
        "connect_task": shapes.status(services.Connector.objects.get(name=name))["tasks"][0]["state"],
    }


def test_a_failed_pipeline_that_stopped_reporting_is_failed_everywhere(client, django_user_model):
    create_connector("orders")
    services.report_observed("orders", "rs0", worker="w1", phase="streaming", metrics=REPORT)
    services.report_observed("orders", "rs0", worker="w1", phase="failed", error="Kafka unreachable")
    quiet_for(60)  # a failed pipeline does not report; the supervisor's next attempt is a while away
    seen = everywhere(client, django_user_model)
    assert (seen["api"], seen["feed"]) == ("failed", "failed")
    assert seen["api_rs"] == seen["feed_rs"] == seen["hello_rs"] == "failed"
    assert seen["connect_task"] == "FAILED"
    assert 'data-status="failed"' in seen["overview"] and "rs0: stale" not in seen["overview"]
    assert "not connected (failed)" in seen["detail"] and "db1:27017" not in seen["detail"]


def test_a_running_pipeline_gone_quiet_is_stale_everywhere(client, django_user_model):
    create_connector("orders")
    services.report_observed("orders", "rs0", worker="w1", phase="streaming", metrics=REPORT)
    quiet_for(60)
    seen = everywhere(client, django_user_model)
    assert (seen["api"], seen["feed"]) == ("stale", "stale")
    assert seen["api_rs"] == seen["feed_rs"] == seen["hello_rs"] == "stale"
    assert seen["connect_task"] == "UNASSIGNED"  # Connect has no "stale": not RUNNING, not FAILED


def test_a_stopped_replica_set_is_not_connected_rather_than_members_unknown(client, django_user_model):
    create_connector("orders", state="paused")
    services.report_observed("orders", "rs0", worker="w1", phase="stopped", metrics=REPORT)
    seen = everywhere(client, django_user_model)
    assert (seen["api"], seen["feed"], seen["connect_task"]) == ("paused", "paused", "PAUSED")
    assert "not connected (stopped)" in seen["detail"] and ">unknown<" not in seen["detail"]


def test_a_streaming_pipeline_lists_its_members(client, django_user_model):
    create_connector("orders")
    services.report_observed("orders", "rs0", worker="w1", phase="streaming", metrics=REPORT)
    seen = everywhere(client, django_user_model)
    assert (seen["api"], seen["api_rs"], seen["connect_task"]) == ("running", "streaming", "RUNNING")
    assert "db1:27017" in seen["detail"]


def test_a_quiet_replica_set_says_its_members_are_unknown(client, django_user_model):
    create_connector("orders")
    services.report_observed("orders", "rs0", worker="w1", phase="streaming", metrics=REPORT)
    quiet_for(60)
    assert "unknown (no recent report)" in everywhere(client, django_user_model)["detail"]
