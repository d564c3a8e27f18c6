"""The platform's own processes for tests, run as deployed: a temporary SQLite file as `manage.py migrate` leaves it
(migrated once per test process, copied for each platform), Celery workers and beat, and daphne serving the ASGI
application, all subprocesses configured only through the environment, sharing the stack's Redis (in a database of
their own, away from a running demo) and Kafka.

Used by tests/faults/test_celery_supervision.py and tests/browser/.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from contextlib import closing
from pathlib import Path

import pytest
import redis

from tests.integration.test_celery_roundtrip import wait_for_ready, with_database
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


_migrated: list[Path] = []  # the database `manage.py migrate` made in this test process, once


def migrated_database(env: dict[str, str]) -> Path:
    """A SQLite database that `manage.py migrate` (run with `env`, another database named) brought up to date, made
    on the first call of the test process and removed at its exit."""
    if not _migrated:
        folder = Path(tempfile.mkdtemp(prefix="cdc-migrated-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        database = folder / "db.sqlite3"
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, check=True,
                       env={**env, "DATABASE_URL": f"sqlite:///{database}"}, capture_output=True)
        _migrated.append(database)
    return _migrated[0]


class Platform:
    def __init__(self, stack, tmp_path: Path, redis_db: int, **env: str):
        self.tmp_path = tmp_path
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "REDIS_URL": with_database(stack.redis_url, redis_db),
            "KAFKA_BOOTSTRAP_SERVERS": stack.kafka_bootstrap,
            "CDC_SUPERVISOR_SECONDS": "1",
            **env,
        }
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        self.processes: dict[str, subprocess.Popen] = {}
        self.base_url = ""

    @classmethod
    def with_worker(cls, stack, tmp_path: Path, redis_db: int, label: str = "worker", **env: str) -> Platform:
        """Migrated, with one worker (`label`) on `streaming,default` and beat (the supervisor) running; call stop()."""
        platform = cls(stack, tmp_path, redis_db, **env)
        platform.migrate()
        platform.start_worker(label, queues="streaming,default", concurrency=2)
        platform.start_beat()
        return platform

    @classmethod
    def with_snapshot_queue(cls, stack, tmp_path: Path, redis_db: int) -> Platform:
        """Initial-snapshot chunks sent as Celery tasks to the `snapshot` queue, which no worker serves yet (a test
        starts one when the chunks may be read); the pipelines run on the worker `streamer`; call stop()."""
        return cls.with_worker(stack, tmp_path, redis_db, label="streamer", CDC_SNAPSHOT_DISPATCH="celery",
                               CDC_SNAPSHOT_CHUNK_HEARTBEAT_SECONDS="1", CDC_SNAPSHOT_CHUNK_START_SECONDS="300")

    def migrate(self) -> None:
        """The platform's database as `manage.py migrate` leaves it: a copy of the one the first platform of this
        test process migrated (the schema is the code's; migrating again took seconds per platform)."""
        database = self.tmp_path / "db.sqlite3"
        os.close(os.open(database, os.O_RDONLY | os.O_CREAT, 0o600))  # private, as the settings create it
        source = migrated_database(self.env)
        with closing(sqlite3.connect(source)) as migrated, closing(sqlite3.connect(database)) as copy:
            migrated.backup(copy)
        redis.Redis.from_url(self.env["REDIS_URL"]).flushdb()

    def _spawn(self, label: str, argv: list[str]) -> Path:
        log = self.tmp_path / f"{label}.log"
        with log.open("wb") as output:
            self.processes[label] = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=output,
                                                     stderr=subprocess.STDOUT)
        return log

    def start_worker(self, label: str, queues: str = "streaming,default", concurrency: int = 4) -> str:
        nodename = f"{label}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
        log = self._spawn(label, [
            sys.executable, "-m", "celery", "-A", "cdcplatform", "worker", "-Q", queues, "--pool=threads",
            f"--concurrency={concurrency}", "--hostname", nodename, "--loglevel=INFO", "--without-mingle",
            "--without-gossip"])
        wait_for_ready(self.processes[label], log, nodename)
        return nodename

    def start_beat(self) -> None:
        self._spawn("beat", [sys.executable, "-m", "celery", "-A", "cdcplatform", "beat", "--loglevel=INFO",
                             "--schedule", str(self.tmp_path / "beat-schedule")])

    def start_web(self, timeout: float = 60) -> str:
        """daphne on a free port; returns its base URL once /healthz answers."""
        port = free_port()
        log = self._spawn("web", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                  "cdcplatform.asgi:application"])
        self.base_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.processes["web"].poll() is not None:
                pytest.fail(f"daphne exited:\n{log.read_text(errors='replace')[-4000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=2) as response:  # noqa: S310
                    if response.status == 200:
                        return self.base_url
            except OSError:
                time.sleep(0.2)
        pytest.fail(f"daphne did not answer within {timeout}s:\n{log.read_text(errors='replace')[-4000:]}")

    def django(self, code: str) -> str:
        """Runs `code` in `manage.py shell` against the platform's database; returns its standard output."""
        result = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=self.env,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    def observed_phases(self, connector: str) -> dict[str, str]:
        """Each partition's observed phase, as the workers last reported it."""
        out = self.django(
            "import json\nfrom web.connectors.models import ReplicaSetState\n"
            f"states = ReplicaSetState.objects.filter(connector__name={connector!r})\n"
            "print(json.dumps({s.replica_set: s.phase for s in states}))")
        return json.loads(out.strip().splitlines()[-1])

    def request_state(self, connector: str, state: str) -> None:
        """running, paused or stopped, as an operator asks for it."""
        self.django("from web.connectors import services\nfrom web.connectors.models import Connector\n"
                    f"services.request_state(Connector.objects.get(name={connector!r}), {state!r}, user=None, "
                    "source='system')")

    def create_connector(self, properties: dict) -> None:
        self.django("from web.connectors import drafts, services\n"
                    f"parts = drafts.prepare({properties!r})\n"
                    "services.create_connector(parts, user=None, source='system', desired_state='running')\n")

    def api_as(self, username: str, role: str = "operator"):
        """A new user of `role` and `api(method, path, body=None) -> (status, JSON)` calling the platform's REST API
        with that user's token (the web server is started when it is not running yet)."""
        token = self.django(
            "from django.contrib.auth.models import Group, User\n"
            "from rest_framework.authtoken.models import Token\n"
            f"user = User.objects.create_user({username!r})\n"
            f"user.groups.add(Group.objects.get(name={role!r}))\n"
            "print(Token.objects.create(user=user).key)\n").strip().splitlines()[-1]
        web = self.processes.get("web")
        base = self.base_url if web is not None and web.poll() is None else self.start_web()

        def api(method: str, path: str, body=None):
            request = urllib.request.Request(  # noqa: S310 - our daphne, over http
                base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
                return response.status, json.loads(response.read())

        return api

    def wait_for(self, predicate, timeout: float, what: str, log_label: str = "worker"):
        """predicate()'s first truthy value within `timeout` seconds; else fails with the tail of a log."""
        return wait_for(predicate, timeout, what, lambda: self.log(log_label)[-4000:], interval=0.3)

    def log(self, label: str) -> str:
        path = self.tmp_path / f"{label}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
