"""The spark-submit command line of a job (`sparkjobs.submit.command`). The command runs for real in
tests/spark/test_launcher.py: the worker starts exactly this command, and a streaming run there processes its topic,
a change produced while it runs, and ends on SIGTERM with a `cancelled` line and exit status 143. What a job can
reach from inside is in tests/spark/test_isolation.py."""

from __future__ import annotations

import os
import pwd

import pytest

from sparkjobs.errors import JobError
from sparkjobs.submit import command


def test_the_command_runs_the_template_on_the_master_with_the_kafka_source(monkeypatch, tmp_path):
    for name in ("SPARK_KAFKA_PACKAGES", "SPARK_LOCAL_IP"):
        monkeypatch.delenv(name, raising=False)
    result_file = str(tmp_path / "result.json")
    argv, env = command("latest_state", {"topics": ["t"], "mode": "stream"}, master="local[2]",
                        result_file=result_file)
    assert argv[argv.index("--master") + 1] == "local[2]" and "--jars" in argv
    assert argv[argv.index("latest_state") + 1:] == ["--args-json", '{"topics": ["t"], "mode": "stream"}',
                                                     "--result-file", result_file]
    assert argv[argv.index("latest_state") - 1].endswith("sparkjobs/run.py")
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"


def test_the_command_carries_no_secret_of_the_launcher(monkeypatch, tmp_path):
    secrets = {"SECRET_KEY": "s1", "CDC_ENCRYPTION_KEY": "s2", "DATABASE_URL": "postgres://u:s3@h/d",
               "REDIS_URL": "redis://:s4@h", "AWS_SECRET_ACCESS_KEY": "s5", "CDC_API_TOKEN": "s6"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "2g")
    argv, env = command("sql", {"sql": "SELECT 1"}, master="local[1]")
    assert not set(secrets) & set(env) and env["SPARK_DRIVER_MEMORY"] == "2g"
    assert not any(value in " ".join(argv) for value in secrets.values())


@pytest.mark.skipif(os.geteuid() != 0, reason="only root starts jobs as another user")
def test_as_root_the_job_runs_as_the_job_user_in_places_it_may_write(tmp_path):
    user = pwd.getpwnam(os.environ.get("SPARK_JOB_USER") or "cdc-spark")
    result_file = tmp_path / "result.json"
    output = tmp_path / "job" / "nested" / "out"
    argv, env = command("stats", {"topics": ["t"], "output_path": str(output)}, master="local[1]",
                        result_file=str(result_file))
    assert argv[0].endswith("setpriv") and f"--reuid={user.pw_uid}" in argv and "--pdeathsig=keep" in argv
    assert env["HOME"] == user.pw_dir and env["USER"] == user.pw_name
    assert result_file.stat().st_uid == user.pw_uid and result_file.stat().st_mode & 0o777 == 0o600
    for created in (tmp_path / "job", tmp_path / "job" / "nested"):  # the folders the job writes in are its own
        assert created.stat().st_uid == user.pw_uid
    assert tmp_path.stat().st_uid == 0  # an existing folder is not taken over


@pytest.mark.skipif(os.geteuid() != 0, reason="only root starts jobs as another user")
def test_a_place_the_job_user_cannot_write_is_refused_before_the_job_starts(tmp_path, monkeypatch):
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o755)
    with pytest.raises(JobError, match="is not writable by the Spark job user"):
        command("stats", {"topics": ["t"], "output_path": str(closed / "out")}, master="local[1]")
    monkeypatch.setenv("SPARK_JOB_USER", "no-such-user-here")
    with pytest.raises(JobError, match="the Spark job user no-such-user-here does not exist"):
        command("stats", {"topics": ["t"]}, master="local[1]")
    monkeypatch.setenv("SPARK_JOB_USER", "root")
    with pytest.raises(JobError, match="must run as an unprivileged user"):
        command("stats", {"topics": ["t"]}, master="local[1]")
