"""Benchmark of the PostgreSQL source against its ceilings, on the devstack PostgreSQL and Kafka.

    python bench/postgres.py [--rows 200000] [--changes 50000] [--rate 2000] [--seconds 10] [--latency-only]
                             [--snapshot-only] [--warm-up 10] [--property KEY=VALUE]

1. snapshot: rows/s of an initial_only snapshot of one table (id, text, numeric, timestamptz, bool) into Kafka,
   against `COPY … TO STDOUT` of the same table (the server's own fastest read), and against COPY followed by a
   plain idempotent producer sending the snapshot's messages (the machine's ceiling for the whole job). The rate
   counts the rows after the first committed chunk, as bench.mariadb's: the start-up (slot and exported snapshot,
   producers, topics, plan, first chunk) and the whole run's rate are printed apart; CPU per row by thread;
2. catch-up: events/s of the pipeline streaming `--changes` updates already in the slot, against a plain pgoutput
   read of the same changes from a second slot (decoding only, no events, no Kafka) and against a plain idempotent
   producer sending the pipeline's messages (read back from its topic; the issue's catch-up target is >= 0.8x the
   slower of the two);
3. latency: p50/p99 from the source commit to the event being readable by a read_committed consumer, at a fixed
   write rate (one row per transaction), broken down by stage (bench.relational_latency).
Ratios are printed; the issue's target sizes are 1M rows and 100k changes (`--rows 1000000 --changes 100000`).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg  # noqa: E402
import psycopg2.extensions  # noqa: E402

from bench import relational_latency, thread_cpu  # noqa: E402
from bench.ceiling import one_after_another, producer_ceiling, read_messages  # noqa: E402
from bench.pgoutput_read import read_slot  # noqa: E402
from bench.streaming_start import wait_until_streaming  # noqa: E402
from bench.topics import delete_topics  # noqa: E402
from connectors.kafka import OffsetStore  # noqa: E402
from connectors.postgres import pgoutput as p  # noqa: E402
from connectors.postgres.config import PostgresConfig  # noqa: E402
from connectors.postgres.replication import ReplicationStream  # noqa: E402
from connectors.runner import ConnectorRunner  # noqa: E402
from devstack import postgres as devstack_postgres  # noqa: E402
from devstack import stack as devstack  # noqa: E402


def config(db: str, dsn: str, name: str, **extra) -> PostgresConfig:
    parts = psycopg2.extensions.parse_dsn(dsn)
    return PostgresConfig.from_properties({
        "name": name, "topic.prefix": name, "database.hostname": parts["host"], "database.port": parts["port"],
        "database.user": parts["user"], "database.password": parts.get("password"), "database.dbname": db,
        "slot.name": f"{db}_cdc", "publication.autocreate.mode": "filtered", "table.include.list": "public.bench",
        "offset.storage.topic": f"{name}.offsets", "poll.interval.ms": 50, "max.batch.size": 4096,
        "snapshot.chunk.size": 20_000, "snapshot.max.threads": 2, **extra})


def stored_lsn(store: OffsetStore, name: str) -> int:
    value = store.read_value(json.dumps([name, {"server": name}], separators=(",", ":")).encode())[0]
    return json.loads(value).get("lsn_proc", 0) if value else 0


def committed_lsn(runner: ConnectorRunner) -> int:
    """The LSN of the pipeline's last committed offset record, as the pipeline knows it (no Kafka read: polling the
    offsets topic cost a few percent of the CPU being measured)."""
    committed = [pipeline.committed for pipeline in runner.pipelines.values()]
    return committed[0].lsn_proc if committed and committed[0] is not None else 0


def run_until(runner_config, bootstrap: str, lsn: int) -> tuple[float, float, float, dict, dict]:
    """Runs the connector until its pipeline has committed the change at `lsn`: (start-up seconds, streaming
    seconds, this process's CPU seconds while streaming, its CPU by thread when streaming began and before its
    threads end)."""
    stop = threading.Event()
    runner = ConnectorRunner(runner_config, bootstrap, stop)
    started = time.monotonic()
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    began = wait_until_streaming(runner, thread)
    cpu, threads = time.process_time(), thread_cpu.sample()
    while thread.is_alive() and committed_lsn(runner) < lsn:
        time.sleep(0.005)
    ended, cpu = time.monotonic(), time.process_time() - cpu
    threads_done = thread_cpu.sample()
    stop.set()
    thread.join(60)
    if runner.errors:
        raise SystemExit(f"the pipeline failed: {runner.errors}")
    return began - started, ended - began, cpu, threads, threads_done


def run_snapshot(snap_config, bootstrap: str, rows: int) -> dict:
    """Runs an initial_only snapshot of `rows` rows. Its rate counts from the first committed chunk to the last (as
    bench.mariadb's), as the pipeline's snapshot metrics say it committed them (no Kafka polling in the measured
    CPU); the start-up before the first commit (slot and exported snapshot, producers, topics, the plan, the first
    chunk) and the whole run are returned apart. CPU by thread: each thread's last sample (the reading threads end
    before the final chunk)."""
    runner = ConnectorRunner(snap_config, bootstrap, threading.Event())
    outcomes: dict = {}
    thread = threading.Thread(target=lambda: outcomes.update(runner.run()), daemon=True)
    started = time.monotonic()
    thread.start()

    def committed() -> int:
        pipelines = list(runner.pipelines.values())
        return pipelines[0].snapshot_metrics.rows_this_run if pipelines else 0

    while thread.is_alive() and committed() == 0:
        time.sleep(0.002)
    first, first_count = time.monotonic(), committed()
    cpu, threads = time.process_time(), thread_cpu.sample()
    seen = dict(threads)
    polls = 0
    while thread.is_alive() and committed() < rows:
        polls += 1
        if polls % 25 == 0:
            seen.update(thread_cpu.sample())
        time.sleep(0.004)
    done, cpu = time.monotonic(), time.process_time() - cpu
    seen.update(thread_cpu.sample())
    thread.join(600)
    whole = time.monotonic() - started
    if outcomes != {snap_config.dbname: "snapshot-done"} or committed() != rows:
        raise SystemExit(f"the snapshot failed: {outcomes} {runner.errors}, {committed()} rows committed")
    transactions = sum(pipeline.sink.stats.transactions_committed for pipeline in runner.pipelines.values())
    return {"start_up": first - started, "measured": rows - first_count, "seconds": done - first, "cpu": cpu,
            "whole": whole, "threads": threads, "threads_done": seen, "transactions": transactions}


def _write_rows(dsn: str, rate: float, total: int, out) -> None:
    """The application of the latency run (a process of its own): rows of `lat` at `rate`, each its own transaction;
    the rows due together go in one round trip (pipeline mode, a Sync after each)."""
    connection = psycopg.connect(dsn, autocommit=True)
    insert = "INSERT INTO lat VALUES (%s, %s)"

    def write(first: int, count: int) -> None:
        if count == 1:
            connection.execute(insert, (first, relational_latency.PAYLOAD))
            return
        with connection.pipeline() as pipeline:
            for n in range(first, first + count):
                connection.execute(insert, (n, relational_latency.PAYLOAD))
                pipeline.sync()

    relational_latency.paced_writes(write, rate, total, out)
    connection.close()


def _queued_number(item) -> int | None:
    message = getattr(item, "message", None)
    if type(message) is p.Insert and message.new and isinstance(message.new[0], str):
        return int(message.new[0])
    return None


def latency(args, db: str, dsn: str, run: str, bootstrap: str, conn, seconds: float) -> dict:
    """Latency at `rate` single-row transactions per second, by stage (bench.relational_latency)."""
    name = run + uuid.uuid4().hex[:6]
    extra = dict(item.split("=", 1) for item in args.property)
    lat_config = config(db, dsn, name, **{"snapshot.mode": "no_data", "slot.name": f"{db}_{name[-6:]}",
                                          "table.include.list": "public.lat", **extra})
    conn.execute("DELETE FROM lat")
    target = relational_latency.LatencyTarget(lat_config, f"{name}.public.lat", _write_rows, (dsn,), _queued_number,
                                              commit_time_in_events=True)
    return relational_latency.measure(
        target, bootstrap, args.rate, seconds,
        lambda: conn.execute("INSERT INTO lat VALUES (-1, 'warm-up') ON CONFLICT (n) DO UPDATE SET payload = 'again'"))


def run_latency(args, db: str, dsn: str, run: str, bootstrap: str, conn) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS lat (n int PRIMARY KEY, payload text)")
    if args.warm_up > 0:
        relational_latency.print_latency(args.rate, latency(args, db, dsn, run, bootstrap, conn, args.warm_up),
                                         warm_up=True)
    relational_latency.print_latency(args.rate, latency(args, db, dsn, run, bootstrap, conn, args.seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--changes", type=int, default=50_000)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--latency-only", action="store_true", help="only the latency run and its breakdown")
    parser.add_argument("--snapshot-only", action="store_true", help="only the snapshot run")
    parser.add_argument("--warm-up", type=float, default=10, metavar="SECONDS",
                        help="first a latency run of this many seconds at the same rate, printed but not measured")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="a connector property of the latency run (repeatable), e.g. poll.interval.ms=500")
    args = parser.parse_args()
    devstack.up(["kafka", "postgres"], echo=lambda line: None)
    bootstrap = devstack.endpoints().kafka_bootstrap
    db = f"bench_{uuid.uuid4().hex[:8]}"
    admin = psycopg.connect(devstack_postgres.admin_dsn(), autocommit=True)
    owner = psycopg2.extensions.parse_dsn(devstack_postgres.cdc_dsn())["user"]
    admin.execute(f'CREATE DATABASE "{db}" OWNER "{owner}"')
    dsn = devstack_postgres.cdc_dsn(db)
    conn = psycopg.connect(dsn, autocommit=True)
    run = "bench" + uuid.uuid4().hex[:4]  # every topic of this run starts with it
    try:
        if args.latency_only:
            run_latency(args, db, dsn, run, bootstrap, conn)
            return
        conn.execute("CREATE TABLE bench (id int PRIMARY KEY, label text, amount numeric(12,2), "
                     "created timestamptz, flag bool)")
        conn.execute("INSERT INTO bench SELECT g, 'label ' || g, g * 1.25, now(), g %% 2 = 0 "
                     "FROM generate_series(1, %s) g", (args.rows,))
        conn.execute("VACUUM ANALYZE bench")

        # 1. snapshot vs COPY
        started, cpu = time.monotonic(), time.process_time()
        copied = 0
        with conn.cursor() as cur, cur.copy("COPY bench TO STDOUT") as copy:
            for data in copy:
                copied += bytes(data).count(b"\n")
        copy_s, copy_cpu = time.monotonic() - started, time.process_time() - cpu
        name = run + uuid.uuid4().hex[:6]
        snap_config = config(db, dsn, name, **{"snapshot.mode": "initial_only"})
        snap = run_snapshot(snap_config, bootstrap, args.rows)
        produce_rate, produce_cpu_us = producer_ceiling(bootstrap, read_messages(bootstrap, f"{name}.public.bench",
                                                                                 args.rows))
        copy_rate = copied / copy_s
        ceiling = one_after_another(copy_rate, produce_rate)  # one reads the table, then produces its rows
        rate = snap["measured"] / snap["seconds"]
        print(f"snapshot   {args.rows} rows: pipeline {rate:,.0f} rows/s over the {snap['measured']:,} rows after "
              f"the first committed chunk (start-up {snap['start_up']:.2f}s apart; whole run "
              f"{args.rows / snap['whole']:,.0f} rows/s); COPY TO STDOUT {copy_rate:,.0f} rows/s, plain idempotent "
              f"producer of the same messages {produce_rate:,.0f} msg/s")
        print(f"           ceiling COPY + produce {ceiling:,.0f} rows/s; pipeline / ceiling {rate / ceiling:.2f} "
              f"(whole run {args.rows / snap['whole'] / ceiling:.2f}); CPU per row: pipeline "
              f"{snap['cpu'] * 1e6 / snap['measured']:.1f} µs, COPY {copy_cpu * 1e6 / copied:.1f} µs + produce "
              f"{produce_cpu_us:.1f} µs")
        print(f"           {thread_cpu.breakdown(snap['threads'], snap['threads_done'], snap['measured'])}; "
              f"{snap['transactions']} transactions in the whole run")
        if args.snapshot_only:
            return

        # 2. catch-up vs plain pgoutput read
        name = run + uuid.uuid4().hex[:6]
        stream_config = config(db, dsn, name, **{"snapshot.mode": "no_data", "slot.name": f"{db}_cu"})
        with ReplicationStream(dsn, stream_config.slot_name, ["dbz_publication"]) as made:
            made.create_slot(export_snapshot=False)
        plain_slot = f"{db}_plain"
        with ReplicationStream(dsn, plain_slot, ["dbz_publication"]) as made:
            made.create_slot(export_snapshot=False)
        batch = 1000
        for start in range(0, args.changes, batch):
            conn.execute("UPDATE bench SET amount = amount + 1 WHERE id > %s AND id <= %s",
                         (start % args.rows, start % args.rows + batch))
        plain = read_slot(dsn, plain_slot, ["dbz_publication"], args.changes // batch, p.Update)
        seen, plain_s, plain_cpu = plain.changes, plain.seconds, plain.cpu_seconds
        store = OffsetStore(bootstrap, stream_config.offset_storage_topic)
        start_s, stream_s, stream_cpu, threads, threads_done = run_until(stream_config, bootstrap,
                                                                           plain.last_commit_end)
        assert stored_lsn(store, name) >= plain.last_commit_end, "the offsets topic does not hold the last change"
        produce_rate, produce_cpu_us = producer_ceiling(bootstrap, read_messages(bootstrap, f"{name}.public.bench",
                                                                                 seen))
        print(f"catch-up   {seen} changes: plain pgoutput read {seen / plain_s:,.0f} changes/s; "
              f"pipeline {seen / stream_s:,.0f} events/s (start-up of {start_s:.2f}s apart); ratio "
              f"{plain_s / stream_s:.2f}; CPU per change: pipeline {stream_cpu * 1e6 / seen:.1f} µs, "
              f"plain read {plain_cpu * 1e6 / seen:.1f} µs")
        print(f"           plain idempotent producer of the same messages {produce_rate:,.0f} msg/s "
              f"({produce_cpu_us:.1f} µs CPU/msg); pipeline / the slower of read and producer "
              f"{seen / stream_s / min(seen / plain_s, produce_rate):.2f}; pipeline CPU / (read + producer) "
              f"{stream_cpu * 1e6 / seen / (plain_cpu * 1e6 / seen + produce_cpu_us):.2f}")
        print(f"           {thread_cpu.breakdown(threads, threads_done, seen)}")

        # 3. latency at a fixed rate
        run_latency(args, db, dsn, run, bootstrap, conn)
    finally:
        conn.close()
        for _ in range(100):
            if not admin.execute("SELECT 1 FROM pg_replication_slots WHERE database = %s AND active",
                                 (db,)).fetchone():
                break
            time.sleep(0.1)
        admin.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = %s",
                      (db,))
        admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        admin.close()
        delete_topics(bootstrap, run)


if __name__ == "__main__":
    main()
