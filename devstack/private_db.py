"""A PostgreSQL cluster or a MariaDB server of its own (own port, own data directory in a temporary DEVSTACK_HOME),
for the fault campaign: it can be restarted under load without disturbing the shared local stack.

Like `private_kafka`, it is started and stopped with the devstack's own code in a subprocess (`python -m devstack
up postgres` / `up mariadb`; the devstack reads its settings from the environment at import), so the server is set
up exactly as the shared one is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from devstack import settings
from devstack.private_kafka import free_ports
from devstack.process import StackError


class PrivateServer:
    service = ""  # the devstack service name
    port_variable = ""  # the environment variable that gives its port

    def __init__(self, home: Path, ports: range | None = None):
        self.home = home
        (self.port,) = free_ports(1, ports)
        self.env = {**os.environ, "DEVSTACK_HOME": str(home), self.port_variable: str(self.port)}
        for inherited in ("POSTGRES_DSN", "MARIADB_DSN"):  # they would name the shared server instead
            self.env.pop(inherited, None)

    def _devstack(self, command: str) -> None:
        result = subprocess.run([sys.executable, "-m", "devstack", command, self.service], env=self.env,
                                cwd=settings.PROJECT_ROOT, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise StackError(f"devstack {command} {self.service} failed:\n{(result.stdout + result.stderr)[-3000:]}")

    def start(self) -> PrivateServer:
        self.home.mkdir(parents=True, exist_ok=True)
        self._devstack("up")
        return self

    def stop(self) -> None:
        self._devstack("down")

    def restart(self) -> None:
        """A clean shutdown (PostgreSQL: fast mode, as `pg_ctl restart -m fast`; MariaDB: SIGTERM), then a start;
        returns once the server accepts connections again."""
        self.stop()
        self.start()

    @property
    def pid(self) -> int:
        return int((self.home / "run" / f"{self.service}.pid").read_text().split()[0])


class PrivatePostgres(PrivateServer):
    service = "postgres"
    port_variable = "DEVSTACK_POSTGRES_PORT"

    def admin_dsn(self, dbname: str = "postgres") -> str:
        """The superuser over the cluster's unix socket (trusted)."""
        return f"host={self.home / 'postgres' / 'data'} port={self.port} user=postgres dbname={dbname}"

    @property
    def cdc_user(self) -> tuple[str, str]:
        """The replication role (`cdc`) and the password the devstack generated for it."""
        return "cdc", (self.home / "postgres" / "cdc.password").read_text().strip()

    def cdc_dsn(self, dbname: str) -> str:
        user, password = self.cdc_user
        return f"host=127.0.0.1 port={self.port} user={user} password={password} dbname={dbname}"


class PrivateMariaDb(PrivateServer):
    service = "mariadb"
    port_variable = "DEVSTACK_MARIADB_PORT"

    @property
    def admin_dsn(self) -> str:
        user, password = settings.MARIADB_ADMIN
        return f"mysql://{user}:{password}@127.0.0.1:{self.port}/"
