"""A Kafka broker of a test's own (own ports, own state directory), so it can be frozen or killed without
disturbing the shared local stack. Started with the devstack's own code in a subprocess (its settings are read
from the environment at import); the jars are shared with the main stack, so nothing is downloaded again."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from devstack import settings

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateKafka:
    def __init__(self, home: Path):
        self.home = home
        self.port, self.controller_port = _free_port(), _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.env = {**os.environ, "DEVSTACK_HOME": str(home), "DEVSTACK_KAFKA_PORT": str(self.port),
                    "DEVSTACK_KAFKA_CONTROLLER_PORT": str(self.controller_port),
                    "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap, "PYTHONPATH": str(ROOT)}

    def _devstack(self, *args: str) -> None:
        subprocess.run([sys.executable, "-m", "devstack", *args, "kafka"], cwd=ROOT, env=self.env, check=True,
                       capture_output=True, timeout=180)

    def start(self) -> PrivateKafka:
        (self.home / "jars").mkdir(parents=True, exist_ok=True)
        shared_jars = settings.STATE_DIR / "jars" / "kafka"
        if not (self.home / "jars" / "kafka").exists():
            (self.home / "jars" / "kafka").symlink_to(shared_jars, target_is_directory=True)
        self._devstack("up")
        return self

    def stop(self) -> None:
        self.resume()
        self._devstack("down")

    @property
    def pid(self) -> int:
        pid_text, _ = (self.home / "run" / "kafka.pid").read_text().split()
        return int(pid_text)

    def freeze(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        try:
            os.kill(self.pid, signal.SIGCONT)
        except (FileNotFoundError, ProcessLookupError):
            pass

    def freeze_for(self, seconds: float) -> threading.Timer:
        """Freezes the broker now and resumes it after `seconds` (from a timer thread)."""
        self.freeze()
        timer = threading.Timer(seconds, self.resume)
        timer.daemon = True
        timer.start()
        return timer


@contextmanager
def private_kafka(home: Path):
    broker = PrivateKafka(home).start()
    try:
        yield broker
    finally:
        broker.stop()
