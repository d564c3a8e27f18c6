"""Wide rows and large values: events/s, MB/s of event bytes and the pipeline process's RSS, on the devstack Kafka and
PostgreSQL or MariaDB.

    python -m bench.wide_rows --source postgres|mariadb [--columns 100] [--rows 100000] [--big-rows 100]
                              [--value-bytes 1048576] [--snapshot-chunk-size N]
                              [--property NAME=VALUE ...]

Two tables, each captured twice by one pipeline process (spawned, its RSS sampled every 0.2 s against its progress,
the committed messages of its topic):
1. wide: `--columns` columns of mixed types (integers, text, decimal, timestamp, boolean, double, varchar, date),
   `--rows` rows, written in 1,000-row transactions;
2. big: `--big-rows` rows of one `--value-bytes` value each, text and binary in turn (PostgreSQL text/bytea,
   MariaDB LONGTEXT/LONGBLOB), 10-row transactions.
For each: a snapshot (`initial`, timed from its first committed message to its last) and a catch-up of the same rows
as inserts already in the slot/binlog when the pipeline starts. Printed: events/s, MB/s of event bytes (key + value,
read back from the topic), the pipeline process's CPU per event (from /proc, over the same events), RSS at ~10 % and
at 100 % of the events and their ratio (the target is <= 1.10), what the process's heap held at its start, its peak
and its end (bench/heap_probe.py: Python's blocks, glibc's bytes in use and in its arenas), and the neighbour: a
plain `COPY … TO STDOUT` / `SELECT` of the same rows (rows/s; MB/s of what COPY sent) and, for the wide table, a
plain idempotent producer of the same messages and a plain read of the same changes (pgoutput; the connector's
BinlogReader), with bench.postgres's and bench.mariadb's ratios: the snapshot's to COPY or SELECT followed by the
producer, the catch-up's to the slower of the read and the producer; on PostgreSQL also the pipeline's CPU per event
to theirs summed (this process's CPU: COPY's and the read's client side, as the pipeline's is the client side),
which moves less with the machine's load than the rates.
Messages over 1 MB: the topics are made first with `max.message.bytes` of 4 x `--value-bytes` (1 MB at least), and
the connector raises its producer's limit to the same (`producer.override.max.request.size`; with the default of
1,000,000 bytes a row with a 1 MB value fails its batch with MessageTooLargeError).
The run's database and topics are deleted at the end.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
import uuid
from dataclasses import dataclass

import psycopg
import psycopg2.extensions
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pymysql.cursors import SSCursor

from bench.ceiling import one_after_another, producer_ceiling, read_messages
from bench.emulator import cpu_seconds
from bench.heap_probe import HeapProbe
from bench.mariadb import plain_binlog_read
from bench.pg_database import create_database, drop_database
from bench.pgoutput_read import read_slot
from bench.pipelines import properties
from bench.rss import report, sample, start
from bench.streaming import wait_committed
from bench.topics import delete_topics
from connectors.kafka import sink
from connectors.mysql.connection import ConnectionSettings, connect
from connectors.mysql.status import show_binlog_status
from connectors.postgres import pgoutput as p
from connectors.runner import ConnectorRunner
from connectors.sources import engine_config
from devstack import postgres as devstack_postgres
from devstack import settings
from devstack import stack as devstack

# (PostgreSQL type, MariaDB type, PostgreSQL value, MariaDB value) of `g`, the row number, in column `i`
TYPES = (
    ("integer", "INT", "g + {i}", "g + {i}"),
    ("bigint", "BIGINT", "g * 1000 + {i}", "g * 1000 + {i}"),
    ("text", "TEXT", "'text ' || g", "CONCAT('text ', g)"),
    ("numeric(12,2)", "DECIMAL(12,2)", "g * 1.25", "g * 1.25"),
    ("timestamptz", "DATETIME(6)", "now()", "NOW(6)"),
    ("boolean", "BOOLEAN", "g % 2 = 0", "g % 2 = 0"),
    ("double precision", "DOUBLE", "g / 3.0", "g / 3"),
    ("varchar(32)", "VARCHAR(32)", "md5(g::text)", "MD5(g)"),
    ("date", "DATE", "current_date", "CURDATE()"),
)
WIDE_BATCH, BIG_BATCH = 1_000, 10


def message_limit(value_bytes: int) -> int:
    """Producer and topic message limit: room for a value's JSON (base64 for binary) and never below the producer's
    default batch.size (docs/kafka-sink.md: a topic limit below it refuses whole batches)."""
    return max(4 * value_bytes, sink.PRODUCER_DEFAULTS["batch.size"])


def run_pipeline(props: dict, bootstrap: str, message_limit: int, heap, stop) -> None:
    """One pipeline until `stop` is set, in a spawned process, whose producer and created topics accept
    `message_limit`-byte messages; puts its HeapProbe's summary on the queue `heap` at the end."""
    props = {**props, "producer.override.max.request.size": str(message_limit),
             "topic.creation.default.max.message.bytes": str(message_limit)}
    probe = HeapProbe()
    probe.start()
    runner = ConnectorRunner(engine_config(props)[1], bootstrap, stop)
    runner.run()
    heap.put(probe.summary())
    if runner.errors:
        raise SystemExit(f"{props['name']} failed: {runner.errors}")


def snapshot_chunk(args) -> dict:
    """The snapshot pipelines' `snapshot.chunk.size` when `--snapshot-chunk-size` is given (else the connector's)."""
    return {"snapshot.chunk.size": args.snapshot_chunk_size} if args.snapshot_chunk_size else {}


def overrides(args) -> dict:
    """The `--property name=value` settings, for every pipeline of the run."""
    found = {}
    for setting in args.property:
        name, equals, value = setting.partition("=")
        if not equals:
            raise SystemExit(f"--property {setting!r}: expected name=value")
        found[name.strip()] = value.strip()
    return found


def wide_columns(source: str, columns: int) -> tuple[str, str]:
    """(column definitions, value expressions of `g`) of the wide table's columns after its id."""
    kind, value = (0, 2) if source == "postgres" else (1, 3)
    chosen = [(f"c{i}", TYPES[i % len(TYPES)]) for i in range(1, columns)]
    return (", ".join(f"{name} {types[kind]}" for name, types in chosen),
            ", ".join(types[value].format(i=i) for i, (_, types) in enumerate(chosen, 1)))


def big_values(source: str, value_bytes: int) -> tuple[str, str]:
    """(column definitions, value expressions of `g`): even rows hold a text value, odd rows a binary one."""
    repeat = max(1, value_bytes // 32)
    if source == "postgres":
        text = f"repeat(md5(g::text), {repeat})"
        return ("body text, data bytea", f"CASE WHEN g % 2 = 0 THEN {text} END, "
                                         f"CASE WHEN g % 2 = 1 THEN convert_to({text}, 'UTF8') END")
    text = f"REPEAT(MD5(g), {repeat})"
    return ("body LONGTEXT, data LONGBLOB", f"IF(g % 2 = 0, {text}, NULL), IF(g % 2 = 1, CAST({text} AS BINARY), NULL)")


class Committed:
    """Counts the committed messages of a one-partition topic and their bytes (key + value), read as they commit and
    let go, and when the first was read (and the CPU time of the process `pid` then)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                                  "isolation.level": "read_committed", "fetch.wait.max.ms": 10})
        self.consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        self.count = self.bytes = 0
        self.first: tuple[float, int] | None = None
        self.pid: int | None = None  # the pipeline process, whose CPU time is read at the first message
        self.first_cpu = 0.0

    def __call__(self) -> int:
        while messages := self.consumer.consume(500, 0.05):
            for message in messages:
                if message.error() is None and message.value():
                    self.count += 1
                    self.bytes += len(message.value()) + len(message.key() or b"")
            if self.count and self.first is None:  # at the first read, not after the reads that follow at once
                self.first = time.monotonic(), self.count
                self.first_cpu = cpu_seconds(self.pid)
        return self.count


@dataclass(frozen=True)
class Measured:
    rate: float  # events/s
    cpu_us: float  # the pipeline process's CPU per event, over the same events


def measure(label: str, props: dict, bootstrap: str, topic: str, events: int, message_limit: int) -> Measured:
    """Runs the pipeline until `topic` holds `events` committed messages: prints events/s, MB/s, the pipeline
    process's CPU per event and its RSS."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"max.message.bytes": str(message_limit)})])[topic].result(30)
    committed = Committed(bootstrap, topic)
    started = time.monotonic()
    heap = multiprocessing.get_context("spawn").SimpleQueue()
    process, stop = start(run_pipeline, props, bootstrap, message_limit, heap)
    committed.pid = process.pid
    samples = sample(process, lambda: min(committed(), events) / events)
    done, size, cpu_done = time.monotonic(), committed.bytes, cpu_seconds(process.pid)
    committed.consumer.close()
    stop.set()
    process.join(60)
    heap_summary = heap.get() if not heap.empty() else "no summary (the process did not end by itself)"
    first_at, first_count = committed.first
    if first_count <= events // 2:
        measured, seconds, timed = events - first_count, done - first_at, "from the first committed transaction"
        cpu = cpu_done - committed.first_cpu
    else:  # (nearly) all in one transaction
        measured, seconds, timed = events, done - started, "from the process's start, start-up included"
        cpu = cpu_done
    ten = next(rss for share, rss in samples if share >= 0.1)
    result = Measured(measured / seconds, cpu * 1e6 / measured)
    print(f"{label}: {result.rate:,.0f} events/s, {size * measured / events / seconds / 1e6:,.1f} MB/s "
          f"({size / events / 1e3:,.1f} kB per event; timed {timed}); pipeline process CPU {result.cpu_us:,.1f} µs "
          f"per event; RSS at ~10 % {ten:.0f} MB, at 100 % {samples[-1][1]:.0f} MB, ratio "
          f"{samples[-1][1] / ten:.2f} (target <= 1.10)", flush=True)
    report(f"  {label}", samples, events, "events")
    print(f"  {label}: heap at start / peak / end: {heap_summary}", flush=True)
    return result


def neighbours(bootstrap: str, db: str, rows: int, copy: tuple[float, float], snapshot: tuple[dict, Measured],
               catch_up: tuple[dict, Measured], plain_slot: str) -> None:
    """Prints the wide table's ratios, as bench.postgres's: the snapshot's to COPY followed by a plain producer of
    its messages, the catch-up's to the slower of a plain pgoutput read of the same inserts (from `plain_slot`) and
    a plain producer of its messages; and the pipeline's CPU per event to the neighbours' summed (this process's:
    COPY's and the read's client side, as the pipeline's is its client side). `copy`: (rows/s, CPU s)."""
    plain = read_slot(devstack_postgres.cdc_dsn(db), plain_slot, [catch_up[0]["publication.name"]],
                      -(-rows // WIDE_BATCH), p.Insert)
    (snap, snapshot_run), (stream, catch_up_run) = snapshot, catch_up
    (snap_rate, snap_cpu), (stream_rate, stream_cpu) = [
        producer_ceiling(bootstrap, read_messages(bootstrap, f"{props['topic.prefix']}.public.wide", rows))
        for props in (snap, stream)]
    copy_rate, copy_cpu_us = copy[0], copy[1] * 1e6 / rows
    ceiling = one_after_another(copy_rate, snap_rate)
    print(f"wide: snapshot / (COPY TO STDOUT + plain idempotent producer of the same messages, {snap_rate:,.0f} "
          f"msg/s: {ceiling:,.0f} rows/s) {snapshot_run.rate / ceiling:.2f}; CPU per event: pipeline / (COPY "
          f"{copy_cpu_us:.1f} µs + producer {snap_cpu:.1f} µs) {snapshot_run.cpu_us / (copy_cpu_us + snap_cpu):.2f}",
          flush=True)
    read_cpu_us = plain.cpu_seconds * 1e6 / plain.changes
    cpu_ratio = catch_up_run.cpu_us / (read_cpu_us + stream_cpu)
    print(f"wide: catch-up / the slower of a plain pgoutput read of the same inserts ({plain.rate:,.0f} changes/s) "
          f"and a plain idempotent producer of the same messages ({stream_rate:,.0f} msg/s) "
          f"{catch_up_run.rate / min(plain.rate, stream_rate):.2f}; CPU per event: pipeline / (read "
          f"{read_cpu_us:.1f} µs + producer {stream_cpu:.1f} µs) {cpu_ratio:.2f}",
          flush=True)


def postgres(args, bootstrap: str, run: str) -> None:
    devstack.up(["postgres"], echo=lambda line: None)
    admin, db = create_database("bench_wide")
    conn = psycopg.connect(devstack_postgres.cdc_dsn(db), autocommit=True)
    slots_here = psycopg.connect(psycopg2.extensions.make_dsn(devstack_postgres.admin_dsn(), dbname=db),
                                 autocommit=True)
    try:
        for index, (table, rows, batch, (definitions, values)) in enumerate((
                ("wide", args.rows, WIDE_BATCH, wide_columns("postgres", args.columns)),
                ("big", args.big_rows, BIG_BATCH, big_values("postgres", args.value_bytes)))):
            stream = {**properties(db, 2 * index, run), "table.include.list": f"public.{table}",
                      "connector.class": "postgres", **overrides(args)}
            conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, {definitions})")
            conn.execute(f'CREATE PUBLICATION "{stream["publication.name"]}" FOR TABLE {table}')
            plain_slot = f"{stream['slot.name']}_plain"  # the catch-up's neighbour reads the same changes from it
            for slot in (stream["slot.name"], plain_slot):
                slots_here.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
            for low in range(0, rows, batch):
                conn.execute(f"INSERT INTO {table} SELECT g, {values} "  # noqa: S608
                             f"FROM generate_series({low + 1}, {min(rows, low + batch)}) g")
            conn.execute(f"VACUUM ANALYZE {table}")
            began, cpu, sent = time.monotonic(), time.process_time(), 0
            with conn.cursor() as cur, cur.copy(f"COPY {table} TO STDOUT") as copy:
                for data in copy:
                    sent += len(data)
            copy_s, copy_cpu = time.monotonic() - began, time.process_time() - cpu
            print(f"{table} ({rows:,} rows): COPY TO STDOUT {rows / copy_s:,.0f} rows/s, "
                  f"{sent / copy_s / 1e6:,.1f} MB/s", flush=True)
            limit = message_limit(args.value_bytes)
            snap = {**properties(db, 2 * index + 1, run), "table.include.list": f"public.{table}",
                    "connector.class": "postgres", "snapshot.mode": "initial", "snapshot.max.threads": 2,
                    **snapshot_chunk(args), **overrides(args)}
            snapshot = measure(f"{table} snapshot", snap, bootstrap, f"{snap['topic.prefix']}.public.{table}", rows,
                               limit)
            catch_up = measure(f"{table} catch-up", stream, bootstrap, f"{stream['topic.prefix']}.public.{table}",
                               rows, limit)
            print(f"{table}: snapshot / COPY TO STDOUT {snapshot.rate * copy_s / rows:.2f}", flush=True)
            if table == "wide":
                neighbours(bootstrap, db, rows, (rows / copy_s, copy_cpu), (snap, snapshot), (stream, catch_up),
                           plain_slot)
    finally:
        conn.close()
        slots_here.close()
        drop_database(admin, db)


def mariadb_properties(name: str, database: str, admin: ConnectionSettings, snapshot_mode: str) -> dict:
    user, password = settings.MARIADB_CDC_USER
    return {"name": name, "connector.class": "mariadb", "database.hostname": admin.host, "database.port": admin.port,
            "database.user": user, "database.password": password, "database.server.id": 100_000 + hash(name) % 100_000,
            "topic.prefix": name, "database.include.list": database, "snapshot.mode": snapshot_mode,
            "offset.storage.topic": f"{name}.offsets", "offset.storage.partitions": 1, "max.batch.size": 4096,
            "max.queue.size": 16384, "poll.interval.ms": 100, "heartbeat.interval.ms": 100}


def mariadb_wide_ratios(bootstrap: str, admin: ConnectionSettings, database: str, binlog_start: str, rows: int,
                        snapshot: tuple[float, str, float], catch_up: tuple[str, float]) -> None:
    """Prints the wide table's ratios as bench.mariadb does for its narrow one: the snapshot's to a plain SELECT then
    a plain produce of the same messages, the catch-up's to the slower of a plain binlog read of the same changes
    (the connector's BinlogReader, no Kafka) and a plain producer of the same messages."""
    selected, snapshot_topic, snapshot_rate = snapshot
    catch_up_topic, catch_up_rate = catch_up
    sample = min(rows, 20_000)
    produced, _ = producer_ceiling(bootstrap, read_messages(bootstrap, snapshot_topic, sample))
    ceiling = one_after_another(selected, produced)
    print(f"wide snapshot: plain idempotent producer of the same messages {produced:,.0f} msg/s, SELECT + produce "
          f"{ceiling:,.0f} rows/s; snapshot / (SELECT + produce) {snapshot_rate / ceiling:.2f}", flush=True)
    read, _ = plain_binlog_read(admin, binlog_start, database, rows)
    produced, _ = producer_ceiling(bootstrap, read_messages(bootstrap, catch_up_topic, sample))
    print(f"wide catch-up: plain binlog read {read:,.0f} events/s, plain idempotent producer of the same messages "
          f"{produced:,.0f} msg/s; catch-up / the slower of the two {catch_up_rate / min(read, produced):.2f}",
          flush=True)


def mariadb(args, bootstrap: str, run: str) -> None:
    devstack.up(["mariadb"], echo=lambda line: None)
    admin = ConnectionSettings.from_dsn(settings.mariadb_dsn())
    connection = connect(admin, autocommit=True)
    database = f"{run}db"
    limit = message_limit(args.value_bytes)
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {database}")
            cursor.execute(f"USE {database}")
            for table, rows, batch, (definitions, values) in (
                    ("wide", args.rows, WIDE_BATCH, wide_columns("mariadb", args.columns)),
                    ("big", args.big_rows, BIG_BATCH, big_values("mariadb", args.value_bytes))):
                cursor.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, {definitions})")
                # the catch-up pipeline's position is fixed first (its first heartbeat stores the binlog's end)
                stream = {**mariadb_properties(f"{run}{table}c", database, admin, "no_data"), **overrides(args)}
                heap = multiprocessing.get_context("spawn").SimpleQueue()  # kept until the child has read it
                process, stop = start(run_pipeline, stream, bootstrap, limit, heap)
                wait_committed(bootstrap, stream["offset.storage.topic"], 1, 120)
                stop.set()
                process.join(60)
                binlog_start = show_binlog_status(cursor).gtids
                for low in range(0, rows, batch):
                    cursor.execute(f"INSERT INTO {table} SELECT g, {values} "  # noqa: S608
                                   f"FROM (SELECT seq AS g FROM seq_{low + 1}_to_{min(rows, low + batch)}) s")
                began = time.monotonic()
                with connect(admin.with_database(database)) as reader, reader.cursor(SSCursor) as rows_cursor:
                    rows_cursor.execute(f"SELECT * FROM {table}")  # noqa: S608
                    selected = sum(1 for _ in rows_cursor) / (time.monotonic() - began)
                print(f"{table} ({rows:,} rows): plain SELECT {selected:,.0f} rows/s", flush=True)
                snap = {**mariadb_properties(f"{run}{table}s", database, admin, "initial"), **snapshot_chunk(args),
                        **overrides(args)}
                snapshot_topic = f"{snap['topic.prefix']}.{database}.{table}"
                snapshot = measure(f"{table} snapshot", snap, bootstrap, snapshot_topic, rows, limit)
                catch_up_topic = f"{stream['topic.prefix']}.{database}.{table}"
                catch_up = measure(f"{table} catch-up", stream, bootstrap, catch_up_topic, rows, limit)
                print(f"{table}: snapshot / plain SELECT {snapshot.rate / selected:.2f}", flush=True)
                if table == "wide":
                    mariadb_wide_ratios(bootstrap, admin, database, binlog_start, rows, (selected, snapshot_topic,
                                        snapshot.rate), (catch_up_topic, catch_up.rate))
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {database}")
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=("postgres", "mariadb"), default="postgres")
    for flag, default, meaning in (("--columns", 100, "columns of the wide table"),
                                   ("--rows", 100_000, "rows of the wide table"),
                                   ("--big-rows", 100, "rows of the table of large values"),
                                   ("--value-bytes", 1_048_576, "bytes of each large value"),
                                   ("--snapshot-chunk-size", 0, "the snapshots' snapshot.chunk.size (0: the "
                                                                "connector's default)")):
        parser.add_argument(flag, type=int, default=default, help=meaning)
    parser.add_argument("--property", action="append", default=[], metavar="NAME=VALUE",
                        help="a connector property for every pipeline of the run (repeatable)")
    args = parser.parse_args()
    devstack.up(["kafka"], echo=lambda line: None)
    bootstrap = devstack.endpoints().kafka_bootstrap
    run = "wide" + uuid.uuid4().hex[:6]
    try:
        {"postgres": postgres, "mariadb": mariadb}[args.source](args, bootstrap, run)
    finally:
        delete_topics(bootstrap, run)


if __name__ == "__main__":
    main()
