"""Many pipelines on one machine: threads of one process (how a Celery worker ran them before) against a process
each (CDC_PIPELINE_PROCESSES, workers/pipeline_process.py), on the devstack PostgreSQL and Kafka.

    python -m bench.pipelines [--pipelines 4] [--changes 30000]

Each pipeline captures a table of its own through a slot of its own. For each mode the changes are written first
(`--changes` updates per table, 1,000-row transactions), then the pipelines are started and timed from the moment
every slot is active (start-up is not counted) until every slot's confirmed flush position has reached the end of
what was written (a slot is acknowledged only after its Kafka transaction committed). Printed: events/s of one
pipeline, the aggregate of N as threads and as processes, and the ratios, with the machine's core count (the ideal
ratio of processes to one pipeline is min(N, cores), less what PostgreSQL's walsenders and Kafka take of the same
cores).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import threading
import time
import uuid

import psycopg
import psycopg2.extensions

from bench.pg_database import create_database, drop_database
from connectors.postgres.config import PostgresConfig
from connectors.runner import ConnectorRunner
from devstack import postgres as devstack_postgres
from devstack import stack as devstack

ROWS = 10_000
BATCH = 1_000


def properties(db: str, index: int, run: str) -> dict:
    parts = psycopg2.extensions.parse_dsn(devstack_postgres.cdc_dsn(db))
    name = f"{run}_{index}"
    return {"name": name, "topic.prefix": name, "database.hostname": parts["host"], "database.port": parts["port"],
            "database.user": parts["user"], "database.password": parts.get("password"), "database.dbname": db,
            "slot.name": f"{name}_slot", "publication.name": f"{name}_pub", "publication.autocreate.mode": "filtered",
            "table.include.list": f"public.{name}_t", "snapshot.mode": "no_data",
            "offset.storage.topic": f"{run}.offsets", "poll.interval.ms": 50, "max.batch.size": 4096}


def run_pipeline(props: dict, bootstrap: str, stop) -> None:
    """One pipeline until `stop` is set (a thread's or a spawned process's target)."""
    runner = ConnectorRunner(PostgresConfig.from_properties(props), bootstrap, stop)
    runner.run()
    if runner.errors:
        raise SystemExit(f"{props['name']} failed: {runner.errors}")


def prepare(admin: psycopg.Connection, db: str, run: str, pipelines: int, changes: int) -> list[dict]:
    """Tables, publications and slots made first, then the changes written: they wait in the slots."""
    conn = psycopg.connect(devstack_postgres.cdc_dsn(db), autocommit=True)
    slots_here = psycopg.connect(psycopg2.extensions.make_dsn(devstack_postgres.admin_dsn(), dbname=db),
                                 autocommit=True)  # a slot belongs to the database it is made in
    configs = []
    try:
        for index in range(pipelines):
            props = properties(db, index, run)
            table = f"{props['name']}_t"
            conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, label text, amount numeric(12,2), "
                         "created timestamptz, flag bool)")
            fill = (f"INSERT INTO {table} SELECT g, 'label ' || g, g * 1.25, now(), g % 2 = 0 "  # noqa: S608
                    f"FROM generate_series(1, {ROWS}) g")
            conn.execute(fill)
            conn.execute(f'CREATE PUBLICATION "{props["publication.name"]}" FOR TABLE {table}')
            slots_here.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (props["slot.name"],))
            configs.append(props)
        for props in configs:
            table = f"{props['name']}_t"
            for start in range(0, changes, BATCH):
                low = start % ROWS
                conn.execute(f"UPDATE {table} SET amount = amount + 1 WHERE id > %s AND id <= %s",  # noqa: S608
                             (low, low + BATCH))
        return configs
    finally:
        conn.close()
        slots_here.close()


def slots(admin: psycopg.Connection, names: list[str], end_lsn: str) -> list[tuple[bool, int]]:
    """(active, bytes of WAL up to `end_lsn` it has not confirmed) per slot."""
    rows = admin.execute("SELECT active, pg_wal_lsn_diff(%s::pg_lsn, confirmed_flush_lsn)::bigint "
                         "FROM pg_replication_slots WHERE slot_name = ANY(%s)", (end_lsn, names)).fetchall()
    return [(active, behind) for active, behind in rows]


def measure(admin: psycopg.Connection, configs: list[dict], bootstrap: str, mode: str, changes: int) -> float:
    """Aggregate events/s of the pipelines, in `mode` ("threads" or "processes")."""
    end_lsn = admin.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    names = [props["slot.name"] for props in configs]
    if mode == "threads":
        stop = threading.Event()
        workers = [threading.Thread(target=run_pipeline, args=(props, bootstrap, stop), daemon=True)
                   for props in configs]
    else:
        context = multiprocessing.get_context("spawn")
        stop = context.Event()
        workers = [context.Process(target=run_pipeline, args=(props, bootstrap, stop), daemon=True)
                   for props in configs]
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + 600
    while not all(active for active, _ in slots(admin, names, end_lsn)):
        if time.monotonic() > deadline:
            raise SystemExit("the pipelines did not start")
        time.sleep(0.02)
    started = time.monotonic()
    while any(behind > 0 for _, behind in slots(admin, names, end_lsn)):
        if time.monotonic() > deadline:
            raise SystemExit("the pipelines did not catch up")
        time.sleep(0.02)
    elapsed = time.monotonic() - started
    stop.set()
    for worker in workers:
        worker.join(60)
    return len(configs) * changes / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipelines", type=int, default=4)
    parser.add_argument("--changes", type=int, default=30_000, help="updates per pipeline")
    args = parser.parse_args()
    devstack.up(["kafka", "postgres"], echo=lambda line: None)
    bootstrap = devstack.endpoints().kafka_bootstrap
    admin, db = create_database("bench_pp")
    figures = {}
    try:
        for label, count, mode in (("1 pipeline", 1, "processes"), (f"{args.pipelines} threads", args.pipelines,
                                                                    "threads"),
                                   (f"{args.pipelines} processes", args.pipelines, "processes")):
            run = "pp" + uuid.uuid4().hex[:6]
            configs = prepare(admin, db, run, count, args.changes)
            figures[label] = measure(admin, configs, bootstrap, mode, args.changes)
            print(f"{label:<12} {count * args.changes:>8,} changes: {figures[label]:>8,.0f} events/s", flush=True)
    finally:
        drop_database(admin, db)
    one, threads, processes = figures.values()
    print(f"cores {os.cpu_count()}; aggregate / one pipeline: threads {threads / one:.2f}, processes "
          f"{processes / one:.2f}; processes / threads {processes / threads:.2f}")


if __name__ == "__main__":
    main()
