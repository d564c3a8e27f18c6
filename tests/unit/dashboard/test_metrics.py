"""`/metrics` through prometheus_client: both exposition formats parse with the library's own parsers, types and
HELP lines are there, label values are escaped, OpenMetrics is served when the Accept header asks for it."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

from tests.api_support import create_connector, make_user
from web.connectors.models import ReplicaSetState
from web.dashboard import observed

pytestmark = pytest.mark.django_db

ODD = 'inv."odd"\\name\nline'  # a collection name needing every escape of the format


@pytest.fixture(autouse=True)
def _quiet_redis(no_redis, monkeypatch):
    monkeypatch.setattr("workers.publish.history", lambda connector, rs: [])


@pytest.fixture
def viewer(client, django_user_model):
    client.force_login(make_user(django_user_model, "viewer"))


def report(connector, replica_set, heartbeat_at):
    ReplicaSetState.objects.create(
        connector=connector, replica_set=replica_set, phase="streaming", since=heartbeat_at, heartbeat_at=heartbeat_at,
        metrics={"metrics": {"TotalNumberOfEventsSeen": 4321, "EventsPerSecond": 3.5, "MilliSecondsBehindSource": 1500,
                             "Connected": True, "LastPrimaryElectionMs": 1_700_000_000_500},
                 "sink": {"messages": 17, "transactions_committed": 3},
                 "snapshot": {"SnapshotRunning": True,
                              "Collections": {ODD: {"chunks_total": 4, "chunks_done": 3, "rows": 30,
                                                    "estimated_rows": 40}}}})


def samples(families):
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in families for sample in family.samples}


def test_text_format_parses_with_types_help_and_escaped_labels(client, viewer):
    connector = create_connector("orders")
    report(connector, "rs0", timezone.now())
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = response.content.decode()
    assert "# TYPE cdc_events_seen_total counter" in text
    assert "# HELP cdc_events_seen_total Change events seen since the pipeline started" in text
    assert "# TYPE cdc_events_per_second gauge" in text
    assert 'collection="inv.\\"odd\\"\\\\name\\nline"' in text
    families = {family.name: family for family in parse_text(text)}
    assert families["cdc_events_seen"].type == "counter"
    assert families["cdc_connector_desired_state"].type == "gauge"
    values = samples(families.values())
    rs0 = (("connector", "orders"), ("replica_set", "rs0"))
    assert values[("cdc_events_seen_total", rs0)] == 4321
    assert values[("cdc_events_per_second", rs0)] == 3.5
    assert values[("cdc_connected", rs0)] == 1
    assert values[("cdc_sink_messages_total", rs0)] == 17
    assert values[("cdc_last_primary_election_timestamp_seconds", rs0)] == 1_700_000_000.5
    assert values[("cdc_pipeline_phase", tuple(sorted((*rs0, ("phase", "streaming")))))] == 1
    assert values[("cdc_snapshot_rows_scanned", tuple(sorted((*rs0, ("collection", ODD)))))] == 30
    assert values[("cdc_connector_desired_state", (("connector", "orders"), ("state", "running")))] == 1


def test_openmetrics_when_the_scraper_asks_for_it(client, viewer):
    connector = create_connector("orders")
    report(connector, "rs0", timezone.now())
    response = client.get("/metrics", HTTP_ACCEPT="application/openmetrics-text; version=1.0.0; charset=utf-8")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
    assert "Accept" in response["Vary"]
    text = response.content.decode()
    assert text.endswith("# EOF\n")
    assert "# TYPE cdc_events_seen counter" in text
    families = {family.name: family for family in parse_openmetrics(text)}
    values = samples(families.values())
    assert values[("cdc_events_seen_total", (("connector", "orders"), ("replica_set", "rs0")))] == 4321
    assert families["cdc_sink_transactions_committed"].type == "counter"


def test_stale_pipeline_is_down_without_live_gauges(client, viewer):
    connector = create_connector("orders")
    report(connector, "rs0", timezone.now() - datetime.timedelta(seconds=observed.STALE_AFTER_SECONDS + 5))
    values = samples(parse_text(client.get("/metrics").content.decode()))
    rs0 = (("connector", "orders"), ("replica_set", "rs0"))
    assert values[("cdc_pipeline_up", rs0)] == 0
    assert values[("cdc_events_seen_total", rs0)] == 4321
    assert ("cdc_events_per_second", rs0) not in values and ("cdc_connected", rs0) not in values


def test_no_connector_is_an_empty_but_valid_exposition(client, viewer):
    response = client.get("/metrics", HTTP_ACCEPT="application/openmetrics-text")
    assert response.content == b"# EOF\n"
    assert list(parse_text(client.get("/metrics").content.decode())) == []


@pytest.mark.parametrize("phase", ["failed", "stopped"])
def test_failed_or_stopped_pipeline_is_down_even_while_it_reports(client, viewer, phase):
    connector = create_connector("orders")
    report(connector, "rs0", timezone.now())
    ReplicaSetState.objects.filter(connector=connector).update(phase=phase)
    values = samples(parse_text(client.get("/metrics").content.decode()))
    rs0 = (("connector", "orders"), ("replica_set", "rs0"))
    assert values[("cdc_pipeline_up", rs0)] == 0
    assert values[("cdc_pipeline_phase", tuple(sorted((*rs0, ("phase", phase)))))] == 1
