"""Debian's redis-server on 127.0.0.1, installed with apt-get when missing."""

from __future__ import annotations

import os
import shutil
import subprocess

from devstack import settings
from devstack.process import ManagedProcess, StackError, port_in_use, wait_until

HOME = settings.STATE_DIR / "redis"
process = ManagedProcess("redis")


def _redis_server() -> str:
    path = shutil.which("redis-server")
    if path:
        return path
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise StackError("redis-server is not installed. Install it (Debian: sudo apt-get install redis-server).")
    print("installing redis-server with apt-get...", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=False, env=env, capture_output=True)
    result = subprocess.run(
        ["apt-get", "install", "-y", "-qq", "redis-server"], env=env, capture_output=True, text=True
    )
    path = shutil.which("redis-server")
    if result.returncode != 0 or not path:
        raise StackError(f"apt-get install redis-server failed:\n{result.stderr[-2000:]}")
    return path


def ping() -> bool:
    import redis

    try:
        return bool(redis.Redis(host="127.0.0.1", port=settings.REDIS_PORT, socket_timeout=1).ping())
    except Exception:
        return False


def up() -> str:
    if process.is_running():
        wait_until(ping, 20, "Redis to answer PING", process)
        return "already running"
    if port_in_use(settings.REDIS_PORT):
        raise StackError(
            f"port {settings.REDIS_PORT} is taken by another program (a system Redis?). Stop it "
            "(systemctl stop redis-server) or choose another port with DEVSTACK_REDIS_PORT."
        )
    HOME.mkdir(parents=True, exist_ok=True)
    process.start([
        _redis_server(), "--bind", "127.0.0.1", "--port", str(settings.REDIS_PORT), "--dir", str(HOME),
        "--daemonize", "no", "--save", "60 1", "--appendonly", "no", "--protected-mode", "yes",
    ])
    wait_until(ping, 20, "Redis to answer PING", process)
    return f"started on 127.0.0.1:{settings.REDIS_PORT}"


def down() -> bool:
    return process.stop()
