"""Memory of one pipeline process over a long catch-up and a large snapshot, on the devstack PostgreSQL and Kafka.

    python -m bench.memory [--changes 1000000] [--rows 1000000]

1. streaming: `--changes` updates wait in the slot (1,000-row transactions); one pipeline process streams them
   into Kafka while its RSS is sampled every 0.2 s against its progress (the slot's confirmed position);
2. snapshot: an `initial_only` snapshot of a `--rows` table, RSS sampled against time.
Printed: RSS when streaming began and at each quarter of the work, the peak, and the growth per million events
(flat is the target: nothing kept per event). A 10M-row snapshot is extrapolated from the 1M figures' slope.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
import uuid
from pathlib import Path

import psycopg
import psycopg2.extensions

from bench.pipelines import prepare, properties, run_pipeline, slots
from devstack import postgres as devstack_postgres
from devstack import stack as devstack

SAMPLE_S = 0.2


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def start(props: dict, bootstrap: str):
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    process = context.Process(target=run_pipeline, args=(props, bootstrap, stop), daemon=True)
    process.start()
    return process, stop


def slope_per_million(samples: list[tuple[float, float]], units: float) -> float:
    """Least-squares RSS growth (MB per million units) over the middle of the work (20 % to 95 %): start-up and
    shutdown are left out."""
    middle = [(done * units, rss) for done, rss in samples if 0.2 <= done <= 0.95]
    if len(middle) < 2:
        return 0.0
    mean_x = sum(x for x, _ in middle) / len(middle)
    mean_y = sum(y for _, y in middle) / len(middle)
    spread = sum((x - mean_x) ** 2 for x, _ in middle)
    return sum((x - mean_x) * (y - mean_y) for x, y in middle) / spread * 1e6 if spread else 0.0


def report(label: str, samples: list[tuple[float, float]], units: float, unit: str) -> float:
    """samples: (fraction of the work done, RSS MB), in order; returns the growth in MB per million units."""
    if not samples:
        print(f"{label}: no samples")
        return 0.0
    at = [next((rss for done, rss in samples if done >= q), samples[-1][1]) for q in (0.05, 0.25, 0.5, 0.75, 0.95)]
    peak = max(rss for _, rss in samples)
    growth = slope_per_million(samples, units)
    print(f"{label}: RSS MB at 5/25/50/75/95 %: " + " / ".join(f"{value:.0f}" for value in at)
          + f"; peak {peak:.0f}; growth {growth:+.1f} MB per million {unit} (least squares, 20-95 %)")
    return growth


def streaming(admin, db: str, bootstrap: str, changes: int) -> None:
    run = "mem" + uuid.uuid4().hex[:6]
    [props] = prepare(admin, db, run, 1, changes)
    end_lsn = admin.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
    names = [props["slot.name"]]
    process, stop = start(props, bootstrap)
    while not all(active for active, _ in slots(admin, names, end_lsn)):
        time.sleep(0.05)
    total = slots(admin, names, end_lsn)[0][1]
    samples = []
    while True:
        behind = slots(admin, names, end_lsn)[0][1]
        rss = rss_mb(process.pid)
        if rss is not None:
            samples.append((1 - max(behind, 0) / total, rss))
        if behind <= 0:
            break
        time.sleep(SAMPLE_S)
    stop.set()
    process.join(60)
    report(f"streaming {changes:,} events", samples, changes, "events")


def snapshot(admin, db: str, bootstrap: str, rows: int) -> None:
    run = "mem" + uuid.uuid4().hex[:6]
    props = {**properties(db, 0, run), "snapshot.mode": "initial_only", "snapshot.max.threads": 2}
    table = f"{props['name']}_t"
    with psycopg.connect(devstack_postgres.cdc_dsn(db), autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, label text, amount numeric(12,2), "
                     "created timestamptz, flag bool)")
        fill = (f"INSERT INTO {table} SELECT g, 'label ' || g, g * 1.25, now(), g % 2 = 0 "  # noqa: S608
                f"FROM generate_series(1, {rows}) g")
        conn.execute(fill)
    process, _ = start(props, bootstrap)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    devstack.up(["kafka", "postgres"], echo=lambda line: None)
    bootstrap = devstack.endpoints().kafka_bootstrap
    admin = psycopg.connect(devstack_postgres.admin_dsn(), autocommit=True)
    owner = psycopg2.extensions.parse_dsn(devstack_postgres.cdc_dsn())["user"]
    db = f"bench_mem_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{db}" OWNER "{owner}"')
    try:
        streaming(admin, db, bootstrap, args.changes)
        snapshot(admin, db, bootstrap, args.rows)
    finally:
        for _ in range(100):
            if not admin.execute("SELECT 1 FROM pg_replication_slots WHERE database = %s AND active",
                                 (db,)).fetchone():
                break
            time.sleep(0.1)
        admin.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = %s",
                      (db,))
        admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        admin.close()


if __name__ == "__main__":
    main()
