"""Verify under concurrent writes on PostgreSQL, MariaDB and MongoDB (the devstack's servers and Kafka): no false
alarms.

    python bench/verify_under_load.py [--sources postgres,mariadb,mongodb] [--rate 2000] [--seconds 60]
                                      [--keys 20000] [--processes 2] [--threads 8] [--chunk-size 5000]
                                      [--mongodb-batch 50]

For each source, a fresh table (collection) `hot` of `--keys` rows is snapshotted by a connector, which then
streams on; an independent writer (bench/write_load.py: inserts, updates, deletes and, on PostgreSQL and MariaDB,
primary-key updates of random keys, from `--threads` connections in each of `--processes` processes of its own;
MariaDB commits 50 writes per transaction, MongoDB sends `--mongodb-batch` writes per ordered `bulk_write`, each
still a write of its own) writes at up to `--rate` writes/s while Verify runs again and again for `--seconds`. It
prints per source the Verify runs, the rows and chunks checked, the mismatches (any is a false alarm: the source and
the topics are never corrupted here), the views compared, and the write rate the machine reached (with a note when
it is below the target). It exits with 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.topics import delete_topics  # noqa: E402
from bench.write_load import (  # noqa: E402
    DOCUMENT_OPS,
    RELATIONAL_OPS,
    ProcessWorkload,
    mariadb_writer,
    mongo_writer,
    postgres_writer,
)
from connectors.core.verify import VerifyOptions  # noqa: E402
from connectors.runner import ConnectorRunner  # noqa: E402
from connectors.sources import engine_config, verify_connector  # noqa: E402
from devstack import settings  # noqa: E402
from devstack import stack as devstack  # noqa: E402


class PostgresTable:
    service, ops = "postgres", RELATIONAL_OPS

    def __init__(self, name: str, keys: int):
        import psycopg
        import psycopg2.extensions

        from devstack import postgres

        self.name, self.db = name, name
        self.admin = psycopg.connect(postgres.admin_dsn(), autocommit=True)
        owner = psycopg2.extensions.parse_dsn(postgres.cdc_dsn())["user"]
        self.admin.execute(f'CREATE DATABASE "{self.db}" OWNER "{owner}"')
        self.dsn = postgres.cdc_dsn(self.db)
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE hot (id int PRIMARY KEY, v int, note text)")
            conn.execute("INSERT INTO hot SELECT g, 0, 'n' FROM generate_series(0, %s) g", (keys - 1,))
        parts = psycopg2.extensions.parse_dsn(self.dsn)
        self.properties = {
            "connector.class": "postgres", "database.hostname": parts["host"], "database.port": parts["port"],
            "database.user": parts["user"], "database.password": parts.get("password"), "database.dbname": self.db,
            "slot.name": f"{self.db}_cdc", "publication.autocreate.mode": "filtered",
            "table.include.list": "public.hot"}

    def writer(self, args) -> tuple:
        return postgres_writer, (self.dsn,)

    def drop(self) -> None:
        from bench.pg_database import drop_database

        drop_database(self.admin, self.db)


class MariaDbTable:
    service, ops = "mariadb", RELATIONAL_OPS

    def __init__(self, name: str, keys: int):
        from connectors.mysql.connection import ConnectionSettings, connect

        self.connect = connect
        self.db = name
        self.settings = ConnectionSettings.from_dsn(settings.mariadb_dsn())
        admin = connect(self.settings)
        with admin.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{self.db}` CHARACTER SET utf8mb4")
            cursor.execute(f"USE `{self.db}`")
            cursor.execute("CREATE TABLE hot (id INT PRIMARY KEY, v INT, note VARCHAR(40))")
            cursor.execute(f"INSERT INTO hot SELECT seq, 0, 'n' FROM seq_0_to_{keys - 1}")  # noqa: S608 - a number
        admin.commit()
        admin.close()
        cdc = self.settings.as_user(*settings.MARIADB_CDC_USER)
        self.properties = {
            "connector.class": "io.debezium.connector.mariadb.MariaDbConnector", "database.hostname": cdc.host,
            "database.port": str(cdc.port), "database.user": cdc.user, "database.password": cdc.password,
            "database.server.id": str(uuid.uuid4().int % 3_000_000 + 10_000), "database.include.list": self.db}

    def writer(self, args) -> tuple:
        return mariadb_writer, (self.settings.with_database(self.db), 50)

    def drop(self) -> None:
        admin = self.connect(self.settings)
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{self.db}`")
        admin.commit()
        admin.close()


class MongoCollection:
    service, ops = "mongo", DOCUMENT_OPS

    def __init__(self, name: str, keys: int):
        from pymongo import MongoClient

        self.uri, self.db = devstack.endpoints().mongodb_uri, name
        self.client = MongoClient(self.uri)
        hot = self.client[self.db]["hot"]
        for start in range(0, keys, 5000):
            hot.insert_many([{"_id": n, "v": 0, "note": "n"} for n in range(start, min(keys, start + 5000))])
        self.properties = {"connector.class": "mongodb", "mongodb.connection.string": self.uri,
                           "collection.include.list": f"{self.db}.hot"}

    def writer(self, args) -> tuple:
        return mongo_writer, (self.uri, self.db, "hot", args.mongodb_batch)

    def drop(self) -> None:
        self.client.drop_database(self.db)
        self.client.close()


SOURCES = {"postgres": PostgresTable, "mariadb": MariaDbTable, "mongodb": MongoCollection}


def connector_config(source, name: str, chunk_size: int):
    """The connector of `source`'s table: its own topics, one partition, the snapshot in `chunk_size` chunks."""
    _, config = engine_config({**source.properties, "name": name, "topic.prefix": name,
                               "offset.storage.topic": f"{name}.offsets", "poll.interval.ms": 50,
                               "max.batch.size": 4096, "snapshot.chunk.size": chunk_size,
                               "topic.creation.default.partitions": 1})
    return config


def snapshot_done(runner: ConnectorRunner, thread: threading.Thread, timeout: float = 600) -> float:
    """The monotonic time at which the runner's pipeline entered its streaming phase: its snapshot is written and
    committed (the source's connection, reported earlier, comes before the snapshot)."""
    deadline = time.monotonic() + timeout
    while not (runner.pipelines and next(iter(runner.pipelines.values())).metrics.phase == "streaming"):
        if not thread.is_alive() or time.monotonic() > deadline:
            raise SystemExit(f"the snapshot did not complete: {runner.errors or 'timed out'}")
        time.sleep(0.001)
    return time.monotonic()


def run_source(kind: str, args, bootstrap: str) -> bool:
    name = f"vload{kind[:2]}{uuid.uuid4().hex[:6]}"
    source = SOURCES[kind](name, args.keys)
    stop = threading.Event()
    thread = None
    try:
        config = connector_config(source, name, args.chunk_size)
        runner = ConnectorRunner(config, bootstrap, stop)
        thread = threading.Thread(target=runner.run, daemon=True)
        thread.start()
        snapshot_done(runner, thread)
        reports = []
        factory, factory_args = source.writer(args)
        with ProcessWorkload(factory, factory_args, args.keys, per_second=args.rate, processes=args.processes,
                             threads=args.threads, ops=source.ops) as load:
            if not load.wait_writing():
                raise SystemExit(f"{kind}: the writer processes did not start writing (their errors are above)")
            deadline = time.monotonic() + args.seconds
            while len(reports) < 2 or time.monotonic() < deadline:
                reports.append(verify_connector(config, bootstrap, VerifyOptions(chunk_size=args.chunk_size)))
        mismatched = sum(r.mismatched for r in reports)
        rate = load.rate
        reached = "" if rate >= 0.95 * args.rate else \
            f" (below the target {args.rate}/s: the machine could not write faster)"
        print(f"{kind:9} Verify runs {len(reports)}, rows checked {sum(r.rows for r in reports):,} in "
              f"{sum(r.chunks for r in reports)} chunks, views {sum(len(r.positions) for r in reports)} "
              f"({sum(r.rechecked for r in reports)} keys compared again in a later view), mismatches {mismatched}; "
              f"Verify's time {sum(r.seconds for r in reports):.0f}s, {sum(r.waited for r in reports):.0f}s of it "
              "waiting for the connector to capture up to the view; "
              f"writes {load.writes:,} in {load.seconds:.0f}s = {rate:,.0f}/s{reached}", flush=True)
        for report in reports:
            if report.mismatched:
                print(report.to_json())
        return mismatched == 0
    finally:
        stop.set()
        if thread is not None:
            thread.join(60)
        delete_topics(bootstrap, name)
        source.drop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", default="postgres,mariadb,mongodb")
    parser.add_argument("--rate", type=int, default=2000, help="target writes/s, all threads together")
    parser.add_argument("--seconds", type=float, default=60, help="how long Verify runs again and again per source")
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--processes", type=int, default=2, help="writer processes (each its own interpreter)")
    parser.add_argument("--threads", type=int, default=8, help="writer threads per process, each its connection")
    parser.add_argument("--chunk-size", type=int, default=5000)
    parser.add_argument("--mongodb-batch", type=int, default=50,
                        help="MongoDB writes sent in one bulk_write (MariaDB's writer commits 50 per transaction)")
    args = parser.parse_args()
    kinds = [kind.strip() for kind in args.sources.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in SOURCES]
    if unknown:
        raise SystemExit(f"unknown source {unknown[0]!r}: choose among {', '.join(SOURCES)}")
    devstack.up(["kafka", *(SOURCES[kind].service for kind in kinds)], echo=lambda line: None)
    bootstrap = devstack.endpoints().kafka_bootstrap
    clean = [run_source(kind, args, bootstrap) for kind in kinds]
    sys.exit(0 if all(clean) else 1)


if __name__ == "__main__":
    main()
