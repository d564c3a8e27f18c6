"""The platform's own processes for the zombie-worker scenario, on a private stack: a Redis server (`python -m
devstack up redis` in the campaign's DEVSTACK_HOME, on a port within --ports), a SQLite database migrated with
`manage.py migrate`, Celery workers and beat, configured only through the environment, as deployed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

from devstack import settings
from devstack.private_kafka import free_ports
from devstack.process import StackError


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (a worker and the pipeline processes it started)."""
    found = [pid]
    for child in Path(f"/proc/{pid}/task").glob("*/children"):
        for text in child.read_text().split():
            found += process_tree(int(text))
    return found


class PrivatePlatform:
    def __init__(self, home: Path, kafka_bootstrap: str, ports: range | None = None):
        self.home = home
        self.redis_port = free_ports(1, ports)[0] if ports is not None else free_ports(1)[0]
        self.stack_env = {**os.environ, "DEVSTACK_HOME": str(home / "stack"),
                          "DEVSTACK_REDIS_PORT": str(self.redis_port)}
        self.env = {**os.environ, "DATABASE_URL": f"sqlite:///{home / 'db.sqlite3'}",
                    "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "CDC_SUPERVISOR_SECONDS": "1"}
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        self.workers: dict[str, subprocess.Popen] = {}
        self.nodes: dict[str, str] = {}  # label -> Celery node name
        self.beat: subprocess.Popen | None = None
        self.redis = None

    def _run(self, argv: list[str], env: dict, timeout: float = 300) -> str:
        try:
            result = subprocess.run([sys.executable, *argv], cwd=settings.PROJECT_ROOT, env=env,
                                    capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise StackError(f"{' '.join(argv[:3])} did not finish within {timeout:.0f}s") from None
        if result.returncode != 0:
            raise StackError(f"{' '.join(argv[:3])} failed:\n{(result.stdout + result.stderr)[-3000:]}")
        return result.stdout

    def start(self) -> PrivatePlatform:
        import redis

        self.home.mkdir(parents=True, exist_ok=True)
        self._run(["-m", "devstack", "up", "redis"], self.stack_env)
        secret = (self.home / "stack" / "redis_password").read_text().strip()
        self.env["REDIS_URL"] = f"redis://:{quote(secret, safe='')}@127.0.0.1:{self.redis_port}/0"
        self.redis = redis.Redis.from_url(self.env["REDIS_URL"])
        self._run(["manage.py", "migrate", "--noinput"], self.env)
        return self

    def start_worker(self, label: str) -> None:
        node = f"{label}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
        log = self.home / f"{label}.log"
        with log.open("ab") as output:
            self.workers[label] = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "cdcplatform", "worker", "-Q", "streaming,default",
                 "--pool=threads", "--concurrency=2", "--hostname", node, "--loglevel=INFO", "--without-mingle",
                 "--without-gossip"], cwd=settings.PROJECT_ROOT, env=self.env, stdout=output,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.nodes[label] = node
        deadline = time.monotonic() + 180
        while f"{node} ready." not in log.read_text(errors="replace"):
            if self.workers[label].poll() is not None or time.monotonic() > deadline:
                raise StackError(f"the Celery worker {label} did not start:\n"
                                 f"{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)

    def start_beat(self) -> None:
        with (self.home / "beat.log").open("ab") as output:
            self.beat = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "cdcplatform", "beat", "--loglevel=INFO", "--schedule",
                 str(self.home / "beat-schedule")], cwd=settings.PROJECT_ROOT, env=self.env, stdout=output,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def create_connector(self, properties: dict) -> None:
        """Through the service layer, as the API does; the properties (a password among them) go through a file
        only the campaign's user reads, not the command line."""
        given = self.home / f"{properties['name']}.json"
        given.touch(0o600)
        given.write_text(json.dumps(properties))
        self._run(["manage.py", "shell", "-c",
                   "import json, pathlib\nfrom web.connectors import drafts, services\n"
                   f"parts = drafts.prepare(json.loads(pathlib.Path({str(given)!r}).read_text()))\n"
                   "services.create_connector(parts, user=None, source='system', desired_state='running')\n"],
                  self.env)

    def holder(self, connector: str) -> str | None:
        """The label of the worker whose pipeline holds the connector's lease, None when no one does."""
        for key in self.redis.scan_iter(match=f"cdc:lease:{connector}:*"):
            value = self.redis.get(key)
            if value:
                return self._label(value.decode().split("|")[0])
        return None

    def stored_state(self, connector: str) -> list[tuple[str, str | None, str | None]]:
        """The control plane's stored (partition, phase, worker label) of each of the connector's partitions, as the
        dashboard and the API show them."""
        out = self._run(["manage.py", "shell", "-c",
                         "import json\nfrom web.connectors.models import ReplicaSetState\n"
                         f"rows = ReplicaSetState.objects.filter(connector__name={connector!r})\n"
                         "print(json.dumps([[r.replica_set, r.phase, r.worker] for r in rows]))"], self.env)
        rows = json.loads(out.strip().splitlines()[-1])
        return [(partition, phase, self._label(worker)) for partition, phase, worker in rows]

    def _label(self, node: str | None) -> str | None:
        return next((label for label in self.nodes if node and node.startswith(f"{label}-")), node)

    def freeze(self, label: str) -> list[int]:
        """SIGSTOP of a worker and its pipeline processes; returns them, for thaw()."""
        pids = process_tree(self.workers[label].pid)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        return pids

    @staticmethod
    def thaw(pids: list[int]) -> None:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def exited(self) -> list[str]:
        """Workers (or beat) that are no longer running."""
        gone = [label for label, process in self.workers.items() if process.poll() is not None]
        return gone + (["beat"] if self.beat is not None and self.beat.poll() is not None else [])

    def log_text(self) -> str:
        return "".join((self.home / f"{label}.log").read_text(errors="replace") for label in self.workers)

    def stop(self) -> None:
        processes = [*self.workers.values(), *([self.beat] if self.beat else [])]
        for process in processes:
            if process.poll() is None:
                self.thaw(process_tree(process.pid))
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                for pid in process_tree(process.pid):
                    os.kill(pid, signal.SIGKILL)
                process.wait()
        try:
            self._run(["-m", "devstack", "down", "redis"], self.stack_env)
        except StackError:
            pass  # the campaign's work directory goes anyway
