"""Deleting a Spark job from its page: its runs go, its output folder only when asked for; the API's DELETE takes
?output=true the same way."""

from __future__ import annotations

import pytest

from tests.api_support import client_for, make_user
from web.connectors.models import AuditEntry
from web.sparkjobs.models import JobDefinition

pytestmark = pytest.mark.django_db


@pytest.fixture
def output(settings, tmp_path):
    settings.SPARK_OUTPUT_ROOT = str(tmp_path / "spark")
    return tmp_path / "spark"


def job(name: str, output) -> JobDefinition:
    folder = output / name / "run-1"
    folder.mkdir(parents=True)
    (folder / "part-0.parquet").write_bytes(b"data")
    return JobDefinition.objects.create(name=name, template="stats", topics=["t"])


def test_delete_page_keeps_or_deletes_the_output(client, django_user_model, output, django_capture_on_commit_callbacks):
    client.force_login(make_user(django_user_model, "operator"))
    job("kept", output)
    job("gone", output)
    assert 'data-action="delete"' in client.get("/spark/jobs/kept/").content.decode()
    assert 'value="keep" checked' in client.get("/spark/jobs/kept/delete/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/spark/jobs/kept/delete/", {"output": "keep"})
        client.post("/spark/jobs/gone/delete/", {"output": "delete"})
    assert not JobDefinition.objects.exists()
    assert (output / "kept" / "run-1" / "part-0.parquet").exists()
    assert not (output / "gone").exists() and output.exists()
    assert AuditEntry.objects.get(action="spark.delete", target="spark-job:gone").after == {"output": "deleted"}


def test_viewer_cannot_delete_and_the_api_takes_output_true(client, django_user_model, output,
                                                           django_capture_on_commit_callbacks):
    client.force_login(make_user(django_user_model, "viewer"))
    job("stats", output)
    assert client.post("/spark/jobs/stats/delete/", {"output": "delete"}).status_code == 403
    api = client_for(make_user(django_user_model, "operator"))
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete("/api/spark/jobs/stats/?output=true").status_code == 204
    assert not (output / "stats").exists()
