"""The run task's edges without Spark: a missing jar or a spark-submit that ends without a result line ends the run
failed with a message; a spark-submit child dies with the worker that started it (PR_SET_PDEATHSIG)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from web.sparkjobs import services
from web.sparkjobs.models import JobDefinition, JobRun, RunStatus
from workers.spark import RunFollower

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(settings, tmp_path, monkeypatch):
    settings.SPARK_OUTPUT_ROOT = str(tmp_path)
    monkeypatch.setattr(services, "dispatch", lambda run_id: None)
    definition = JobDefinition.objects.create(name="counts", template="stats", topics=["t"])
    return services.launch(definition, None)


def test_a_missing_jar_fails_the_run_before_anything_starts(run, monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_KAFKA_JARS", str(tmp_path / "spark-sql-kafka.jar"))
    outcome = RunFollower(run.pk, worker="w@h", task_id="t").run()
    run.refresh_from_db()
    assert outcome["status"] == run.status == RunStatus.FAILED
    assert run.error.startswith("missing jar: ") and run.error_type == "submit" and run.finished_at
    assert "could not start spark-submit: missing jar" in run.log_lines.first().text


def test_a_spark_submit_without_a_result_line_fails_the_run(run, monkeypatch):
    monkeypatch.setenv("SPARK_SUBMIT", "/bin/false")
    RunFollower(run.pk, worker="w@h", task_id="t").run()
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.exit_code == 1 and run.error_type == "exit"
    assert run.error == "spark-submit exited with status 1 without reporting a result"


def test_a_run_that_is_no_longer_queued_is_left_alone(run):
    JobRun.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
    assert RunFollower(run.pk, worker="w@h", task_id="t").run()["status"] == "not queued"
    assert not run.log_lines.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("as_job_user", [False, True])
def test_the_job_process_dies_with_the_worker(tmp_path, as_job_user):
    """Also when it runs as the job user: a change of user clears the parent-death signal, which setpriv restores."""
    if as_job_user and os.geteuid() != 0:
        pytest.skip("only root starts jobs as another user")
    pid_file = tmp_path / "pid"
    wrap = "job_user().wrap" if as_job_user else "list"
    worker = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from sparkjobs.jobuser import job_user
        from workers.spark_process import SparkProcess
        job = SparkProcess({wrap}(["sleep", "300"]), {{"PATH": "/usr/bin:/bin"}})
        open({str(pid_file)!r}, "w").write(str(job.pid))
        time.sleep(300)
    """)])
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    job = int(pid_file.read_text())
    assert _alive(job)
    if as_job_user:  # setpriv has changed user once the process belongs to it
        while os.stat(f"/proc/{job}").st_uid != job_user_uid() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert os.stat(f"/proc/{job}").st_uid == job_user_uid()
    worker.kill()
    worker.wait(10)
    deadline = time.monotonic() + 10
    while _alive(job) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(job)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def job_user_uid() -> int:
    from sparkjobs.jobuser import job_user

    return job_user().uid
