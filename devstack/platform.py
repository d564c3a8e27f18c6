"""The platform's own processes for the demo: database migrations, the admin user, a Celery worker and
beat, the ASGI web server, the demo connectors (MongoDB, PostgreSQL, MariaDB) and their write workloads."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request

from devstack import settings, stack
from devstack.process import ManagedProcess, StackError, port_in_use, wait_until

WEB_PORT = int(os.environ.get("CDC_WEB_PORT", "8000"))
PYTHON = sys.executable

worker = ManagedProcess("worker")
beat = ManagedProcess("beat")
web = ManagedProcess("web")
workload = ManagedProcess("workload")
sql_workload = ManagedProcess("sql-workload")
PROCESSES = [sql_workload, workload, web, beat, worker]


def _manage(*args: str) -> str:
    result = subprocess.run([PYTHON, "manage.py", *args], cwd=settings.PROJECT_ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise StackError(f"manage.py {' '.join(args)} failed:\n{(result.stdout + result.stderr)[-3000:]}")
    return result.stdout


def _web_answers() -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{WEB_PORT}/healthz", timeout=2) as response:  # noqa: S310
            return response.status == 200
    except OSError:
        return False


def _start(process: ManagedProcess, argv: list[str]) -> str:
    if process.is_running():
        return "already running"
    process.start(argv, cwd=settings.PROJECT_ROOT)
    return f"started (pid {process.pid()})"


def up(echo=print) -> None:
    stack.up(echo=echo)
    stack.up(["mariadb"], echo=echo)  # not in a bare `up`: the demo's third source
    _manage("migrate", "--noinput")
    echo(_manage("ensure_admin").strip())
    echo(f"{'worker':<11} " + _start(worker, [
        PYTHON, "-m", "celery", "-A", "cdcplatform", "worker", "-Q", "default,streaming,snapshot,spark",
        "--pool", "threads", "--concurrency", "8", "--loglevel", "INFO", "-n", "demo@%h"]))
    echo(f"{'beat':<11} " + _start(beat, [
        PYTHON, "-m", "celery", "-A", "cdcplatform", "beat", "--loglevel", "INFO",
        "--schedule", str(settings.STATE_DIR / "celerybeat-schedule")]))
    if not web.is_running() and port_in_use(WEB_PORT):
        raise StackError(f"port {WEB_PORT} is taken by another program; stop it or set CDC_WEB_PORT")
    echo(f"{'web':<11} " + _start(web, [
        PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(WEB_PORT), "cdcplatform.asgi:application"]))
    wait_until(_web_answers, 60, f"the web server on port {WEB_PORT}", web)
    from devstack import demo

    for line in demo.up(_manage):
        echo(f"{'demo':<11} " + line)
    echo(f"{'workload':<11} " + _start(workload, [
        PYTHON, "-m", "devstack.workload", "--uri", settings.mongodb_uri(), "--rate", "5"]))
    echo(f"{'sql-workload':<11} " + _start(sql_workload, [PYTHON, "-m", "devstack.sql_workload", "--rate", "2"]))
    echo(f"\nDashboard: http://127.0.0.1:{WEB_PORT}/   (stop everything with ./cdc down)")


def down(echo=print) -> None:
    for process in PROCESSES:
        echo(f"{process.name:<11} {'stopped' if process.stop() else 'not running'}")
