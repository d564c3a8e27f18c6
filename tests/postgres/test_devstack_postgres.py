"""The devstack PostgreSQL is a usable logical replication source, and `devstack up|status|down postgres` works from
an empty state directory (run as the CLI runs, in a separate process, on its own port and home)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid

import psycopg2
import pytest

from devstack import settings


def settings_of(dsn: str) -> dict[str, str]:
    conn = psycopg2.connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT name, setting FROM pg_settings")
            return dict(cur.fetchall())
    finally:
        conn.close()


def test_logical_replication_settings(postgres):
    values = settings_of(postgres.cdc_dsn)
    assert values["wal_level"] == "logical"
    assert int(values["max_replication_slots"]) >= 20
    assert int(values["max_wal_senders"]) >= 20


@pytest.mark.skipif(bool(os.environ.get("POSTGRES_DSN")), reason="the private cluster's own roles")
def test_cdc_role_and_authentication(postgres):
    rows = postgres.execute("SELECT rolreplication, rolsuper FROM pg_roles WHERE rolname = 'cdc'")
    assert rows == [(True, False)]
    with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
        psycopg2.connect(psycopg2.extensions.make_dsn(postgres.cdc_dsn, password="wrong"))
    admin = psycopg2.extensions.parse_dsn(postgres.admin_dsn)
    assert admin["host"].endswith("postgres/data")  # the superuser only through the socket in the data dir


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.skipif(bool(os.environ.get("POSTGRES_DSN")), reason="starts the private cluster")
def test_up_status_down_from_an_empty_home():
    # under the project's state dir: when run as root, the server's OS user must be able to reach it
    home = settings.STATE_DIR / f"test-postgres-{uuid.uuid4().hex[:8]}"
    port = free_port()
    env = {**os.environ, "DEVSTACK_HOME": str(home), "DEVSTACK_POSTGRES_PORT": str(port)}
    env.pop("POSTGRES_DSN", None)

    def devstack(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "devstack", *args], env=env, cwd=settings.PROJECT_ROOT,
            capture_output=True, text=True, timeout=120,
        )

    try:
        up = devstack("up", "postgres")
        assert up.returncode == 0, up.stderr
        assert f"started on 127.0.0.1:{port}" in up.stdout
        password = (home / "postgres" / "cdc.password").read_text().strip()
        dsn = f"host=127.0.0.1 port={port} user=cdc password={password} dbname=cdc"
        assert settings_of(dsn)["wal_level"] == "logical"
        again = devstack("up", "postgres")
        assert "already running" in again.stdout
        status = devstack("status")
        assert any(line.startswith("postgres") and "running (pid" in line for line in status.stdout.splitlines())
        down = devstack("down", "postgres")
        assert down.returncode == 0 and "stopped" in down.stdout
        with pytest.raises(psycopg2.OperationalError):
            psycopg2.connect(dsn, connect_timeout=2)
        assert not (home / "run" / "postgres.pid").exists()
        restarted = devstack("up", "postgres")  # the existing cluster starts again, no second initdb
        assert restarted.returncode == 0, restarted.stderr
        assert settings_of(dsn)["wal_level"] == "logical"
    finally:
        devstack("down", "postgres")
        shutil.rmtree(home, ignore_errors=True)
