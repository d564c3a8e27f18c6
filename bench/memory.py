"""Memory of one pipeline process over a long catch-up (and, on PostgreSQL, a large snapshot), on the devstack
Kafka and PostgreSQL or the project's MongoDB emulator.

    python -m bench.memory [--source postgres|mongodb] [--changes 1000000] [--rows 1000000]

PostgreSQL (the default):
1. streaming: `--changes` updates wait in the slot (1,000-row transactions); one pipeline process streams them
   into Kafka while its RSS is sampled every 0.2 s against its progress (the slot's confirmed position);
2. snapshot: an `initial_only` snapshot of a `--rows` table, RSS sampled against time.
MongoDB: the pipeline's stream position is fixed first (a run that commits one change), then `--changes` ~1 KB
inserts are written to one collection; one pipeline process streams them while its RSS is sampled against its
progress (the number in the last event committed to the topic). The emulator runs in a process of its own
(`python -m devstack.mongo`) unless MONGODB_URI is set.
Printed: RSS when streaming began and at each quarter of the work, the peak, and the growth per million events
(flat is the target: nothing kept per event). A 10M-row snapshot is extrapolated from the 1M figures' slope.
The run's topics are deleted at the end.
"""

from __future__ import annotations

import argparse
import time
import uuid

import psycopg

from bench.memory_mongodb import mongodb
from bench.pg_database import create_database, drop_database
from bench.pipelines import prepare, properties, run_pipeline, slots
from bench.rss import SAMPLE_S, report, rss_mb, sample, start
from bench.topics import delete_topics
from devstack import postgres as devstack_postgres
from devstack import stack as devstack


def streaming(admin, db: str, bootstrap: str, changes: int, run: str) -> None:
    [props] = prepare(admin, db, run, 1, changes)
    end_lsn = admin.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    names = [props["slot.name"]]
    process, stop = start(run_pipeline, props, bootstrap)
    while not all(active for active, _ in slots(admin, names, end_lsn)):
        time.sleep(0.05)
    total = slots(admin, names, end_lsn)[0][1]
    samples = sample(process, lambda: 1 - max(slots(admin, names, end_lsn)[0][1], 0) / total)
    stop.set()
    process.join(60)
    report(f"streaming {changes:,} events", samples, changes, "events")


def snapshot(admin, db: str, bootstrap: str, rows: int, run: str) -> None:
    props = {**properties(db, 0, run), "snapshot.mode": "initial_only", "snapshot.max.threads": 2}
    table = f"{props['name']}_t"
    with psycopg.connect(devstack_postgres.cdc_dsn(db), autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, label text, amount numeric(12,2), "
                     "created timestamptz, flag bool)")
        fill = (f"INSERT INTO {table} SELECT g, 'label ' || g, g * 1.25, now(), g % 2 = 0 "  # noqa: S608
                f"FROM generate_series(1, {rows}) g")
        conn.execute(fill)
    process, _ = start(run_pipeline, props, bootstrap)
    started = time.monotonic()
    timed = []
    while process.is_alive():
        rss = rss_mb(process.pid)
        if rss is not None:
            timed.append((time.monotonic() - started, rss))
        time.sleep(SAMPLE_S)
    process.join()
    elapsed = time.monotonic() - started
    samples = [(t / elapsed, rss) for t, rss in timed]
    growth = report(f"snapshot {rows:,} rows ({rows / elapsed:,.0f} rows/s)", samples, rows, "rows")
    print(f"snapshot of {rows * 10:,} rows, extrapolated: peak {growth * rows * 9 / 1e6:+.0f} MB")


def postgres(bootstrap: str, changes: int, rows: int, run: str) -> None:
    devstack.up(["postgres"], echo=lambda line: None)
    admin, db = create_database("bench_mem")
    try:
        streaming(admin, db, bootstrap, changes, f"{run}s")
        snapshot(admin, db, bootstrap, rows, f"{run}n")
    finally:
        drop_database(admin, db)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=("postgres", "mongodb"), default="postgres")
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the snapshot (PostgreSQL only)")
    args = parser.parse_args()
    devstack.up(["kafka"], echo=lambda line: None)
    bootstrap = devstack.endpoints().kafka_bootstrap
    run = "mem" + uuid.uuid4().hex[:6]
    try:
        if args.source == "mongodb":
            mongodb(bootstrap, args.changes, run)
        else:
            postgres(bootstrap, args.changes, args.rows, run)
    finally:
        delete_topics(bootstrap, run)


if __name__ == "__main__":
    main()
