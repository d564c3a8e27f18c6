"""A "Sync to a Delta table" job through the API: it is a stream (a batch one is refused with the reason), its run
gets the stream's output and checkpoint folders and its delete mode; a run on a standalone master links to the
master's page of its application."""

from __future__ import annotations

import pytest
from django.test import override_settings

from tests.api_support import client_for, make_user
from web.sparkjobs.models import JobDefinition, JobRun, RunStatus

pytestmark = pytest.mark.django_db

SYNC = {"name": "orders-delta", "template": "delta_sync", "mode": "stream", "topics": ["shop.public.orders"],
        "arguments": {"delete_mode": "soft"}}


def test_a_delta_sync_job_is_a_stream_with_its_folders_and_delete_mode(django_user_model, tmp_path):
    operator = client_for(make_user(django_user_model, "operator"))
    with override_settings(SPARK_OUTPUT_ROOT=str(tmp_path)):
        refused = operator.post("/api/spark/jobs/", {**SYNC, "mode": "batch"}, format="json")
        assert refused.status_code == 400
        assert "a Delta sync is a stream" in str(refused.json())
        bad_mode = operator.post("/api/spark/jobs/", {**SYNC, "arguments": {"delete_mode": "later"}}, format="json")
        assert bad_mode.status_code == 400 and "delete_mode" in str(bad_mode.json())
        created = operator.post("/api/spark/jobs/", SYNC, format="json")
        assert created.status_code == 201, created.json()
        from web.sparkjobs.arguments import run_arguments

        args = run_arguments(JobDefinition.objects.get(name=SYNC["name"]), run_id=7)
    assert args["mode"] == "stream" and args["delete_mode"] == "soft"
    assert args["output_path"] == str(tmp_path / SYNC["name"] / "stream")
    assert args["checkpoint_path"] == str(tmp_path / SYNC["name"] / "checkpoint")


def test_a_run_on_a_standalone_master_links_to_its_application_page(client, django_user_model):
    client.force_login(make_user(django_user_model, "viewer"))
    definition = JobDefinition.objects.create(**SYNC)
    run = JobRun.objects.create(definition=definition, template="delta_sync", mode="stream",
                                status=RunStatus.SUCCEEDED, master="spark://127.0.0.1:44040",
                                app_id="app-20261128210000-0001")
    local = JobRun.objects.create(definition=definition, template="delta_sync", mode="stream",
                                  status=RunStatus.SUCCEEDED, master="local[2]", app_id="local-1")
    with override_settings(SPARK_MASTER_UI_URL="http://127.0.0.1:44041"):
        page = client.get(f"/spark/runs/{run.pk}/").content.decode()
        assert 'href="http://127.0.0.1:44041/app/?appId=app-20261128210000-0001"' in page
        assert 'id="master-app-link"' not in client.get(f"/spark/runs/{local.pk}/").content.decode()
