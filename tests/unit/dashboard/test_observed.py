"""What the dashboard derives from worker reports: status words, queue fill, snapshot progress, chart series."""

from __future__ import annotations

import pytest

from web.dashboard import history, observed
from web.dashboard.templatetags import dashboard as formats


@pytest.mark.parametrize(
    ("desired", "phases", "status"),
    [
        ("running", ["streaming"], "running"),
        ("running", ["streaming", "snapshot"], "snapshot"),
        ("running", ["streaming", "failed"], "failed"),
        ("running", [], "starting"),
        ("running", ["stopped"], "starting"),
        ("running", ["stale"], "stale"),
        ("paused", ["streaming"], "pausing"),
        ("paused", ["stopped"], "paused"),
        ("paused", ["stale"], "paused"),
        ("stopped", ["snapshot"], "stopping"),
        ("stopped", [], "stopped"),
    ],
)
def test_connector_status(desired, phases, status):
    assert observed.connector_status(desired, phases) == status


def test_connector_status_trusts_leases_when_known():
    assert observed.connector_status("paused", ["streaming"], running=False) == "paused"
    assert observed.connector_status("stopped", [], running=True) == "stopping"


def test_queue_fill():
    assert observed.queue_fill({"QueueTotalCapacity": 200, "QueueRemainingCapacity": 150}) == 0.25
    assert observed.queue_fill({"QueueTotalCapacity": 0}) is None
    assert observed.queue_fill({}) is None


def test_snapshot_progress_counts_chunks_then_rows():
    progress = observed.snapshot_progress({"Collections": {
        "a.b": {"chunks_total": 4, "chunks_done": 1, "rows": 900, "estimated_rows": 1000},
        "a.c": {"chunks_total": 0, "chunks_done": 0, "rows": 30, "estimated_rows": 60},
        "a.d": {"chunks_total": 2, "chunks_done": 2, "rows": 120, "estimated_rows": 100},
    }})
    assert [(p.namespace, p.percent) for p in progress] == [("a.b", 25), ("a.c", 50), ("a.d", 100)]


def test_position_time_decodes_the_resume_token():
    token = {"resume_token": {"_data": "8265A1B2C3000000012B0229"}}
    assert observed.position_time(token) == {"t": 0x65A1B2C3, "i": 1, "iso": "2024-01-12T21:44:35Z"}
    assert observed.position_time({"resume_token": None}) is None


def test_history_series_buckets_and_skips_old_samples():
    samples = [{"t": 10_000 + 500 * i, "eps": float(i), "lag": 100 * i, "events": i} for i in range(8)]
    columns = history.series(samples, since_ms=10_500, step_s=2)
    # samples 1..7 at 10.5 s .. 13.5 s; 2-second slots: [10, 12) holds 1..3, [12, 14) holds 4..7
    assert columns == {"t": [10, 12], "eps": [2.0, 5.5], "lag": [300, 700], "events": [3, 7]}


def test_connector_rate_sums_replica_sets():
    per_rs = {"rs0": {"t": [1, 2], "eps": [1.0, None]}, "rs1": {"t": [2, 3], "eps": [2.5, 1.0]}}
    assert history.connector_rate(per_rs) == {"t": [1, 2, 3], "eps": [1.0, 2.5, 1.0]}


@pytest.mark.parametrize(("value", "text"), [(None, "—"), (850, "850 ms"), (3200, "3.2 s"), (250_000, "4 min 10 s"),
                                             (7_500_000, "2 h 5 min")])
def test_ms_format(value, text):
    assert formats.ms(value) == text


def test_count_and_rate_formats():
    assert formats.count(1234567) == "1\u202f234\u202f567"
    assert formats.rate(5.25) == "5.2/s"
    assert formats.rate(1234.0) == "1234/s"


@pytest.mark.django_db
def test_a_stopped_or_stale_pipeline_has_no_open_change_stream(no_redis):
    import datetime

    from django.utils import timezone

    from tests.api_support import create_connector
    from web.connectors import services

    create_connector("orders")
    state = services.report_observed("orders", "rs0", worker="w1", phase="streaming",
                                     metrics={"metrics": {"Connected": True}})
    assert observed.replica_set_view(state).stream_open
    stopped = services.report_observed("orders", "rs0", worker="w1", phase="stopped")
    assert not observed.replica_set_view(stopped).stream_open  # its last report still says Connected
    running = services.report_observed("orders", "rs0", worker="w1", phase="streaming")
    running.heartbeat_at = timezone.now() - datetime.timedelta(minutes=5)
    assert not observed.replica_set_view(running).stream_open


@pytest.mark.django_db
def test_last_error_clears_on_recovery_and_keeps_its_own_time(no_redis, client, django_user_model, monkeypatch):
    import datetime

    from tests.api_support import create_connector, make_user
    from web.connectors import services

    monkeypatch.setattr("workers.publish.history", lambda connector, rs: [])
    create_connector("orders")
    failed = services.report_observed("orders", "rs0", worker="w1", phase="failed", error="cannot reach db1")
    assert observed.current_error(failed) == "cannot reach db1"
    failed.last_error_at -= datetime.timedelta(hours=2)  # it happened at 10:00, reports went on since
    failed.save()
    client.force_login(make_user(django_user_model, "viewer"))
    page = client.get("/connectors/orders/").content.decode()
    assert f'datetime="{failed.last_error_at.isoformat()}' in page
    recovered = services.report_observed("orders", "rs0", worker="w2", phase="streaming")
    assert recovered.last_error == "cannot reach db1"  # the record is kept …
    assert observed.current_error(recovered) == ""  # … but no longer shown as the connector's error
    assert observed.connector_view(recovered.connector).last_error == ""
    assert "cannot reach db1" not in client.get("/").content.decode()


def test_a_completed_snapshot_of_empty_tables_is_complete_not_zero_percent():
    from django.template.loader import render_to_string

    snapshot = {"SnapshotKind": "initial", "SnapshotCompleted": True, "SnapshotDurationInSeconds": 1.5,
                "Collections": {"public.empty": {"rows": 0, "estimated_rows": 0, "chunks_done": 0,
                                                 "chunks_total": 0},
                                "public.few": {"rows": 3, "estimated_rows": 0, "chunks_done": 1, "chunks_total": 1}}}
    progress = observed.snapshot_progress(snapshot)
    assert [p.percent for p in progress] == [100, 100]
    html = " ".join(render_to_string("dashboard/_snapshot.html",
                                     {"snapshot": snapshot, "collections": progress}).split())
    assert "completed" in html and ">0 %" not in html and "/ ~0" not in html
    assert '<td class="num">empty</td>' in html and '<td class="num">3</td>' in html
