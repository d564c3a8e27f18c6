"""Connectors over one Celery worker and over two: aggregate events/s through the platform as deployed.

    python -m bench.worker_spread [--connectors 8] [--changes 5000] [--redis-db 4]

For each form (one worker `a@<host>`, then two, `a@<host>` and `b@<host>`) the platform runs fresh: a SQLite database
of its own (migrated), a Redis database of its own (flushed), the workers (`-Q streaming,default`, a thread per
pipeline task, each pipeline in a process of its own as by default) and beat (the supervisor, which places the
pipelines on the workers). N PostgreSQL connectors each capture a table of their own through a slot of their own on
the devstack PostgreSQL (bench.pipelines.prepare: the changes are written first and wait in the slots). The time runs
from the moment every slot is active until every slot has confirmed the end of what was written (a slot is
acknowledged only after its Kafka transaction committed). Printed per form: events/s, how the pipelines were spread
over the workers (from their leases), then the ratio two workers / one. Both workers run on this machine: the ratio
shows what the placement costs or gains here; on one machine's cores the ceiling is the machine, not the workers.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import psycopg
import redis

from bench.pg_database import create_database, drop_database
from bench.pipelines import prepare, slots
from devstack import stack as devstack
from devstack.settings import PROJECT_ROOT
from workers.placement import Placement

PG_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
START_TIMEOUT_S = 600
CATCH_UP_TIMEOUT_S = 1200


def _redis_url(base: str, db: int) -> str:
    return f"{base.rsplit('/', 1)[0]}/{db}"


class Platform:
    """Workers and beat in subprocesses over a temporary SQLite database and a Redis database of their own."""

    def __init__(self, workdir: Path, redis_url: str, bootstrap: str):
        self.workdir = workdir
        self.env = {**os.environ, "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}", "REDIS_URL": redis_url,
                    "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "CDC_SUPERVISOR_SECONDS": "1"}
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        self.processes: list[subprocess.Popen] = []
        self.redis = redis.Redis.from_url(redis_url)

    def manage(self, *args: str) -> str:
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=PROJECT_ROOT, env=self.env,
                                capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise SystemExit(f"manage.py {args[0]} failed:\n{result.stderr[-3000:]}")
        return result.stdout

    def _spawn(self, label: str, argv: list[str]) -> None:
        with open(self.workdir / f"{label}.log", "wb") as log:
            self.processes.append(subprocess.Popen([sys.executable, "-m", "celery", "-A", "cdcplatform", *argv],
                                                   cwd=PROJECT_ROOT, env=self.env, stdout=log,
                                                   stderr=subprocess.STDOUT))

    def start(self, workers: list[str], connectors: int) -> None:
        self.manage("migrate", "--noinput")
        self.redis.flushdb()
        for name in workers:
            self._spawn(name, ["worker", "-Q", "streaming,default", "--pool=threads",
                               f"--concurrency={connectors + 2}", "-n", f"{name}@{socket.gethostname()}",
                               "--loglevel=INFO", "--without-mingle", "--without-gossip"])
        deadline = time.monotonic() + START_TIMEOUT_S
        while len(Placement.now(self.redis).live) < len(workers):  # every worker announced: placed from the start
            if time.monotonic() > deadline:
                raise SystemExit(f"the workers did not start; see {self.workdir}")
            time.sleep(0.5)
        self._spawn("beat", ["beat", "--loglevel=INFO", "--schedule", str(self.workdir / "beat-schedule")])

    def create_connectors(self, configs: list[dict]) -> None:
        self.manage("shell", "-c", "from web.connectors import drafts, services\n"
                    f"for properties in {configs!r}:\n"
                    "    services.create_connector(drafts.prepare(properties), user=None, source='system', "
                    "desired_state='running')\n")

    def spread(self) -> Counter:
        placement = Placement.now(self.redis)
        return Counter({worker.split("@", 1)[0]: len(held) for worker, held in placement.held.items()})

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def connector_properties(props: dict) -> dict:
    """bench.pipelines' properties as a stored connector's."""
    return {**props, "connector.class": PG_CLASS, "database.port": int(props["database.port"]),
            "topic.creation.default.partitions": 1}


def measure(admin: psycopg.Connection, platform: Platform, configs: list[dict], changes: int) -> tuple[float, Counter]:
    end_lsn = admin.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    names = [props["slot.name"] for props in configs]
    platform.create_connectors([connector_properties(props) for props in configs])
    deadline = time.monotonic() + START_TIMEOUT_S
    while not all(active for active, _ in slots(admin, names, end_lsn)):
        if time.monotonic() > deadline:
            raise SystemExit(f"the pipelines did not start; see {platform.workdir}")
        time.sleep(0.05)
    started = time.monotonic()
    spread = platform.spread()
    deadline = started + CATCH_UP_TIMEOUT_S
    while any(behind > 0 for _, behind in slots(admin, names, end_lsn)):
        if time.monotonic() > deadline:
            raise SystemExit(f"the pipelines did not catch up; see {platform.workdir}")
        time.sleep(0.05)
    return len(configs) * changes / (time.monotonic() - started), spread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connectors", type=int, default=8)
    parser.add_argument("--changes", type=int, default=5_000, help="updates per connector's table")
    parser.add_argument("--redis-db", type=int, default=4, help="the platform's Redis database (flushed)")
    args = parser.parse_args()
    devstack.up(["redis", "kafka", "postgres"], echo=lambda line: None)
    endpoints = devstack.endpoints()
    admin, db = create_database("bench_ws")
    figures = {}
    try:
        for workers in (["a"], ["a", "b"]):
            label = f"{len(workers)} worker{'s' if len(workers) > 1 else ''}"
            run = "ws" + uuid.uuid4().hex[:6]
            configs = prepare(admin, db, run, args.connectors, args.changes)
            with tempfile.TemporaryDirectory(prefix="cdc-worker-spread-") as workdir:
                platform = Platform(Path(workdir), _redis_url(endpoints.redis_url, args.redis_db),
                                    endpoints.kafka_bootstrap)
                try:
                    platform.start(workers, args.connectors)
                    figures[label], spread = measure(admin, platform, configs, args.changes)
                finally:
                    platform.stop()
            placed = ", ".join(f"{worker}: {count}" for worker, count in sorted(spread.items()))
            print(f"{label:<10} {args.connectors} connectors, {args.connectors * args.changes:,} changes: "
                  f"{figures[label]:>8,.0f} events/s (pipelines per worker: {placed})", flush=True)
    finally:
        drop_database(admin, db)
    one, two = figures.values()
    print(f"cores {os.cpu_count()}; aggregate events/s, 2 workers / 1 worker: {two / one:.2f}")


if __name__ == "__main__":
    main()
