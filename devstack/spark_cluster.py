"""A Spark standalone cluster on this machine: one master and two workers, started with the `spark-class` script of
the installed pyspark (no separate Spark download), bound to 127.0.0.1.

    python -m devstack up spark      # then: export SPARK_MASTER=spark://127.0.0.1:<port>

Ports: ``DEVSTACK_SPARK_MASTER_PORT`` (7177) for the master, the next port for its web UI, and two ports per worker
after that (its own and its UI's). Each worker offers ``DEVSTACK_SPARK_WORKER_CORES`` (1) cores and
``DEVSTACK_SPARK_WORKER_MEMORY`` (2g). Started by root, the three run as the Spark job user (``SPARK_JOB_USER``,
`sparkjobs.jobuser`), so executors have a job's privileges, not root's.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

from devstack import settings
from devstack.process import ManagedProcess, StackError, port_in_use, wait_until

HOST = "127.0.0.1"
HOME = settings.STATE_DIR / "spark-cluster"
WORKERS = 2
START_TIMEOUT_S = 180.0


def master_port() -> int:
    return int(os.environ.get("DEVSTACK_SPARK_MASTER_PORT", "7177"))


def master_ui_port() -> int:
    return master_port() + 1


def worker_ports(index: int) -> tuple[int, int]:
    """(worker port, worker UI port) of worker ``index`` (0-based)."""
    first = master_port() + 2 + 2 * index
    return first, first + 1


def master_url() -> str:
    return f"spark://{HOST}:{master_port()}"


def master_ui_url() -> str:
    return f"http://{HOST}:{master_ui_port()}"


class _Process(ManagedProcess):
    def __init__(self, name: str):
        self.name = name


process = _Process("spark-master")
workers = [_Process(f"spark-worker-{index + 1}") for index in range(WORKERS)]


def _spark_class() -> str:
    try:
        import pyspark
    except ImportError:
        raise StackError("pyspark is not installed; run: pip install -r requirements.txt") from None
    script = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not script.exists():
        raise StackError(f"{script} is missing: the pyspark installation has no spark-class")
    return str(script)


def _command(argv: list[str]) -> list[str]:
    """``argv`` with a job's environment only (`sparkjobs.submit.job_environment`: the executors it starts run jobs'
    code), as the Spark job user when root starts it."""
    import pyspark

    from sparkjobs.jobuser import job_user
    from sparkjobs.submit import job_environment

    for folder in (HOME, HOME / "logs", HOME / "work"):
        folder.mkdir(parents=True, exist_ok=True)
    env = {**job_environment(os.environ), "SPARK_HOME": str(Path(pyspark.__file__).parent), "SPARK_LOCAL_IP": HOST,
           "SPARK_LOG_DIR": str(HOME / "logs"), "SPARK_NO_DAEMONIZE": "1", "HOME": str(HOME),
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}  # no submission port beside the master's
    user = job_user()
    if user is not None:
        for folder in (HOME, HOME / "logs", HOME / "work"):
            os.chown(folder, user.uid, user.gid)
        env.update(HOME=user.home, USER=user.name)
    command = ["env", "-i", *(f"{key}={value}" for key, value in env.items()), *argv]
    return user.wrap(command) if user is not None else command


def state() -> dict | None:
    """The master's JSON status (its workers, applications), or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"{master_ui_url()}/json/", timeout=2) as response:  # noqa: S310 - loopback
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def alive_workers() -> int:
    status = state() or {}
    return sum(1 for worker in status.get("workers", []) if worker.get("state") == "ALIVE")


def up() -> str:
    if process.is_running() and all(worker.is_running() for worker in workers):
        wait_until(lambda: alive_workers() >= WORKERS, START_TIMEOUT_S, "the Spark workers to register", process)
        return f"already running: {master_url()} (UI {master_ui_url()})"
    taken = [port for port in (master_port(), master_ui_port(), *(p for i in range(WORKERS) for p in worker_ports(i)))
             if port_in_use(port)]
    if taken and not process.is_running():
        raise StackError(f"ports {taken} are taken by another program; choose others with DEVSTACK_SPARK_MASTER_PORT")
    HOME.mkdir(parents=True, exist_ok=True)
    spark_class = _spark_class()
    if not process.is_running():
        process.start(_command([spark_class, "org.apache.spark.deploy.master.Master", "--host", HOST,
                                "--port", str(master_port()), "--webui-port", str(master_ui_port())]))
        wait_until(lambda: state() is not None, START_TIMEOUT_S, "the Spark master to answer", process)
    cores = os.environ.get("DEVSTACK_SPARK_WORKER_CORES", "1")
    memory = os.environ.get("DEVSTACK_SPARK_WORKER_MEMORY", "2g")
    for index, worker in enumerate(workers):
        if worker.is_running():
            continue
        port, ui_port = worker_ports(index)
        worker.start(_command([
            spark_class, "org.apache.spark.deploy.worker.Worker", "--host", HOST, "--port", str(port),
            "--webui-port", str(ui_port), "--cores", cores, "--memory", memory,
            "--work-dir", str(HOME / "work"), master_url(),
        ]))
    wait_until(lambda: alive_workers() >= WORKERS, START_TIMEOUT_S, "the Spark workers to register", process)
    return f"master {master_url()} (UI {master_ui_url()}) with {WORKERS} workers"


def down() -> bool:
    stopped = [worker.stop() for worker in workers]
    return process.stop() or any(stopped)
