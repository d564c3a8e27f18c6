"""Issue 13.15: a connector's activity log joins requests and how they ended, the phase changes and errors the
workers report, configuration changes and a pipeline gone quiet, newest first, with time and reason."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tests.api_support import create_connector, make_user
from web.connectors import services
from web.connectors.activity import timeline
from web.connectors.models import ActivityEntry, ReplicaSetState

pytestmark = pytest.mark.django_db


@pytest.fixture
def connector(no_redis):
    return create_connector(**{"signal.data.collection": "inventory.signals"})


def texts(connector, kind=None):
    return [line["text"] for line in timeline(connector) if kind is None or line["kind"] == kind]


def test_phase_changes_and_errors_are_recorded_once(connector):
    services.report_observed("orders", "rs0", worker="w1", phase="snapshot")
    services.report_observed("orders", "rs0", worker="w1", phase="snapshot")  # a report like every second
    services.report_observed("orders", "rs0", worker="w1", phase="streaming")
    services.report_observed("orders", "rs0", worker="w1", phase="failed", error="Kafka unreachable: timeout")
    services.report_observed("orders", "rs0", worker="w1", phase="failed", error="Kafka unreachable: timeout")
    services.report_observed("orders", "rs0", worker="w2", phase="streaming")
    assert texts(connector, "state") == ["failed → streaming (on w2)", "streaming → failed (on w1)",
                                         "snapshot → streaming (on w1)", "snapshot (on w1)"]
    assert texts(connector, "error") == ["Kafka unreachable: timeout"]
    error = next(line for line in timeline(connector) if line["kind"] == "error")
    assert error["replica_set"] == "rs0" and error["by"] == "w1" and error["at"] is not None


def test_requests_their_outcome_and_changes_in_one_timeline(connector):
    services.report_observed("orders", "rs0", worker="w1", phase="streaming")
    snapshot = services.request_snapshot(connector, ["inventory.orders"], user=None, source="api")
    services.mark_snapshot(snapshot.pk, "running", "taken up by rs0 on w1")
    services.request_state(connector, "paused", user=None, source="dashboard")
    request = services.latest_request(connector)
    services.report_observed("orders", "rs0", worker="w1", phase="stopped")
    services.finish_request(request.pk, "done", "rs0 stopped after committing its position")
    lines = timeline(connector)
    kinds = [(line["kind"], line["text"]) for line in lines]
    assert ("request", "pause requested") in kinds
    assert ("outcome", "pause done: rs0 stopped after committing its position") in kinds
    assert ("state", "streaming → stopped (on w1)") in kinds
    assert ("request", "snapshot of inventory.orders requested") in kinds
    assert ("received", "snapshot of inventory.orders: taken up by rs0 on w1") in kinds
    assert ("config", "connector.create (system)") in kinds
    assert [line["at"] for line in lines] == sorted((line["at"] for line in lines), reverse=True)
    asked = kinds.index(("request", "pause requested"))
    assert kinds.index(("outcome", "pause done: rs0 stopped after committing its position")) < asked  # newer


def test_a_pipeline_gone_quiet_shows_as_stale(connector):
    services.report_observed("orders", "rs0", worker="w1", phase="streaming")
    minute_ago = timezone.now() - datetime.timedelta(seconds=60)
    ReplicaSetState.objects.filter(replica_set="rs0").update(heartbeat_at=minute_ago)
    ActivityEntry.objects.update(at=minute_ago)
    assert texts(connector, "state")[0] == "stale: no report from w1 for 15 s (last phase streaming)"


def test_the_log_keeps_the_newest_entries(connector, monkeypatch):
    monkeypatch.setattr(services, "ACTIVITY_KEPT", 5)
    for number in range(8):
        services.record_activity(connector, "rs0", "error", f"error {number}")
    assert list(ActivityEntry.objects.values_list("text", flat=True)) == [f"error {n}" for n in (7, 6, 5, 4, 3)]


def test_activity_api(connector, django_user_model):
    services.report_observed("orders", "rs0", worker="w1", phase="failed", error="boom")
    api = APIClient()
    api.force_authenticate(make_user(django_user_model, "viewer"))
    lines = api.get("/api/connectors/orders/activity/").json()
    assert {"kind": "error", "text": "boom", "replica_set": "rs0", "by": "w1", "status": ""} in [
        {key: value for key, value in line.items() if key != "at"} for line in lines]
    assert len(api.get("/api/connectors/orders/activity/?limit=1").json()) == 1
    assert api.get("/api/connectors/orders/activity/?limit=abc").status_code == 400
    assert api.get("/api/connectors/orders/activity/?bogus=1").status_code == 400


def test_a_command_sent_says_how_many_pipelines_listened(connector, monkeypatch, django_capture_on_commit_callbacks):
    heard = iter([1, 0, None])
    monkeypatch.setattr("workers.control.notify",
                        lambda *a, on_sent=None, **k: on_sent(next(heard)) or True)
    with django_capture_on_commit_callbacks(execute=True):
        services.request_state(connector, "paused", user=None, source="api")
    with django_capture_on_commit_callbacks(execute=True):
        services.request_state(connector, "running", user=None, source="api")
    with django_capture_on_commit_callbacks(execute=True):
        services.request_state(connector, "stopped", user=None, source="api")
    assert texts(connector, "sent") == [
        "stop not sent: Redis is unreachable; the supervisor applies the desired state when it can",
        "resume sent, but no pipeline is listening now; the supervisor applies the desired state",
        "pause sent to 1 listening pipeline",
    ]


def test_first_start_logs_snapshot_then_streaming_even_when_the_snapshot_is_shorter_than_a_report(connector):
    """The worker's reporter over real pipeline metrics: `starting` is no phase of its own, and a snapshot that began
    and ended between two reports (a few rows) is still logged, before streaming."""
    from connectors.core.metrics import StreamingMetrics
    from workers.streaming import _reporter

    metrics = StreamingMetrics("orders", "rs0")
    report = _reporter("orders", "rs0", "w1")

    def send(final=False):
        report({"connector": "orders", "replica_set": "rs0", "worker": "w1", "final": final,
                "metrics": metrics.snapshot(), "sink": {}})

    metrics.set_phase("starting")
    send()
    assert texts(connector, "state") == []  # nothing observed yet, and certainly not "streaming"
    metrics.set_phase("snapshot")
    metrics.set_phase("streaming")  # the snapshot took less than the report interval
    send()
    send()
    assert texts(connector, "state") == ["snapshot → streaming (on w1)", "snapshot (on w1)"]
    metrics.set_phase("starting")  # restarted in the same process: the stored phase stays until it streams again
    send()
    assert ReplicaSetState.objects.get().phase == "streaming"
    assert texts(connector, "state") == ["snapshot → streaming (on w1)", "snapshot (on w1)"]
