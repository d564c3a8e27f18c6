"""The demo's state is private to its owner: the devstack Redis requires a generated password (0600 file, not on
redis-server's command line) that REDIS_URL's default carries; process logs are 0600 in a 0700 directory; the
SQLite database (sessions, API tokens) is 0600 in a 0700 directory. Each runs against a state dir of its own."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import redis as redis_client

from tests.platform_processes import ROOT, free_port

pytestmark = pytest.mark.integration


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run(args: list[str], env: dict) -> str:
    result = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result.stdout


@pytest.fixture
def private_env(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "DATABASE_URL")}
    return {**env, "DEVSTACK_HOME": str(tmp_path / "state"), "DEVSTACK_REDIS_PORT": str(free_port())}


def test_devstack_redis_requires_its_generated_password(private_env, tmp_path):
    state = tmp_path / "state"
    try:
        run(["-m", "devstack", "up", "redis"], private_env)
        secret_file = state / "redis_password"
        assert mode(secret_file) == 0o600 and mode(state / "redis" / "redis.conf") == 0o600
        assert mode(state / "redis") == 0o700
        assert mode(state / "logs") == 0o700 and mode(state / "logs" / "redis.log") == 0o600
        password = secret_file.read_text().strip()
        assert len(password) >= 32

        port = int(private_env["DEVSTACK_REDIS_PORT"])
        with pytest.raises(redis_client.AuthenticationError):
            redis_client.Redis(host="127.0.0.1", port=port, socket_timeout=5).ping()
        url = run(["-c", "from devstack import settings; print(settings.redis_url())"], private_env).strip()
        assert url == f"redis://:{password}@127.0.0.1:{port}/0"
        assert redis_client.Redis.from_url(url, socket_timeout=5).ping()
        shown = run(["-m", "devstack", "status"], private_env)
        assert password not in shown
        processes = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert password not in processes

        # Every consumer of REDIS_URL's default: Celery's broker and backend, channels-redis, the leases.
        check = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'cdcplatform.settings'; django.setup()\n"
                 "from asgiref.sync import async_to_sync\nfrom channels.layers import get_channel_layer\n"
                 "from cdcplatform.celery import app\nfrom workers import control\nfrom workers.leases import Lease\n"
                 "layer = get_channel_layer(); name = async_to_sync(layer.new_channel)()\n"
                 "async_to_sync(layer.send)(name, {'type': 'hello'})\n"
                 "assert async_to_sync(layer.receive)(name) == {'type': 'hello'}\n"
                 "with app.connection_for_write() as connection: connection.ensure_connection(max_retries=1)\n"
                 "app.backend.client.ping()\n"
                 "lease = Lease(control.client(), 'private-state-test', 'me', 5000)\n"
                 "assert lease.acquire(); lease.release(); print('all consumers ok')\n")
        assert "all consumers ok" in run(["-c", check], private_env)
    finally:
        subprocess.run([sys.executable, "-m", "devstack", "down", "redis"], cwd=ROOT, env=private_env,
                       capture_output=True, timeout=60)


def test_sqlite_database_is_private(private_env, tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    (state / "db.sqlite3").touch(mode=0o644)  # as an earlier version left it
    (state / "db.sqlite3").chmod(0o644)
    run(["manage.py", "migrate", "--noinput"], private_env)
    assert mode(state / "db.sqlite3") == 0o600  # the folder stays open: Spark's job user reads jars below it
    for companion in ("db.sqlite3-wal", "db.sqlite3-shm"):
        if (state / companion).exists():
            assert mode(state / companion) == 0o600, companion


def test_a_url_read_before_the_first_start_holds_the_password_the_server_requires(private_env):
    """As in a test session on a fresh machine: Django's settings read REDIS_URL before the session starts Redis."""
    early = run(["-c", "from devstack import settings; print(settings.redis_url())"], private_env).strip()
    assert early.startswith("redis://:") and "@127.0.0.1:" in early
    try:
        run(["-m", "devstack", "up", "redis"], private_env)
        assert redis_client.Redis.from_url(early, socket_timeout=5).ping()
    finally:
        subprocess.run([sys.executable, "-m", "devstack", "down", "redis"], cwd=ROOT, env=private_env,
                       capture_output=True, timeout=60)
