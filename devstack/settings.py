"""Where the local stack lives and which ports it uses.

Every value can be overridden from the environment so two stacks (or CI beside a developer's stack)
can run on one machine.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path
from urllib.parse import quote

PROJECT_ROOT = Path(__file__).resolve().parent.parent
STATE_DIR = Path(os.environ.get("DEVSTACK_HOME", PROJECT_ROOT / ".devstack"))


def _port(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default))
    try:
        port = int(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not a port number; set it to an integer such as {default}") from None
    if not 0 < port < 65536:
        raise SystemExit(f"{name}={port} is out of range; choose a port between 1 and 65535")
    return port


KAFKA_PORT = _port("DEVSTACK_KAFKA_PORT", 9092)
KAFKA_CONTROLLER_PORT = _port("DEVSTACK_KAFKA_CONTROLLER_PORT", 9093)
# "LISTEN:ADVERTISED": a second listener on LISTEN advertised at ADVERTISED, for a TCP proxy in front of the broker
# (bench.faults' network faults between a pipeline and Kafka); unset: none
KAFKA_PROXIED_LISTENER = os.environ.get("DEVSTACK_KAFKA_PROXIED_LISTENER", "")
# "PORT:USER:PASSWORD": a SASL_PLAINTEXT listener (mechanism PLAIN, that one user) on PORT, for tests of clients
# that authenticate; unset: none
KAFKA_SASL_LISTENER = os.environ.get("DEVSTACK_KAFKA_SASL_LISTENER", "")
# Partitions of Kafka's own consumer offsets and transaction state topics (Kafka's default 50 each when unset): a
# broker that is killed recovers every partition's log before it answers, so a private test broker has fewer
KAFKA_INTERNAL_PARTITIONS = int(os.environ.get("DEVSTACK_KAFKA_INTERNAL_PARTITIONS", "0"))
REDIS_PORT = _port("DEVSTACK_REDIS_PORT", 6379)
REDIS_PASSWORD_FILE = STATE_DIR / "redis_password"
MONGO_PORT = _port("DEVSTACK_MONGO_PORT", 27017)
POSTGRES_PORT = _port("DEVSTACK_POSTGRES_PORT", 5433)  # 5432 is left to a system cluster
POSTGRES_HOME = STATE_DIR / "postgres"
MONGO_MEMBERS = int(os.environ.get("DEVSTACK_MONGO_MEMBERS", "3"))
MONGO_REPLSET = os.environ.get("DEVSTACK_MONGO_REPLSET", "rs0")
MARIADB_PORT = _port("DEVSTACK_MARIADB_PORT", 3307)
MARIADB_SERVER_ID = int(os.environ.get("DEVSTACK_MARIADB_SERVER_ID", "1"))
MARIADB_ADMIN = ("root", "devstack")  # root@127.0.0.1 of the private server only
MARIADB_CDC_USER = ("cdc", "cdc")  # the connector's user: replication and SELECT privileges only


def kafka_bootstrap() -> str:
    return os.environ.get("KAFKA_BOOTSTRAP_SERVERS", f"127.0.0.1:{KAFKA_PORT}")


def redis_password() -> str | None:
    """The devstack Redis's password (devstack.redis generates it), None before its first start with one."""
    try:
        return REDIS_PASSWORD_FILE.read_text().strip() or None
    except FileNotFoundError:
        return None


def create_redis_password() -> str:
    """A new password in REDIS_PASSWORD_FILE (0600), or the one another process wrote first."""
    REDIS_PASSWORD_FILE.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(REDIS_PASSWORD_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return redis_password() or ""
    with os.fdopen(descriptor, "w") as handle:
        handle.write(secrets.token_urlsafe(32) + "\n")
    return redis_password() or ""


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def devstack_redis_url(database: int = 0) -> str:
    """The devstack Redis's URL. Its password exists before the server first starts: a process that reads the URL
    first (Django's settings, before a test session starts Redis) then holds the password the server will require.
    A server already running without one (started before passwords) keeps being reached without."""
    secret = redis_password()
    if secret is None and not listening(REDIS_PORT):
        secret = create_redis_password()
    credentials = f":{quote(secret, safe='')}@" if secret else ""
    return f"redis://{credentials}127.0.0.1:{REDIS_PORT}/{database}"


def redis_url() -> str:
    """REDIS_URL, else the devstack Redis with its generated password."""
    return os.environ.get("REDIS_URL") or devstack_redis_url()


def emulator_uri() -> str:
    hosts = ",".join(f"127.0.0.1:{MONGO_PORT + i}" for i in range(MONGO_MEMBERS))
    return f"mongodb://{hosts}/?replicaSet={MONGO_REPLSET}"


def mongodb_uri() -> str:
    """A real deployment when MONGODB_URI is set, else the emulator that `devstack up` starts."""
    return os.environ.get("MONGODB_URI") or emulator_uri()


def mariadb_dsn() -> str:
    """An administrator's DSN: MARIADB_DSN for an existing server, else the server `devstack up mariadb` starts."""
    user, password = MARIADB_ADMIN
    return os.environ.get("MARIADB_DSN") or f"mysql://{user}:{password}@127.0.0.1:{MARIADB_PORT}/"
