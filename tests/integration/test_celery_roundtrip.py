"""A Celery task makes the round trip through the real Redis broker and a real worker process.

The worker and the client use their own Redis database (15) on the stack's server, so a running `./cdc demo`
worker neither steals the test's tasks nor has its own tasks taken by the short-lived test worker. Both run as
subprocesses configured only through REDIS_URL, exactly as deployed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from cdcplatform.celery import QUEUES

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TEST_REDIS_DB = 15

SEND_PINGS = """
import json, sys
import django
django.setup()  # task modules import the connector models, as in any Django client of Celery
from workers.tasks import ping
replies = {queue: ping.apply_async(args=[{"via": queue}], queue=queue).get(timeout=30) for queue in sys.argv[1:]}
print(json.dumps(replies))
"""


def with_database(redis_url: str, db: int) -> str:
    parts = urlsplit(redis_url)
    return urlunsplit(parts._replace(path=f"/{db}"))


def wait_for_ready(process: subprocess.Popen, log: Path, nodename: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if f"{nodename} ready." in text:
            return
        if process.poll() is not None:
            pytest.fail(f"celery worker exited with {process.returncode}:\n{text[-4000:]}")
        time.sleep(0.2)
    pytest.fail(f"celery worker not ready after {timeout}s:\n{log.read_text(errors='replace')[-4000:]}")


@pytest.fixture(scope="module")
def celery_worker(stack, tmp_path_factory):
    """A real `celery -A cdcplatform worker` on all four queues; yields (REDIS_URL, nodename)."""
    redis_url = with_database(stack.redis_url, TEST_REDIS_DB)
    nodename = f"cdc-test-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
    log = tmp_path_factory.mktemp("celery") / "worker.log"
    command = [
        sys.executable, "-m", "celery", "-A", "cdcplatform", "worker", "-Q", ",".join(QUEUES),
        "--pool=solo", "--concurrency=1", "--hostname", nodename, "--loglevel=INFO",
        "--without-mingle", "--without-gossip",
    ]
    env = {**os.environ, "REDIS_URL": redis_url}
    with log.open("wb") as output:
        process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_for_ready(process, log, nodename)
        yield redis_url, nodename
    finally:
        process.terminate()  # warm shutdown: finishes the current task, then exits
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_ping_round_trip_on_every_queue(celery_worker):
    redis_url, nodename = celery_worker
    client = subprocess.run(
        [sys.executable, "-c", SEND_PINGS, *QUEUES], cwd=PROJECT_ROOT, env={**os.environ, "REDIS_URL": redis_url},
        capture_output=True, text=True, timeout=120,
    )
    assert client.returncode == 0, client.stderr[-4000:]
    replies = json.loads(client.stdout.strip().splitlines()[-1])
    assert replies == {queue: {"payload": {"via": queue}, "worker": nodename} for queue in QUEUES}
