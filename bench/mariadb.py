"""MariaDB source benchmark: snapshot rows/s against a plain SELECT plus a plain producer of the same rows (connector
start-up reported apart), streaming catch-up events/s against a plain binlog read (the same reader, no Kafka) and a
plain idempotent producer of the same messages, and end-to-end p50/p99 latency at a fixed write rate.

    python -m bench.mariadb [--rows 50000] [--changes 20000] [--rate 200] [--seconds 10] [--only snapshot]
                            [--python-rows]

--python-rows reads snapshot rows by pymysql's own parsing (the fallback without the compiled module).

Needs Kafka and MariaDB (`python -m devstack up kafka mariadb`, or MARIADB_DSN for an existing server).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import uuid

from confluent_kafka import Consumer

from bench import thread_cpu
from bench.ceiling import producer_ceiling, read_messages
from bench.streaming import committed_reached, wait_committed
from bench.streaming_start import wait_until_streaming
from bench.topics import delete_topics
from connectors.mysql import text_rows
from connectors.mysql.binlog import BinlogPosition, BinlogReader, RowChange
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
            "ceiling": 1 / (1 / select_rate + 1 / produce_rate),  # the SELECT, then the produce, of each row
            "connector_cpu": connector_cpu * 1e6 / measured, "select_cpu": select_cpu * 1e6 / rows,
            "produce_cpu": produce_cpu}


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
    began, cpu = time.monotonic(), time.process_time()
    seen = 0
    reader = BinlogReader(admin, server_id=90_000 + changes % 1000, start=BinlogPosition(gtids=start.gtids),
                          only_schemas=[name])
    for item in reader:
        seen += isinstance(item, RowChange)
        if seen == changes:
            break
    reader.close()
    plain = changes / (time.monotonic() - began)
    plain_cpu = (time.process_time() - cpu) * 1e6 / changes
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


def latency(admin: ConnectionSettings, bootstrap: str, rate: float, seconds: float) -> tuple[float, float]:
    name = f"bm{uuid.uuid4().hex[:8]}"
    _execute(admin, f"CREATE DATABASE {name}")
    _execute(admin, "CREATE TABLE t (id INT PRIMARY KEY, n INT, payload VARCHAR(255), sent BIGINT)", database=name)
    runner, stop, thread = _run(_properties(name, name, admin, "initial"), bootstrap)
    topic = f"{name}.{name}.t"
    total = int(rate * seconds)
    ready = threading.Event()
    latencies: list[float] = []

    def consume():
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                             "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                             "fetch.wait.max.ms": 10, "topic.metadata.refresh.interval.ms": 500})
        consumer.subscribe([topic])
        deadline = time.monotonic() + seconds + 120
        while len(latencies) < total and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is None or message.error() or not message.value():
                continue
            received = time.time_ns()
            after = json.loads(message.value())["payload"]["after"]
            if after["id"] < 0:
                ready.set()
                continue
            latencies.append((received - after["sent"]) / 1e6)
        consumer.close()

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    connection = connect(admin.with_database(name))
    with connection.cursor() as cursor:
        # the first change goes all the way through before measuring: topic creation and the group join are
        # start-up costs, not latency
        deadline = time.monotonic() + 120
        while not ready.is_set():
            cursor.execute("REPLACE INTO t VALUES (-1, 0, 'warm-up', 0)")
            ready.wait(1)
            assert time.monotonic() < deadline, "the warm-up change did not reach the consumer"
        interval = 1 / rate
        began = time.monotonic()
        for i in range(total):
            cursor.execute("INSERT INTO t VALUES (%s, %s, %s, %s)", (i, i, PAYLOAD, time.time_ns()))
            time.sleep(max(0.0, began + (i + 1) * interval - time.monotonic()))
    connection.close()
    reader.join()
    stop.set()
    thread.join()
    _execute(admin, f"DROP DATABASE {name}")
    delete_topics(bootstrap, name, f"__debezium-heartbeat.{name}")
    latencies.sort()
    return statistics.median(latencies), latencies[max(0, int(len(latencies) * 0.99) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--only", choices=("snapshot",), help="run the snapshot comparison alone")
    parser.add_argument("--python-rows", action="store_true", help="snapshot rows read by pymysql's parsing")
    parser.add_argument("--bootstrap-servers", default=settings.kafka_bootstrap())
    args = parser.parse_args()
    admin = _admin()
    if args.python_rows:
        text_rows.read_text_rows = None
    snap = snapshot(admin, args.bootstrap_servers, args.rows)
    print(f"snapshot: {snap['connector']:,.0f} rows/s through Kafka over {snap['measured']:,} rows after the first "
          f"committed chunk (connector start-up {snap['start_up']:.2f}s, not in the rate); plain SELECT "
          f"{snap['select']:,.0f} rows/s, plain idempotent producer of the same messages {snap['produce']:,.0f} msg/s, "
          f"SELECT + produce {snap['ceiling']:,.0f} rows/s; ratio to SELECT + produce "
          f"{snap['connector'] / snap['ceiling']:.3f}, to the slower of the two (they overlap in the connector's "
          f"threads) {snap['connector'] / min(snap['select'], snap['produce']):.3f}")
    print(f"          CPU per row: connector {snap['connector_cpu']:.1f} µs, plain SELECT {snap['select_cpu']:.1f} µs "
          f"+ plain produce {snap['produce_cpu']:.1f} µs (connector / (SELECT + produce) "
          f"{snap['connector_cpu'] / (snap['select_cpu'] + snap['produce_cpu']):.2f})")
    if args.only == "snapshot":
        return
    connector, plain, connector_cpu, plain_cpu, produced, produce_cpu = catch_up(admin, args.bootstrap_servers,
                                                                                 args.changes)
    print(f"catch-up: {connector:,.0f} events/s through Kafka, plain binlog read {plain:,.0f} events/s "
          f"(ratio {connector / plain:.3f}); CPU per event: connector {connector_cpu:.1f} µs, "
          f"plain read {plain_cpu:.1f} µs")
    print(f"          plain idempotent producer of the same messages {produced:,.0f} msg/s ({produce_cpu:.1f} µs "
          f"CPU/msg); connector / the slower of read and producer {connector / min(plain, produced):.3f}; "
          f"connector CPU / (read + producer) {connector_cpu / (plain_cpu + produce_cpu):.2f}")
    p50, p99 = latency(admin, args.bootstrap_servers, args.rate, args.seconds)
    print(f"latency at {args.rate:g} inserts/s: p50 {p50:.1f} ms, p99 {p99:.1f} ms")


if __name__ == "__main__":
    main()
