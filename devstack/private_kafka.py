"""A Kafka broker (or a cluster of `brokers` nodes) of its own (own ports, own state directory) for fault tests and
the fault campaign: it can be frozen (SIGSTOP), thawed or killed without disturbing the shared local stack; a
cluster's nodes can be killed and started one by one.

It is started with the devstack's own code in a subprocess (the devstack reads its settings from the environment
at import) and shares the main stack's jars, so nothing is downloaded again.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from devstack import settings
from devstack.process import StackError, recorded_pid


def free_ports(count: int, within: range | None = None) -> list[int]:
    """`count` distinct ports nothing listens on right now: any (the system's choice), or consecutive ones `within`."""
    if within is not None:
        return _free_run(count, within)
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_run(count: int, within: range) -> list[int]:
    for first in range(within.start, within.stop - count + 1):
        run = list(range(first, first + count))
        if all(_is_free(port) for port in run):
            return run
    raise StackError(f"no {count} consecutive free ports between {within.start} and {within.stop - 1}")


class PrivateKafka:
    def __init__(self, home: Path, ports: range | None = None, brokers: int = 1):
        self.home = home
        self.brokers = brokers
        chosen = free_ports(2 * brokers, ports)
        self.ports = chosen[0::2]  # each node's client port, node 1 first
        self.port, controller = chosen[0], chosen[1]
        self.bootstrap = ",".join(f"127.0.0.1:{port}" for port in self.ports)
        further = ",".join(f"{chosen[i]}:{chosen[i + 1]}" for i in range(2, len(chosen), 2))
        self.env = {**os.environ, "DEVSTACK_HOME": str(home), "DEVSTACK_KAFKA_PORT": str(self.port),
                    "DEVSTACK_KAFKA_CONTROLLER_PORT": str(controller), "DEVSTACK_KAFKA_BROKERS": str(brokers),
                    "DEVSTACK_KAFKA_NODE_PORTS": further}
        self.env.pop("KAFKA_BOOTSTRAP_SERVERS", None)

    def _devstack(self, command: str) -> None:
        result = subprocess.run([sys.executable, "-m", "devstack", command, "kafka"], env=self.env,
                                cwd=settings.PROJECT_ROOT, capture_output=True, text=True, timeout=300 * self.brokers)
        if result.returncode != 0:
            raise StackError(f"devstack {command} kafka failed:\n{(result.stdout + result.stderr)[-3000:]}")

    def start(self) -> PrivateKafka:
        self.home.mkdir(parents=True, exist_ok=True)
        shared_jars = settings.STATE_DIR / "jars"
        if shared_jars.is_dir() and not (self.home / "jars").exists():
            (self.home / "jars").symlink_to(shared_jars)  # no second download from Maven Central
        self._devstack("up")
        return self

    @property
    def pid(self) -> int:
        return self.node_pid(1)

    def node_pid(self, node: int) -> int:
        return int(self._pid_file(node).read_text().split()[0])

    def _pid_file(self, node: int) -> Path:
        return self.home / "run" / ("kafka.pid" if node == 1 else f"kafka-{node}.pid")

    def node_of_port(self, port: int) -> int:
        return self.ports.index(port) + 1

    def freeze(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.pid, signal.SIGCONT)

    def freeze_for(self, seconds: float) -> threading.Timer:
        """Freezes the broker now and thaws it after `seconds` (from a timer thread)."""
        self.freeze()
        timer = threading.Timer(seconds, self.thaw)
        timer.daemon = True
        timer.start()
        return timer

    def stop(self) -> None:
        """Kills every node at once (SIGKILL, a frozen one too), then lets the devstack forget them. What a private
        broker holds is of no use once it is stopped, and a cluster's graceful stop takes each node's controlled
        shutdown in turn: the last ones, left without a quorum of controllers, waited out the 30 s bound."""
        nodes = [self._pid_file(node) for node in range(1, self.brokers + 1)]
        for pid_file in nodes:
            pid = recorded_pid(pid_file)
            if pid is not None:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 30  # the ports are free again once the processes are gone
        while any(recorded_pid(pid_file) is not None for pid_file in nodes) and time.monotonic() < deadline:
            time.sleep(0.1)
        self._devstack("down")


@contextmanager
def private_kafka(home: Path):
    broker = PrivateKafka(home).start()
    try:
        yield broker
    finally:
        broker.stop()
