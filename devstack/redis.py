"""Debian's redis-server on 127.0.0.1, installed with apt-get when missing, with a password.

Any local user can reach 127.0.0.1, and Redis carries Celery tasks, the channel layer and the pipelines' leases, so
the server requires a password: generated on the first start into `<state dir>/redis_password` (mode 0600), given
to redis-server in a 0600 configuration file (not on its command line, which `ps` shows), and carried by
devstack.settings.redis_url() and so REDIS_URL's default. A server started before the password existed keeps
running without one (the URL then has none) until it is restarted."""

from __future__ import annotations

import os
import shutil
import subprocess

from devstack import settings
from devstack.process import ManagedProcess, StackError, port_in_use, wait_until

HOME = settings.STATE_DIR / "redis"
PASSWORD_FILE = settings.REDIS_PASSWORD_FILE
CONFIG_FILE = HOME / "redis.conf"
process = ManagedProcess("redis")
password = settings.redis_password


def endpoint() -> str:
    """Where the devstack Redis listens, for people: its URL with the password masked."""
    shown = f"redis://:****@127.0.0.1:{settings.REDIS_PORT}/0" if password() else settings.devstack_redis_url()
    return "REDIS_URL (from the environment)" if os.environ.get("REDIS_URL") else shown


def _write_private(path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)


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
        return bool(redis.Redis(host="127.0.0.1", port=settings.REDIS_PORT, password=password(),
                                socket_timeout=1).ping())
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
    HOME.mkdir(parents=True, exist_ok=True, mode=0o700)
    HOME.chmod(0o700)  # its dump.rdb holds queued tasks and channel messages
    _write_private(CONFIG_FILE, f"requirepass {settings.redis_password() or settings.create_redis_password()}\n")
    process.start([
        _redis_server(), str(CONFIG_FILE), "--bind", "127.0.0.1", "--port", str(settings.REDIS_PORT),
        "--dir", str(HOME), "--daemonize", "no", "--save", "60 1", "--appendonly", "no", "--protected-mode", "yes",
    ])
    wait_until(ping, 20, "Redis to answer PING", process)
    return f"started on 127.0.0.1:{settings.REDIS_PORT}"


def down() -> bool:
    return process.stop()
