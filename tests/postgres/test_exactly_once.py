"""Exactly once across crashes: `python -m connectors run pg.json` is kill -9'd at random points under a write
load (single-row transactions and transactions larger than max.batch.size), restarted each time; a read_committed
consumer then sees every committed row change exactly once and in commit order per key."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import psycopg2.extensions
import pytest

from connectors.kafka import OffsetStore
from tests.integration.kafka_reading import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROWS = 20
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start_runner(config_path, bootstrap, log_path) -> subprocess.Popen:
    log = open(log_path, "ab")  # noqa: SIM115 - owned by the child
    return subprocess.Popen([sys.executable, "-m", "connectors", "run", str(config_path), "--bootstrap-servers",
                             bootstrap], stdout=log, stderr=subprocess.STDOUT, cwd=REPO)


class Writer(threading.Thread):
    """Each transaction adds 1 to `seq` of some rows: one row, or (every 10th) every row 3 times over (60
    changes, more than max.batch.size). A key's seq values in the topic must then be 1, 2, 3, … with no gap."""

    def __init__(self, db, rate: float):
        super().__init__(daemon=True)
        self.db, self.rate = db, rate
        self.halt = threading.Event()
        self.transactions = 0
        self.final = dict.fromkeys(range(ROWS), 0)

    def run(self):
        rng = random.Random(16)
        conn = self.db.connect()
        with conn.cursor() as cursor:
            while not self.halt.is_set():
                if self.transactions % 10 == 9:
                    cursor.execute("BEGIN")
                    for _ in range(3):
                        for key in range(ROWS):
                            cursor.execute("UPDATE counters SET seq = seq + 1 WHERE id = %s", (key,))
                            self.final[key] += 1
                    cursor.execute("COMMIT")
                else:
                    key = rng.randrange(ROWS)
                    cursor.execute("UPDATE counters SET seq = seq + 1 WHERE id = %s", (key,))
                    self.final[key] += 1
                self.transactions += 1
                time.sleep(1 / self.rate)
        conn.close()


def write_connector_json(pg_db, name: str, tmp_path, **settings):
    """A PostgreSQL connector's configuration for `python -m connectors run`, `settings` added to the common ones,
    written to tmp_path / "pg.json" (returned)."""
    dsn = psycopg2.extensions.parse_dsn(pg_db.dsn)
    config = {
        "name": name, "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "topic.prefix": name, "database.hostname": dsn["host"], "database.port": dsn["port"],
        "database.user": dsn["user"], "database.password": dsn.get("password"), "database.dbname": pg_db.name,
        "slot.name": pg_db.name, "offset.storage.topic": f"{name}.offsets", "poll.interval.ms": 50,
        "publication.autocreate.mode": "filtered", **settings,
    }
    config_path = tmp_path / "pg.json"
    config_path.write_text(json.dumps(config))
    return config_path


def stored_lsn(store: OffsetStore, key: bytes) -> int:
    value = store.read_value(key)[0]
    return json.loads(value).get("lsn_proc", 0) if value else 0


def test_kill_minus_nine_under_load_gives_exactly_once(pg_db, stack, tmp_path, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "pgk9" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE counters (id int PRIMARY KEY, seq int NOT NULL)")
    pg_db.execute("INSERT INTO counters SELECT g, 0 FROM generate_series(0, %s) g", (ROWS - 1,))
    config_path = write_connector_json(pg_db, name, tmp_path, **{"max.batch.size": 16,
                                                                 "table.include.list": "public.counters"})
    log_path = tmp_path / "runner.log"
    store = OffsetStore(bootstrap, f"{name}.offsets")
    key = json.dumps([name, {"server": name}], separators=(",", ":")).encode()
    topic = f"{name}.public.counters"

    runner = start_runner(config_path, bootstrap, log_path)
    writer = Writer(pg_db, rate=80)
    rng = random.Random(9)
    try:
        deadline = time.monotonic() + 60
        while not stored_lsn(store, key):  # the snapshot completed and streaming committed something
            assert runner.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.2)
        writer.start()
        for _ in range(4):
            before = stored_lsn(store, key)
            deadline = time.monotonic() + 60
            while stored_lsn(store, key) <= before:  # the runner is committing under the load
                assert runner.poll() is None, log_path.read_text()[-3000:]
                assert time.monotonic() < deadline, log_path.read_text()[-3000:]
                time.sleep(0.1)
            time.sleep(rng.uniform(0.0, 1.5))
            os.kill(runner.pid, signal.SIGKILL)
            runner.wait()
            runner = start_runner(config_path, bootstrap, log_path)
        time.sleep(1)
        writer.halt.set()
        writer.join(30)
        expected_updates = sum(writer.final.values())
        deadline = time.monotonic() + 120
        while True:  # until every committed update is in Kafka (then no more may come)
            assert runner.poll() is None, log_path.read_text()[-3000:]
            records = read_topic(bootstrap, topic)
            updates = [json.loads(r.value) for r in records if r.value and json.loads(r.value)["op"] == "u"]
            if len(updates) >= expected_updates or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        writer.halt.set()
        runner.send_signal(signal.SIGTERM)
        runner.wait(60)
    snapshot = [json.loads(r.value) for r in records if r.value and json.loads(r.value)["op"] == "r"]
    assert sorted(v["after"]["id"] for v in snapshot) == list(range(ROWS))
    seen: dict[int, list[int]] = {k: [] for k in range(ROWS)}
    for value in updates:
        seen[value["after"]["id"]].append(value["after"]["seq"])
    for k in range(ROWS):
        assert seen[k] == list(range(1, writer.final[k] + 1)), (k, seen[k][:50], writer.final[k])
    assert writer.transactions > 50
    assert log_path.read_text().count("resuming after LSN") >= 4


def test_replication_connection_killed_under_load_loses_and_repeats_nothing(pg_db, stack, unique_name):
    """The server ends the walsender (pg_terminate_backend) three times while changes stream: the reader reconnects,
    the slot replays from its confirmed flush position, and what was already queued or committed is dropped."""
    from connectors.postgres.config import PostgresConfig
    from connectors.runner import ConnectorRunner

    bootstrap = stack.kafka_bootstrap
    name = "pgrc" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE counters (id int PRIMARY KEY, seq int NOT NULL)")
    pg_db.execute("INSERT INTO counters SELECT g, 0 FROM generate_series(0, %s) g", (ROWS - 1,))
    dsn = psycopg2.extensions.parse_dsn(pg_db.dsn)
    config = PostgresConfig.from_properties({
        "name": name, "topic.prefix": name, "database.hostname": dsn["host"], "database.port": dsn["port"],
        "database.user": dsn["user"], "database.password": dsn.get("password"), "database.dbname": pg_db.name,
        "slot.name": pg_db.name, "offset.storage.topic": f"{name}.offsets", "poll.interval.ms": 50,
        "max.batch.size": 16, "snapshot.mode": "no_data", "connect.backoff.initial.delay.ms": 100,
        "publication.autocreate.mode": "filtered",
        "connect.backoff.max.delay.ms": 1000})
    stop = threading.Event()
    runner = ConnectorRunner(config, bootstrap, stop)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    writer = Writer(pg_db, rate=80)
    topic = f"{name}.public.counters"

    def walsender() -> int | None:
        rows = pg_db.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s AND active",
                             (pg_db.name,))
        return rows[0][0] if rows else None

    try:
        deadline = time.monotonic() + 30
        while walsender() is None:
            assert time.monotonic() < deadline and thread.is_alive(), runner.errors
            time.sleep(0.1)
        writer.start()
        for _ in range(3):
            time.sleep(1.5)
            pid = walsender()
            deadline = time.monotonic() + 30
            while pid is None:  # reconnecting after the previous kill
                assert time.monotonic() < deadline and thread.is_alive(), runner.errors
                time.sleep(0.1)
                pid = walsender()
            pg_db.execute("SELECT pg_terminate_backend(%s)", (pid,))
        time.sleep(1.5)
        writer.halt.set()
        writer.join(30)
        expected = sum(writer.final.values())
        deadline = time.monotonic() + 90
        while True:
            assert thread.is_alive(), runner.errors
            records = read_topic(bootstrap, topic)
            updates = [json.loads(r.value) for r in records if r.value]
            if len(updates) >= expected or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        writer.halt.set()
        stop.set()
        thread.join(60)
    assert not runner.errors
    assert runner.pipelines[pg_db.name].metrics.disconnects >= 3  # the reader did reconnect each time
    seen: dict[int, list[int]] = {k: [] for k in range(ROWS)}
    for value in updates:
        seen[value["after"]["id"]].append(value["after"]["seq"])
    for k in range(ROWS):
        assert seen[k] == list(range(1, writer.final[k] + 1)), (k, seen[k][:50], writer.final[k])


def snapshot_state(store: OffsetStore, key: bytes) -> tuple[int, int, bool]:
    """(chunks committed, chunks planned, over) of the stored snapshot progress: over once it completed (streaming
    offsets no longer carry it); (0, 0, False) before the plan is stored."""
    return progress_of(store.read_value(key)[0])


def written_snapshot_state(bootstrap: str, topic: str, key: bytes) -> tuple[int, int, bool]:
    """snapshot_state of the last offset record written, committed or not (read_uncommitted: a frozen runner's open
    transaction does not hold the read up)."""
    values = [r.value for r in read_topic(bootstrap, topic, "read_uncommitted") if r.key == key]
    return progress_of(values[-1] if values else None)


def progress_of(value: bytes | None) -> tuple[int, int, bool]:
    if not value:
        return 0, 0, False
    snapshot = json.loads(value).get("snapshot")
    if not snapshot:
        return 0, 0, True
    done = "".join(c.get("done", "") for c in snapshot.get("collections") or [])
    return done.count("1"), len(done), bool(snapshot.get("completed"))


def freeze_inside_the_snapshot(runner: subprocess.Popen, log_path, log_start: int, bootstrap: str, topic: str,
                               key: bytes, at_least: int) -> tuple[int, int, bool]:
    """Freezes the runner (SIGSTOP) once the offset records it wrote, committed or not, show at least `at_least`
    chunks done, and returns that state; fails if the snapshot is then not short of its last two chunks.

    Frozen, the runner writes nothing more, but what it sent may still reach the broker: at most the offset record of
    one more chunk (each commits in its own transaction) and that transaction's commit. Its log (from `log_start`)
    says when to look: each chunk it reads logs a line. Until the records show enough, it runs a few milliseconds at
    a time between looks, so a snapshot of 0.9 s cannot end between two of them."""
    deadline = time.monotonic() + 90
    while True:
        assert runner.poll() is None, log_path.read_text()[-3000:]
        assert time.monotonic() < deadline, log_path.read_text()[-3000:]
        if b"read chunk" in log_path.read_bytes()[log_start:]:
            os.kill(runner.pid, signal.SIGSTOP)
            written = written_snapshot_state(bootstrap, topic, key)
            assert not written[2], f"the snapshot got too far to be killed: {written}"
            if written[0] >= at_least:
                assert written[0] + 1 < written[1], f"the snapshot got too far to be killed: {written}"
                return written
            os.kill(runner.pid, signal.SIGCONT)
        time.sleep(0.005)


class RowWriter(threading.Thread):
    """Adds 1 to `seq` of random rows, one or five rows a transaction, until halted."""

    def __init__(self, db, rows: int):
        super().__init__(daemon=True)
        self.db, self.rows = db, rows
        self.halt = threading.Event()
        self.final: dict[int, int] = {}
        self.transactions = 0

    def run(self):
        rng = random.Random(23)
        conn = self.db.connect()
        with conn.cursor() as cursor:
            while not self.halt.is_set():
                keys = rng.sample(range(1, self.rows + 1), 5 if self.transactions % 4 == 3 else 1)
                cursor.execute("BEGIN")
                for key in keys:
                    cursor.execute("UPDATE counters SET seq = seq + 1 WHERE id = %s", (key,))
                cursor.execute("COMMIT")
                for key in keys:
                    self.final[key] = self.final.get(key, 0) + 1
                self.transactions += 1
                time.sleep(0.004)
        conn.close()


def test_kill_minus_nine_inside_the_snapshot_under_load_gives_every_row_its_exact_chain(pg_db, stack, tmp_path,
                                                                                       unique_name):
    """Rows updated all along while the runner is kill -9'd twice inside its snapshot (each kill gated: frozen with
    SIGSTOP, it is killed once the offset records it wrote, committed or not, show the snapshot short of its last
    two chunks) and once as streaming starts.
    Each resumed snapshot reads in a new export, later than the stream's start: the stream must drop the updates
    those chunks hold. A read_committed consumer then sees, for every row, its read and then each later update
    once: seq r, r+1, …, its final value."""
    rows = 20_000
    bootstrap = stack.kafka_bootstrap
    name = "pgks" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE counters (id int PRIMARY KEY, seq int NOT NULL)")
    pg_db.execute("INSERT INTO counters SELECT g, 0 FROM generate_series(1, %s) g", (rows,))
    config_path = write_connector_json(pg_db, name, tmp_path, **{
        "snapshot.chunk.size": 100, "snapshot.max.threads": 1, "max.batch.size": 64,
        "table.include.list": "public.counters"})
    log_path = tmp_path / "runner.log"
    store = OffsetStore(bootstrap, f"{name}.offsets")
    key = json.dumps([name, {"server": name}], separators=(",", ":")).encode()
    topic = f"{name}.public.counters"

    writer = RowWriter(pg_db, rows)
    writer.start()
    runner = start_runner(config_path, bootstrap, log_path)
    try:
        done_before = log_start = 0
        for _ in range(2):
            written = freeze_inside_the_snapshot(runner, log_path, log_start, bootstrap, f"{name}.offsets", key,
                                                 done_before + 3)
            os.kill(runner.pid, signal.SIGKILL)
            runner.wait()
            done_before, log_start = written[0], log_path.stat().st_size
            runner = start_runner(config_path, bootstrap, log_path)
        deadline = time.monotonic() + 120
        while not snapshot_state(store, key)[2]:
            assert runner.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.05)
        os.kill(runner.pid, signal.SIGKILL)  # as the stream starts, with its filter in the offset
        runner.wait()
        runner = start_runner(config_path, bootstrap, log_path)
        time.sleep(1)
        writer.halt.set()
        writer.join(30)
        deadline = time.monotonic() + 120
        while True:  # until every row's last update is in Kafka (a repeat would come before it: commit order)
            assert runner.poll() is None, log_path.read_text()[-3000:]
            values = [json.loads(r.value) for r in read_topic(bootstrap, topic) if r.value]
            last = {v["after"]["id"]: v["after"]["seq"] for v in values}
            if all(last.get(k) == seq for k, seq in writer.final.items()) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        writer.halt.set()
        runner.send_signal(signal.SIGTERM)
        runner.wait(60)
    chains: dict[int, list[tuple[str, int]]] = {}
    for value in values:
        chains.setdefault(value["after"]["id"], []).append((value["op"], value["after"]["seq"]))
    assert sorted(chains) == list(range(1, rows + 1)), "a row never read"
    wrong = {k: chain for k, chain in chains.items()
             if chain[0][0] != "r" or [op for op, _ in chain[1:]] != ["u"] * (len(chain) - 1)
             or [seq for _, seq in chain] != list(range(chain[0][1], writer.final.get(k, 0) + 1))}
    assert not wrong, f"{len(wrong)} rows with a gap, a repeat or a second read, e.g. {list(wrong.items())[:3]}"
    assert log_path.read_text().count("resumed") >= 2
    assert writer.transactions > 500
