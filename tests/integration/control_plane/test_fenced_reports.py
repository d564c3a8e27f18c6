"""A worker frozen past its lease (a zombie) comes back after another worker took its pipeline over: Kafka fences its
producer and it stops, and its last reports reach the control plane. They must not overwrite what the new owner
reported: the stored phase and worker stay the new owner's, and the activity log says the zombie was superseded."""

from __future__ import annotations

import pytest

from tests.api_support import create_connector
from web.connectors import services
from web.connectors.models import ActivityEntry, ActivityKind, Phase, ReplicaSetState
from workers import control
from workers.leases import Lease, lease_key

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

FENCED = "another worker took over this pipeline's transactional id"


@pytest.fixture
def connector(unique_name, stack):
    return create_connector(unique_name[-40:].strip("-"))


def state_of(connector) -> tuple[str, str]:
    stored = ReplicaSetState.objects.get(connector=connector, replica_set="rs0")
    return stored.phase, stored.worker


def test_reports_of_a_worker_whose_lease_was_taken_over_change_nothing(connector):
    key = lease_key(connector.name, "rs0")
    old = Lease(control.client(), key, "worker-old", 60_000)
    assert old.acquire()
    services.report_observed(connector.name, "rs0", worker="worker-old", phase=Phase.STREAMING, lease=old.value)
    assert state_of(connector) == (Phase.STREAMING, "worker-old")

    control.client().delete(key)  # the old worker was frozen: its lease expired
    new = Lease(control.client(), key, "worker-new", 60_000)
    assert new.acquire()
    try:
        services.report_observed(connector.name, "rs0", worker="worker-new", phase=Phase.SNAPSHOT, lease=new.value)
        services.report_observed(connector.name, "rs0", worker="worker-new", phase=Phase.STREAMING, lease=new.value,
                                 metrics={"phase": "streaming", "owner": "new"})

        # the zombie wakes up: a periodic report, its final one, and the task's last word after it stopped
        services.report_observed(connector.name, "rs0", worker="worker-old", phase=Phase.STREAMING, lease=old.value,
                                 metrics={"phase": "streaming", "owner": "old"})
        services.report_observed(connector.name, "rs0", worker="worker-old", phase=Phase.FAILED, lease=old.value,
                                 error=FENCED)
        services.report_observed(connector.name, "rs0", worker="worker-old", phase=Phase.STOPPED, lease=old.value)

        assert state_of(connector) == (Phase.STREAMING, "worker-new")
        stored = ReplicaSetState.objects.get(connector=connector, replica_set="rs0")
        assert stored.metrics == {"phase": "streaming", "owner": "new"} and not stored.last_error
        superseded = ActivityEntry.objects.filter(connector=connector, worker="worker-old", kind=ActivityKind.STATE)
        texts = [entry.text for entry in superseded.order_by("at", "id")]
        assert texts[0] == "streaming (on worker-old)"
        assert len(texts) == 3 and all("no longer holds rs0" in t and "worker-new" in t for t in texts[1:]), texts
        assert FENCED in texts[1]
        assert not ActivityEntry.objects.filter(connector=connector, kind=ActivityKind.ERROR).exists()

        # the new owner's reports still go through, a phase change among them
        services.report_observed(connector.name, "rs0", worker="worker-new", phase=Phase.FAILED, lease=new.value,
                                 error="the source is unreachable")
        assert state_of(connector) == (Phase.FAILED, "worker-new")
    finally:
        new.release()


def test_a_report_after_the_lease_was_released_is_stored(connector):
    """A pipeline's last report comes after it released its lease (no one holds it): it is the pipeline's own word."""
    lease = Lease(control.client(), lease_key(connector.name, "rs0"), "worker-a", 60_000)
    assert lease.acquire()
    services.report_observed(connector.name, "rs0", worker="worker-a", phase=Phase.STREAMING, lease=lease.value)
    assert lease.release()
    services.report_observed(connector.name, "rs0", worker="worker-a", phase=Phase.STOPPED, lease=lease.value)
    assert state_of(connector) == (Phase.STOPPED, "worker-a")
