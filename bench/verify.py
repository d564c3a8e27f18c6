"""Verify's speed beside the connector's own snapshot of the same table, on the devstack PostgreSQL and Kafka.

    python bench/verify.py [--rows 200000] [--chunk-size 20000]

The connector snapshots a fresh table (id, text, numeric, timestamptz, bool) and streams on; its snapshot rate is
the rows over the time from its start to its streaming phase (the snapshot written and committed). Verify then
compares the table with the topic while the connector runs: it reads the topic once and the table once, in chunks
of `--chunk-size` rows. The target is Verify ≥ 0.5× the snapshot's rows/s.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg  # noqa: E402
import psycopg2.extensions  # noqa: E402

from bench.topics import delete_topics  # noqa: E402
from connectors.core.verify import VerifyOptions  # noqa: E402
from connectors.postgres.config import PostgresConfig  # noqa: E402
from connectors.runner import ConnectorRunner  # noqa: E402
from connectors.sources import verify_connector  # noqa: E402
from devstack import postgres as devstack_postgres  # noqa: E402
from devstack import stack as devstack  # noqa: E402


def config(db: str, dsn: str, name: str, chunk_size: int) -> PostgresConfig:
    parts = psycopg2.extensions.parse_dsn(dsn)
    return PostgresConfig.from_properties({
        "name": name, "topic.prefix": name, "database.hostname": parts["host"], "database.port": parts["port"],
        "database.user": parts["user"], "database.password": parts.get("password"), "database.dbname": db,
        "slot.name": f"{db}_cdc", "publication.autocreate.mode": "filtered", "table.include.list": "public.bench",
        "offset.storage.topic": f"{name}.offsets", "poll.interval.ms": 50, "max.batch.size": 4096,
        "snapshot.chunk.size": chunk_size, "topic.creation.default.partitions": 1})


def snapshot_done(runner: ConnectorRunner, thread: threading.Thread, timeout: float = 600) -> float:
    """The monotonic time at which the runner's pipeline entered its streaming phase: its snapshot is written and
    committed (the source's connection, reported earlier, comes before the snapshot)."""
    deadline = time.monotonic() + timeout
    while not (runner.pipelines and next(iter(runner.pipelines.values())).metrics.phase == "streaming"):
        if not thread.is_alive() or time.monotonic() > deadline:
            raise SystemExit(f"the snapshot did not complete: {runner.errors or 'timed out'}")
        time.sleep(0.001)
    return time.monotonic()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--chunk-size", type=int, default=20_000)
    args = parser.parse_args()
    devstack.up(["kafka", "postgres"], echo=lambda line: None)
    bootstrap = devstack.endpoints().kafka_bootstrap
    db = f"bench_{uuid.uuid4().hex[:8]}"
    admin = psycopg.connect(devstack_postgres.admin_dsn(), autocommit=True)
    owner = psycopg2.extensions.parse_dsn(devstack_postgres.cdc_dsn())["user"]
    admin.execute(f'CREATE DATABASE "{db}" OWNER "{owner}"')
    dsn = devstack_postgres.cdc_dsn(db)
    name = "benchv" + uuid.uuid4().hex[:6]
    stop = threading.Event()
    thread = None
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE bench (id int PRIMARY KEY, label text, amount numeric(12,2), "
                         "created timestamptz, flag bool)")
            conn.execute("INSERT INTO bench SELECT g, 'label ' || g, g * 1.25, now(), g %% 2 = 0 "
                         "FROM generate_series(1, %s) g", (args.rows,))
            conn.execute("VACUUM ANALYZE bench")
        connector = config(db, dsn, name, args.chunk_size)
        runner = ConnectorRunner(connector, bootstrap, stop)
        thread = threading.Thread(target=runner.run, daemon=True)
        started = time.monotonic()
        thread.start()
        snapshot_s = snapshot_done(runner, thread) - started
        report = verify_connector(connector, bootstrap, VerifyOptions(chunk_size=args.chunk_size))
        if report.mismatched or report.rows != args.rows:
            raise SystemExit(f"Verify found a difference on a quiet table: {report.summary()}")
        snapshot_rate, verify_rate = args.rows / snapshot_s, report.rows / report.seconds
        print(f"snapshot {args.rows} rows: {snapshot_rate:,.0f} rows/s ({snapshot_s:.1f}s, start-up included)")
        print(f"verify   {report.rows} rows in {report.chunks} chunks: {verify_rate:,.0f} rows/s "
              f"({report.seconds:.1f}s: {report.waited:.1f}s waiting for the connector's offset, "
              f"{report.topic_seconds:.1f}s reading the topic, {report.source_seconds:.1f}s reading the table and "
              f"comparing); verify / snapshot {verify_rate / snapshot_rate:.2f} (target >= 0.5)")
    finally:
        stop.set()
        if thread is not None:
            thread.join(60)
        delete_topics(bootstrap, name)
        admin.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = %s",
                      (db,))
        admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        admin.close()


if __name__ == "__main__":
    main()
