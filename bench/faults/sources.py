"""The databases the campaign runs against, each a private instance: what a connector's properties are, where the
writer's tables' events go, how the writer connects and how the server is faulted.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

from bench.faults.workload import TABLES as WORKLOAD_TABLES

# An idle MongoDB or MariaDB connector commits its position only every 60 s (PostgreSQL's commits each idle one):
# heartbeats commit it within a second, so the product's Verify, run once the writer stopped, soon finds the
# connector at the position it read the source at (its MongoDB view is a transaction that lasts at most 60 s).
IDLE_HEARTBEAT_MS = 1000


def wait_gone(pid: int, timeout: float = 60) -> None:
    """Until no process has this pid (a killed server, reparented to init, is reaped there)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise TimeoutError(f"process {pid} still runs {timeout:.0f}s after it was killed")


class MongoSource:
    """An emulated three-member replica set (`devstack.mongo.start_replica_set`) in the campaign's process."""

    kind = "mongodb"
    default_scenarios = ("kill-streaming", "kill-snapshot", "broker-stop", "broker-stop-commit",
                         "broker-stop-snapshot", "broker-kill", "broker-network", "step-down", "zombie-worker")
    scenarios = (*default_scenarios, "commit-stall")
    chunk = 500  # snapshot rows per chunk; the emulator slows chunk reads by 100 ms
    preload = 20_000  # rows the snapshot scenarios seed, over the writer's three tables

    def __init__(self, rs=None):
        self.rs = rs

    def start(self, workdir: Path, ports: range | None = None) -> str:
        from devstack.mongo import start_replica_set
        from devstack.private_kafka import free_ports

        first = free_ports(3, ports)[0] if ports is not None else 0  # 0: the emulator picks free ports itself
        self.rs = start_replica_set(members=3, port=first, election_timeout=0.3, stepdown_election_delay=0.05,
                                    noop_interval=0.5)
        return f"replica set {self.rs.uri}"

    def stop(self) -> None:
        if self.rs is not None:
            self.rs.stop()

    def writer_target(self, name: str) -> str:
        return self.rs.uri

    def properties(self, name: str) -> dict:
        return {"mongodb.connection.string": self.rs.uri, "database.include.list": name,
                "heartbeat.interval.ms": IDLE_HEARTBEAT_MS}

    def workload_topics(self, name: str) -> dict[str, str]:
        """The writer's collections (workload.py): topic -> collection."""
        return {f"{name}.{name}.{table}": table for table in WORKLOAD_TABLES}

    def prepare(self, name: str) -> None:
        """Nothing: the writer creates the collections (the database with them)."""

    def slow_snapshot(self) -> None:
        self.rs.set_delay(100, commands=["find"])  # slow chunk reads: the snapshot lasts seconds, not less

    def hold_snapshot(self) -> None:
        self.rs.set_delay(600_000, commands=["find"])  # every further chunk read (the final one's too) waits

    def normal_reads(self) -> None:
        self.rs.set_delay(0)

    def step_down(self) -> None:
        self.rs.step_down(seconds=1)  # returns once another member is primary


class RelationalSource:
    """A private server on a free port, set up by the devstack as the shared one is. Snapshot chunk reads cannot be
    slowed or held here: chunks are small instead (the snapshot lasts seconds), and a kill that came too late is
    reported in the notes."""

    default_scenarios = ("kill-streaming", "kill-snapshot", "broker-stop", "broker-kill", "broker-network",
                         "source-restart", "source-crash", "source-network", "zombie-worker")
    scenarios = ("kill-streaming", "kill-snapshot", "broker-stop", "broker-stop-commit", "broker-stop-snapshot",
                 "broker-kill", "broker-network", "source-restart", "source-crash", "source-network", "zombie-worker",
                 "commit-stall")
    chunk = 100
    # rows the snapshot scenarios seed: at the connector's rate (200,000-500,000 rows/s) 20,000 were read in well
    # under the campaign's look at the count, and kills came after the snapshot's end; the kill comes after at most
    # half of these
    preload = 150_000
    server = None

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()

    def restart(self) -> None:
        """A clean restart of the server under the write load; returns once it accepts connections again."""
        self.server.restart()

    crash_signal = signal.SIGKILL

    def crash(self) -> None:
        """The server dies (PostgreSQL: immediate shutdown, SIGQUIT to the postmaster, as `pg_ctl stop -m immediate`;
        MariaDB: kill -9), then a start; returns once it accepts connections again (crash recovery done)."""
        pid = self.server.pid
        os.kill(pid, self.crash_signal)
        wait_gone(pid)
        self.server.start()

    def slow_snapshot(self) -> None:
        pass

    hold_snapshot = normal_reads = slow_snapshot

    def workload_topics(self, name: str) -> dict[str, str]:
        """The mixed writer's tables (workload.py): topic -> table."""
        return {f"{name}.{self.schema(name)}.{table}": table for table in WORKLOAD_TABLES}

    def schema(self, name: str) -> str:
        raise NotImplementedError


class PostgresSource(RelationalSource):
    kind = "postgres"
    crash_signal = signal.SIGQUIT

    def start(self, workdir: Path, ports: range | None = None) -> str:
        from devstack.private_db import PrivatePostgres

        self.server = PrivatePostgres(workdir / "postgres", ports)
        self.server.start()
        return f"PostgreSQL 127.0.0.1:{self.server.port} (pid {self.server.pid})"

    def schema(self, name: str) -> str:
        return "public"

    def writer_target(self, name: str) -> str:
        return self.server.cdc_dsn(name)

    def properties(self, name: str) -> dict:
        user, password = self.server.cdc_user
        return {
            "connector.class": "postgres", "database.hostname": "127.0.0.1", "database.port": self.server.port,
            "database.user": user, "database.password": password, "database.dbname": name, "slot.name": name,
            "publication.autocreate.mode": "filtered",
            "table.include.list": ",".join(f"public.{t}" for t in WORKLOAD_TABLES),
            "value.converter.schemas.enable": False, "key.converter.schemas.enable": False,
        }

    def prepare(self, name: str) -> None:
        import psycopg

        user, _ = self.server.cdc_user
        with psycopg.connect(self.server.admin_dsn(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}" OWNER "{user}"')


class MariaDbSource(RelationalSource):
    kind = "mariadb"

    def start(self, workdir: Path, ports: range | None = None) -> str:
        from devstack.private_db import PrivateMariaDb

        self.server = PrivateMariaDb(workdir / "mariadb", ports)
        self.server.start()
        return f"MariaDB 127.0.0.1:{self.server.port} (pid {self.server.pid})"

    def schema(self, name: str) -> str:
        return name

    def writer_target(self, name: str) -> str:
        return self.server.admin_dsn

    def properties(self, name: str) -> dict:
        from devstack import settings

        user, password = settings.MARIADB_CDC_USER
        return {
            "connector.class": "mariadb", "database.hostname": "127.0.0.1", "database.port": self.server.port,
            "database.user": user, "database.password": password,
            "database.server.id": random.randint(100_000, 4_000_000_000), "database.include.list": name,
            "table.include.list": ",".join(f"{name}.{t}" for t in WORKLOAD_TABLES),
            "value.converter.schemas.enable": False, "key.converter.schemas.enable": False,
            "heartbeat.interval.ms": IDLE_HEARTBEAT_MS,
        }

    def _connect(self, name: str | None):
        import pymysql

        from connectors.mysql.connection import ConnectionSettings

        settings = ConnectionSettings.from_dsn(self.server.admin_dsn).with_database(name)
        return pymysql.connect(**settings.pymysql_kwargs(), autocommit=True)

    def prepare(self, name: str) -> None:
        connection = self._connect(None)
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"CREATE DATABASE `{name}`")
        finally:
            connection.close()


SOURCES = {"mongodb": MongoSource, "postgres": PostgresSource, "mariadb": MariaDbSource}
