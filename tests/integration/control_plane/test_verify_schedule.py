"""Verify runs in the control plane without a worker: the nightly schedule starts a connector's run at its hour and
once a night; a second request while one is queued is refused with its number; a run whose worker vanished is
ended as failed by the next request."""

from __future__ import annotations

import datetime

import pytest

from web.connectors import verify_service
from web.connectors.models import Connector
from web.connectors.verify_models import VerifyRun, VerifyStatus

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

UTC = datetime.UTC


@pytest.fixture
def sent(monkeypatch):
    queued: list[int] = []
    monkeypatch.setattr(verify_service, "send", queued.append)
    return queued


def test_the_nightly_run_starts_at_its_hour_once_a_night(sent, django_capture_on_commit_callbacks):
    connector = Connector.objects.create(name="nightly", topic_prefix="nightly")
    Connector.objects.create(name="other", topic_prefix="other")  # no schedule: never started
    verify_service.set_schedule(connector, nightly=True, hour=2, user=None, source="system")
    night = datetime.datetime(2026, 11, 28, 2, 5, tzinfo=UTC)
    assert verify_service.start_nightly(night.replace(hour=1)) == []
    with django_capture_on_commit_callbacks(execute=True):
        started = verify_service.start_nightly(night)
    assert [(r.connector.name, r.trigger) for r in started] == [("nightly", "schedule")]
    assert sent == [started[0].pk]
    VerifyRun.objects.filter(pk=started[0].pk).update(status=VerifyStatus.DONE, requested_at=night)
    assert verify_service.start_nightly(night + datetime.timedelta(minutes=30)) == []  # already ran tonight
    assert len(verify_service.start_nightly(night + datetime.timedelta(days=1))) == 1


def test_one_run_at_a_time_and_a_lost_run_is_ended(sent, settings):
    connector = Connector.objects.create(name="busy", topic_prefix="busy")
    first = verify_service.request_verify(connector, user=None, source="system")
    with pytest.raises(verify_service.VerifyBusy, match=f"Verify run #{first.pk} of busy is queued"):
        verify_service.request_verify(connector, user=None, source="system")
    settings.CDC_VERIFY_STALE_SECONDS = 60
    long_ago = datetime.datetime.now(UTC) - datetime.timedelta(minutes=5)
    VerifyRun.objects.filter(pk=first.pk).update(status=VerifyStatus.RUNNING, started_at=long_ago)
    second = verify_service.request_verify(connector, user=None, source="system")
    first.refresh_from_db()
    assert first.status == VerifyStatus.FAILED and "its worker is gone" in first.error
    assert second.status == VerifyStatus.QUEUED
