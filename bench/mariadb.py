"""MariaDB source benchmark: snapshot rows/s against a plain SELECT plus a plain producer of the same rows (connector
start-up reported apart), streaming catch-up events/s against a plain binlog read (the same reader, no Kafka) and a
plain idempotent producer of the same messages, and end-to-end p50/p99 latency at a fixed write rate broken down by
stage (bench.relational_latency).

    python -m bench.mariadb [--rows 50000] [--changes 20000] [--rounds 3] [--rate 2000] [--seconds 10]
                            [--only snapshot|catch-up] [--python-rows] [--latency-only] [--warm-up 10]
                            [--property KEY=VALUE]

--python-rows reads snapshot rows by pymysql's own parsing (the fallback without the compiled module).

The catch-up comparison runs `--rounds` times, each round the three of them on its own changes, and prints each
round and the median of each figure over the rounds. A plain producer's CPU per message varies about twofold from
one round to the next on the same machine (librdkafka's broker threads poll without sleeping while a request they
could send waits for the answer to one in flight), more than any change to the connector moves it.

Needs Kafka and MariaDB (`python -m devstack up kafka mariadb`, or MARIADB_DSN for an existing server).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid

import pymysql
from pymysql.constants import CLIENT

from bench import relational_latency, thread_cpu
from bench.ceiling import one_after_another, producer_ceiling, read_messages
from bench.streaming import committed_reached, wait_committed
from bench.streaming_start import wait_until_streaming
from bench.topics import delete_topics
from connectors.mysql import text_rows
from connectors.mysql.binlog import BinlogPosition, BinlogReader, RowChange, RowsSpan, row_change
from connectors.mysql.connection import ConnectionSettings, connect
from connectors.mysql.status import show_binlog_status
from connectors.runner import ConnectorRunner
from connectors.sources import engine_config
from devstack import settings

PAYLOAD = "x" * 200


def _admin() -> ConnectionSettings:
    return ConnectionSettings.from_dsn(settings.mariadb_dsn())


def _execute(admin: ConnectionSettings, *statements, database: str | None = None, params=None) -> list:
    connection = connect(admin.with_database(database))
    try:
        with connection.cursor() as cursor:
            rows: list = []
            for statement in statements:
                cursor.execute(statement, params)
                rows = list(cursor.fetchall())
            return rows
    finally:
        connection.close()


def _properties(name: str, database: str, admin: ConnectionSettings, snapshot_mode: str) -> dict:
    user, password = settings.MARIADB_CDC_USER
    return {
        "name": name, "connector.class": "mariadb", "database.hostname": admin.host, "database.port": admin.port,
        "database.user": user, "database.password": password, "database.server.id": 100_000 + hash(name) % 100_000,
        "topic.prefix": name, "database.include.list": database, "snapshot.mode": snapshot_mode,
        "offset.storage.topic": f"{name}.offsets", "offset.storage.partitions": 1, "max.batch.size": 4096,
        "max.queue.size": 16384, "poll.interval.ms": 100, "snapshot.chunk.size": 8192,
        "schemas.enable": "true",  # keys and values, as the figures in docs/benchmarks.md were measured
    }


def _load(admin: ConnectionSettings, database: str, first: int, count: int) -> None:
    connection = connect(admin.with_database(database), autocommit=False)
    try:
        with connection.cursor() as cursor:
            for start in range(first, first + count, 1000):
                rows = [(i, i, PAYLOAD, time.time_ns()) for i in range(start, min(first + count, start + 1000))]
                cursor.executemany("INSERT INTO t VALUES (%s, %s, %s, %s)", rows)
                connection.commit()
    finally:
        connection.close()


def _run(props: dict, bootstrap: str) -> tuple[ConnectorRunner, threading.Event, threading.Thread]:
    _, config = engine_config(props)
    stop = threading.Event()
    runner = ConnectorRunner(config, bootstrap, stop)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    return runner, stop, thread


def snapshot(admin: ConnectionSettings, bootstrap: str, rows: int) -> dict:
    """An initial_only snapshot of a table of `rows` rows against its neighbours measured in the same run: a plain
    SELECT of the table (pymysql's fetchall) and a plain idempotent producer sending the connector's messages. The
    connector's rate counts from its first committed chunk to its last: its start-up (up to that first commit) is
    reported apart. CPU is this process's (the connector runs in it)."""
    name = f"bm{uuid.uuid4().hex[:8]}"
    _execute(admin, f"CREATE DATABASE {name}")
    _execute(admin, "CREATE TABLE t (id INT PRIMARY KEY, n INT, payload VARCHAR(255), sent BIGINT)", database=name)
    _load(admin, name, 0, rows)
    began, cpu = time.monotonic(), time.process_time()
    connection = connect(admin.with_database(name))
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM t")
        assert len(cursor.fetchall()) == rows
    connection.close()
    select_s, select_cpu = time.monotonic() - began, time.process_time() - cpu
    topic = f"{name}.{name}.t"
    started = time.monotonic()
    runner, stop, thread = _run(_properties(name, name, admin, "initial_only"), bootstrap)
    first, first_count = committed_reached(bootstrap, topic, 1, 600, poll=0.01)  # start-up is over
    cpu = time.process_time()
    done = wait_committed(bootstrap, topic, rows, 600)
    connector_cpu = time.process_time() - cpu
    stop.set()
    thread.join()
    measured = rows - first_count
    produce_rate, produce_cpu = producer_ceiling(bootstrap, read_messages(bootstrap, topic, rows))
    _execute(admin, f"DROP DATABASE {name}")
    delete_topics(bootstrap, name, f"__debezium-heartbeat.{name}")
    select_rate = rows / select_s
    return {"connector": measured / (done - first), "start_up": first - started, "measured": measured,
            "select": select_rate, "produce": produce_rate,
            "ceiling": one_after_another(select_rate, produce_rate),
            "connector_cpu": connector_cpu * 1e6 / measured, "select_cpu": select_cpu * 1e6 / rows,
            "produce_cpu": produce_cpu}


def plain_binlog_read(admin: ConnectionSettings, gtids: str, schema: str, changes: int) -> tuple[float, float]:
    """A plain read of `changes` row changes of `schema` from the binlog at `gtids` by the connector's BinlogReader
    (no Kafka): events/s and this process's CPU µs per event."""
    began, cpu = time.monotonic(), time.process_time()
    seen = 0
    reader = BinlogReader(admin, server_id=90_000 + changes % 1000, start=BinlogPosition(gtids=gtids),
                          only_schemas=[schema])
    for item in reader:
        seen += isinstance(item, RowChange)
        if seen == changes:
            break
    reader.close()
    return changes / (time.monotonic() - began), (time.process_time() - cpu) * 1e6 / changes


def catch_up(admin: ConnectionSettings, bootstrap: str, changes: int) -> tuple[float, ...]:
    """(connector events/s, plain binlog read events/s, this process's CPU µs per event for each, and a plain
    idempotent producer's msg/s and CPU µs per message sending the connector's messages) over `changes` inserts
    already in the binlog."""
    name = f"bm{uuid.uuid4().hex[:8]}"
    _execute(admin, f"CREATE DATABASE {name}")
    _execute(admin, "CREATE TABLE t (id INT PRIMARY KEY, n INT, payload VARCHAR(255), sent BIGINT)", database=name)
    connection = connect(admin)
    with connection.cursor() as cursor:
        start = show_binlog_status(cursor)
    connection.close()
    _load(admin, name, 0, changes)
    plain, plain_cpu = plain_binlog_read(admin, start.gtids, name, changes)
    # no_data streams from the binlog's end (`never` would read it from its beginning): the first heartbeat stores
    # that position
    props = {**_properties(name, name, admin, "no_data"), "heartbeat.interval.ms": 100}
    runner, stop, thread = _run(props, bootstrap)
    wait_committed(bootstrap, props["offset.storage.topic"], 1, 120)
    stop.set()
    thread.join()
    _load(admin, name, changes, changes)  # what the restarted connector catches up on
    started = time.monotonic()
    runner, stop, thread = _run(props, bootstrap)
    began = wait_until_streaming(runner, thread)
    cpu, threads = time.process_time(), thread_cpu.sample()
    print(f"          connector start-up (not in the catch-up figures): {began - started:.2f}s", flush=True)
    done = wait_committed(bootstrap, f"{name}.{name}.t", changes, 600)
    connector_cpu = (time.process_time() - cpu) * 1e6 / changes
    print(f"          {thread_cpu.breakdown(threads, thread_cpu.sample(), changes)}", flush=True)
    stop.set()
    thread.join()
    produce_rate, produce_cpu = producer_ceiling(bootstrap, read_messages(bootstrap, f"{name}.{name}.t", changes))
    _execute(admin, f"DROP DATABASE {name}")
    delete_topics(bootstrap, name, f"__debezium-heartbeat.{name}")
    return changes / (done - began), plain, connector_cpu, plain_cpu, produce_rate, produce_cpu


def _write_rows(kwargs: dict, rate: float, total: int, out) -> None:
    """The application of the latency run (a process of its own): rows of `lat` at `rate`, each its own transaction
    (autocommit); the rows due together go in one multi-statement round trip."""
    connection = pymysql.connect(**kwargs, autocommit=True, client_flag=CLIENT.MULTI_STATEMENTS)

    def write(first: int, count: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO lat VALUES (%s, %s);" * count,
                           [value for n in range(first, first + count) for value in (n, relational_latency.PAYLOAD)])
            while cursor.nextset():
                pass

    relational_latency.paced_writes(write, rate, total, out)
    connection.close()


def _queued_number(item) -> int | None:
    if type(item) is RowsSpan:  # a rows event's rows queued as one item: its last row's
        item = (item.run, item.end - 1)
    if type(item) is tuple:  # a row of a rows event queued undecoded (binlog.RowsRun): decoded for the mark
        if item[0].schema.table != "lat":
            return None
        item = row_change(item)
    if type(item) is RowChange and item.after is not None and item.schema.table == "lat":
        return item.after.get("n")
    return None


def latency(admin: ConnectionSettings, bootstrap: str, rate: float, seconds: float, extra: dict) -> dict:
    """Latency at `rate` single-row transactions per second, by stage (bench.relational_latency)."""
    name = f"bm{uuid.uuid4().hex[:8]}"
    _execute(admin, f"CREATE DATABASE {name}")
    _execute(admin, "CREATE TABLE lat (n INT PRIMARY KEY, payload VARCHAR(255))", database=name)
    props = {**_properties(name, name, admin, "no_data"), **extra}
    _, config = engine_config(props)
    target = relational_latency.LatencyTarget(config, f"{name}.{name}.lat", _write_rows,
                                              (admin.with_database(name).pymysql_kwargs(),), _queued_number)
    try:
        return relational_latency.measure(
            target, bootstrap, rate, seconds,
            lambda: _execute(admin, "REPLACE INTO lat VALUES (-1, 'warm-up')", database=name))
    finally:
        _execute(admin, f"DROP DATABASE {name}")
        delete_topics(bootstrap, name, f"__debezium-heartbeat.{name}")


def print_catch_up(figures: tuple[float, ...], title: str) -> tuple[float, ...]:
    connector, plain, connector_cpu, plain_cpu, produced, produce_cpu = figures
    print(f"catch-up, {title}: {connector:,.0f} events/s through Kafka, plain binlog read {plain:,.0f} events/s "
          f"(ratio {connector / plain:.3f}); CPU per event: connector {connector_cpu:.1f} µs, "
          f"plain read {plain_cpu:.1f} µs")
    print(f"          plain idempotent producer of the same messages {produced:,.0f} msg/s ({produce_cpu:.1f} µs "
          f"CPU/msg); connector / the slower of read and producer {connector / min(plain, produced):.3f}; "
          f"connector CPU / (read + producer) {connector_cpu / (plain_cpu + produce_cpu):.2f}", flush=True)
    return figures


def print_snapshot(snap: dict) -> None:
    print(f"snapshot: {snap['connector']:,.0f} rows/s through Kafka over {snap['measured']:,} rows after the first "
          f"committed chunk (connector start-up {snap['start_up']:.2f}s, not in the rate); plain SELECT "
          f"{snap['select']:,.0f} rows/s, plain idempotent producer of the same messages {snap['produce']:,.0f} msg/s, "
          f"SELECT + produce {snap['ceiling']:,.0f} rows/s; ratio to SELECT + produce "
          f"{snap['connector'] / snap['ceiling']:.3f}, to the slower of the two (they overlap in the connector's "
          f"threads) {snap['connector'] / min(snap['select'], snap['produce']):.3f}")
    print(f"          CPU per row: connector {snap['connector_cpu']:.1f} µs, plain SELECT {snap['select_cpu']:.1f} µs "
          f"+ plain produce {snap['produce_cpu']:.1f} µs (connector / (SELECT + produce) "
          f"{snap['connector_cpu'] / (snap['select_cpu'] + snap['produce_cpu']):.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3, help="catch-up comparisons, each on its own changes")
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--only", choices=("snapshot", "catch-up"), help="run that comparison alone")
    parser.add_argument("--latency-only", action="store_true", help="only the latency run and its breakdown")
    parser.add_argument("--warm-up", type=float, default=10, metavar="SECONDS",
                        help="first a latency run of this many seconds at the same rate, printed but not measured")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="a connector property of the latency run (repeatable), e.g. poll.interval.ms=500")
    parser.add_argument("--python-rows", action="store_true", help="snapshot rows read by pymysql's parsing")
    parser.add_argument("--bootstrap-servers", default=settings.kafka_bootstrap())
    args = parser.parse_args()
    admin = _admin()
    if args.python_rows:
        text_rows.read_text_rows = None
    if args.latency_only:
        run_latency(admin, args)
        return
    if args.only != "catch-up":
        print_snapshot(snapshot(admin, args.bootstrap_servers, args.rows))
    if args.only == "snapshot":
        return
    rounds = [print_catch_up(catch_up(admin, args.bootstrap_servers, args.changes), f"round {n + 1}")
              for n in range(args.rounds)]
    if len(rounds) > 1:
        print_catch_up(tuple(statistics.median(figures) for figures in zip(*rounds, strict=True)),
                       f"median of {len(rounds)} rounds, each figure apart")
    if args.only is None:
        run_latency(admin, args)


def run_latency(admin: ConnectionSettings, args) -> None:
    extra = dict(item.split("=", 1) for item in args.property)
    if args.warm_up > 0:
        relational_latency.print_latency(args.rate, latency(admin, args.bootstrap_servers, args.rate, args.warm_up,
                                                            extra), warm_up=True)
    relational_latency.print_latency(args.rate, latency(admin, args.bootstrap_servers, args.rate, args.seconds,
                                                        extra))


if __name__ == "__main__":
    main()
