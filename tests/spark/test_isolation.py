"""A Spark job cannot reach the platform's secrets: seen from inside a real spark-submit job.

The job is started exactly as the worker starts it (`sparkjobs.submit.command`), from a launcher whose environment
holds the platform's secrets and which runs as root (as in CI). It is a `script` job, so it can do whatever a user's
code could do in the driver: it reports its own user, which of the platform's secret files it can read (the
encryption key file and the SQLite database, where settings.py puts them), what its environment holds, and whether it
can read the launcher's environment through /proc. None of it may be reachable.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from sparkjobs.output import PREFIX
from sparkjobs.submit import command

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SECRETS = {
    "SECRET_KEY": "django-secret-for-the-isolation-test",
    "CDC_ENCRYPTION_KEY": "fernet-key-for-the-isolation-test",
    "DATABASE_URL": "postgres://cdc:db-password-for-the-isolation-test@127.0.0.1/cdc",
    "REDIS_URL": "redis://:redis-password-for-the-isolation-test@127.0.0.1:6379/0",
    "CDC_API_TOKEN": "api-token-for-the-isolation-test",
}

SCRIPT = """
import os

def attempt(path):
    try:
        with open(path, "rb") as handle:
            handle.read(16)
        return "read"
    except OSError as error:
        return type(error).__name__

result = {
    "uid": os.getuid(),
    "euid": os.geteuid(),
    "spark_user": spark.sparkContext.sparkUser(),
    "access": {name: os.access(path, os.R_OK) for name, path in args["files"].items()},
    "open": {name: attempt(path) for name, path in args["files"].items()},
    "launcher_environ": attempt(f"/proc/{args['launcher']}/environ"),
    "environment": dict(os.environ),
}
"""


@pytest.fixture
def secret_files():
    """The platform's own secret files, created the way the platform creates them."""
    from django.conf import settings

    from cdcplatform.env import read_or_create_secret_key

    state = Path(settings.STATE_DIR)
    files = {name: str(state / name) for name in ("encryption_key", "secret_key")}
    for path in files.values():
        read_or_create_secret_key(Path(path))
    # the default database file, where settings.py creates it 0600 (the test run's own database is in memory)
    database = state / "db.sqlite3"
    os.close(os.open(database, os.O_RDONLY | os.O_CREAT, 0o600))
    files["database"] = str(database)
    for path in files.values():
        assert os.access(path, os.R_OK), f"the launcher itself must read {path}"
    return files


@pytest.fixture
def job_folder():
    """A folder the job's user can reach (pytest's own tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="cdc-spark-isolation-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="a launcher that is not root cannot start jobs as another user")
def test_a_job_cannot_read_the_key_file_the_database_or_the_launchers_secrets(stack, monkeypatch, secret_files,
                                                                             job_folder):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    script = job_folder / "probe.py"
    script.write_text(SCRIPT)
    result_file = job_folder / "result.json"
    argv, env = command("script", {"script_path": str(script), "bootstrap_servers": stack.kafka_bootstrap,
                                   "script_args": {"files": secret_files, "launcher": os.getpid()}},
                        master="local[1]", result_file=str(result_file))
    finished = subprocess.run(argv, env=env, cwd=job_folder, capture_output=True, text=True, timeout=300,  # noqa: S603
                              check=False)
    lines = [json.loads(line[len(PREFIX):]) for line in finished.stdout.splitlines() if line.startswith(PREFIX)]
    assert lines and lines[-1]["status"] == "succeeded", (lines[-1:], finished.stderr[-3000:])
    seen = lines[-1]["result"]
    job_user = pwd.getpwnam(os.environ.get("SPARK_JOB_USER") or "cdc-spark")
    assert seen["uid"] == seen["euid"] == job_user.pw_uid != 0
    assert seen["spark_user"] == job_user.pw_name
    assert seen["access"] == dict.fromkeys(secret_files, False)
    assert seen["open"] == dict.fromkeys(secret_files, "PermissionError")
    assert seen["launcher_environ"] == "PermissionError"
    leaked = {name for name, value in SECRETS.items() if name in seen["environment"]
              or any(value in text for text in seen["environment"].values())}
    assert not leaked
    assert json.loads(result_file.read_text())["status"] == "succeeded"  # the result file was written by the job
