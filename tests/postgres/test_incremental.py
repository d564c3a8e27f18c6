"""Incremental (ad-hoc) snapshots of PostgreSQL tables merged with the live stream (DBLog watermarks in Debezium's
signal table, read back through the slot): writes inside every window, a signal-table request, pause, resume and
stop by signal, a restart mid-snapshot. Real PostgreSQL, real Kafka."""

from __future__ import annotations

import json
import threading
import time

import psycopg
import pytest

from connectors import ConnectorError
from connectors.kafka import OffsetStore
from connectors.postgres.incremental import signal_table_problem
from tests.integration.kafka_reading import read_topic
from tests.postgres.test_source import Running, payloads, pg_config

pytestmark = [pytest.mark.integration]

SIGNALS = "public.dbz_signal"


def _name(unique_name: str) -> str:
    return "pi" + unique_name.replace("-", "")[-12:]


@pytest.fixture
def tables(pg_db):
    pg_db.execute("CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data text)")
    pg_db.execute("CREATE TABLE big (id int PRIMARY KEY, label text NOT NULL)")
    pg_db.execute("INSERT INTO big SELECT g, 'r' || g FROM generate_series(1, 1000) g")
    pg_db.execute("CREATE TABLE other AS SELECT * FROM big")
    pg_db.execute("ALTER TABLE other ADD PRIMARY KEY (id)")
    pg_db.execute("CREATE TABLE nokey (n int, label text)")
    pg_db.execute("INSERT INTO nokey SELECT g, 'n' || g FROM generate_series(1, 50) g")
    return pg_db


def _config(db, name, **extra):
    return pg_config(db, name, **{"snapshot.mode": "no_data", "signal.data.collection": SIGNALS,
                                  "incremental.snapshot.chunk.size": 100, **extra})


def _pipeline(running, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        pipeline = next(iter(running.runner.pipelines.values()), None)
        if pipeline is not None and pipeline.metrics.phase == "streaming":
            return pipeline
        assert time.monotonic() < deadline, "the pipeline never streamed"
        assert not running.runner.errors, running.runner.errors
        time.sleep(0.05)


def _wait(predicate, pipeline, what, timeout=120):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: {pipeline.snapshot_metrics.snapshot()}"
        assert pipeline.metrics.phase != "failed", pipeline.metrics.last_error
        assert any(t.name == f"pipeline-{pipeline.name}" for t in threading.enumerate()), "the pipeline ended"
        time.sleep(0.05)


def _done(pipeline, ns="public.big"):
    metrics = pipeline.snapshot_metrics.snapshot()
    return metrics["SnapshotKind"] == "incremental" and not metrics["SnapshotRunning"]


def inside_windows(pipeline, action) -> None:
    """Runs `action(chunk)` on the pipeline's thread while each window is open (its chunk read, its closing
    watermark not yet written): what it writes lands inside the window, on any machine speed."""
    metrics = pipeline.snapshot_metrics
    original = metrics.set_current_chunk

    def hooked(chunk):
        if chunk is not None:
            action(chunk)
        original(chunk)

    metrics.set_current_chunk = hooked


def _events(bootstrap, topic):
    try:
        return payloads(read_topic(bootstrap, topic, timeout=5))
    except KeyError:
        return []


def _check_against_table(db, values):
    """Every row read at most once, and each row's last event is its state in the table now."""
    reads: dict[int, int] = {}
    last: dict[int, dict | None] = {}
    for value in values:
        if value is None:
            continue
        row = value["after"] or value["before"]
        if value["op"] == "r":
            assert value["source"]["snapshot"] == "incremental"
            reads[row["id"]] = reads.get(row["id"], 0) + 1
        last[row["id"]] = value["after"]
    assert all(n == 1 for n in reads.values()), {k: n for k, n in reads.items() if n > 1}
    now = dict(db.execute("SELECT id, label FROM big"))
    assert set(now) <= set(last), sorted(set(now) - set(last))[:10]  # every row is in the topic
    stale = {k: (v and v["label"], now.get(k)) for k, v in last.items() if (v and v["label"]) != now.get(k)}
    assert not stale, stale  # a chunk row never overwrote a newer streamed change
    return reads


def test_incremental_snapshot_with_writes_inside_every_window_and_concurrently(tables, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = _name(unique_name)
    running = Running(_config(tables, name), bootstrap)
    window_writes: list[tuple[int, int]] = []
    stop_writer = threading.Event()

    def write_inside(chunk):
        if chunk["collection"] != "public.big":
            return
        low = int(json.loads(chunk["from"])[0])
        # updates one row of the chunk being read and deletes another, between its two watermarks
        tables.execute("UPDATE big SET label = 'window ' || id WHERE id = %s", (low + 1,))
        tables.execute("DELETE FROM big WHERE id = %s", (low + 2,))
        window_writes.append((low + 1, low + 2))

    touched: set[int] = set()  # the rows the concurrent writer changed: a chunk may drop them

    def writer():
        with psycopg.connect(tables.dsn, autocommit=True) as conn:
            i = 0
            while not stop_writer.is_set():
                i += 1
                touched.add((i * 37) % 1000 + 1)
                conn.execute("UPDATE big SET label = 'w' || %s WHERE id = %s", (i, (i * 37) % 1000 + 1))
                if i % 10 == 0:
                    touched.add((i * 53) % 1000 + 1)
                    conn.execute("DELETE FROM big WHERE id = %s", ((i * 53) % 1000 + 1,))
                    conn.execute("INSERT INTO big VALUES (%s, 'new') ON CONFLICT DO NOTHING", (1000 + i,))

    thread = threading.Thread(target=writer, daemon=True)
    try:
        pipeline = _pipeline(running)
        inside_windows(pipeline, write_inside)
        thread.start()
        pipeline.request_incremental_snapshot(["public.big"])
        _wait(lambda: _done(pipeline), pipeline, "snapshot done")
        metrics = pipeline.snapshot_metrics.snapshot()
        stop_writer.set()
        thread.join(10)
        tables.execute("INSERT INTO big VALUES (99999, 'the end')")
        topic = f"{name}.public.big"
        _wait(lambda: any(v and v["after"] and v["after"]["id"] == 99999 for v in _events(bootstrap, topic)),
              pipeline, "last insert")
    finally:
        stop_writer.set()
        running.stop()
    assert len(window_writes) >= 10
    values = _events(bootstrap, topic)
    reads = _check_against_table(tables, values)
    for updated, deleted in window_writes:
        assert updated not in reads and deleted not in reads  # changed inside its window: left to the stream
    # a row the snapshot did not read was changed while it ran: inside its chunk's window, or by the writer
    in_windows = {key for pair in window_writes for key in pair}
    unexplained = set(range(1, 1001)) - set(reads) - in_windows - touched
    assert not unexplained, sorted(unexplained)[:20]
    assert metrics["RowsDroppedByWatermarks"] >= 2 * len(window_writes) - 2
    # nothing of the signal table is an event
    assert not _events(bootstrap, f"{name}.public.dbz_signal")


def test_signal_table_request_pause_resume_stop_and_a_table_without_key(tables, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = _name(unique_name)
    running = Running(_config(tables, name), bootstrap)
    paused_at: list[dict] = []

    def signal(row_id, kind, data=None):
        tables.execute("INSERT INTO dbz_signal (id, type, data) VALUES (%s, %s, %s)", (row_id, kind, data))

    def in_window(chunk):
        if chunk["collection"] == "public.big" and chunk["chunk"] == 0 and not paused_at:
            paused_at.append(chunk)
            signal("p-1", "pause-snapshot")
        if chunk["collection"] == "public.other" and chunk["chunk"] == 1:
            signal("s-1", "stop-snapshot", json.dumps({"data-collections": ["public.other"], "type": "incremental"}))

    try:
        pipeline = _pipeline(running)
        inside_windows(pipeline, in_window)
        signal("x-1", "execute-snapshot", json.dumps({
            "data-collections": ["public.big", "public.oth.*", "public.nokey"], "type": "incremental",
            "additional-conditions": [{"data-collection": "public.big", "filter": "id <= 500"}]}))
        topic = f"{name}.public.big"
        # paused inside the first window: that window still closes (100 rows), and no other opens while paused
        _wait(lambda: pipeline.incremental.state is not None and pipeline.incremental.state.paused
              and pipeline.incremental.state.collections[0].chunk == 1, pipeline, "paused after one chunk")
        _wait(lambda: len([v for v in _events(bootstrap, topic) if v]) == 100, pipeline, "the first chunk")
        state = pipeline.incremental.state
        assert state.paused and state.collections[0].chunk == 1 and pipeline.snapshot_metrics.snapshot()[
            "SnapshotPaused"]
        signal("r-1", "resume-snapshot")
        _wait(lambda: _done(pipeline), pipeline, "snapshot done")
        completed = dict(pipeline.snapshot_metrics.snapshot())
        _wait(lambda: len(_events(bootstrap, f"{name}.public.nokey")) == 50, pipeline, "the table without key")
    finally:
        running.stop()
    big = [v for v in _events(bootstrap, topic) if v]
    assert sorted(v["after"]["id"] for v in big) == list(range(1, 501))  # the filter of additional-conditions
    other = [v for v in _events(bootstrap, f"{name}.public.other") if v]
    assert len(other) == 100, len(other)  # stopped inside its second window: only the first chunk emitted
    nokey = [v for v in _events(bootstrap, f"{name}.public.nokey") if v]
    assert sorted(v["after"]["n"] for v in nokey) == list(range(1, 51)) and {v["op"] for v in nokey} == {"r"}
    assert completed["SnapshotKind"] == "incremental" and not completed["SnapshotRunning"]
    assert not _events(bootstrap, f"{name}.public.dbz_signal")
    # our watermark rows are cleaned up as windows go (at most the last window's two remain)
    assert tables.execute("SELECT count(*) FROM dbz_signal WHERE type LIKE 'snapshot-window-%'")[0][0] <= 2


def test_a_restart_mid_snapshot_resumes_at_its_chunk_and_reads_each_row_once(tables, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = _name(unique_name)
    config = _config(tables, name)
    running = Running(config, bootstrap)

    def stop_in_fourth(chunk):
        if chunk["chunk"] == 3:
            tables.execute("UPDATE big SET label = 'during' WHERE id = %s", (int(json.loads(chunk["from"])[0]),))
            running.stop_event.set()

    pipeline = _pipeline(running)
    inside_windows(pipeline, stop_in_fourth)
    pipeline.request_incremental_snapshot(["public.big"])
    running.thread.join(120)
    assert not running.thread.is_alive() and not running.runner.errors
    stored = json.loads(OffsetStore(bootstrap, f"{name}.offsets").read_value(
        json.dumps([name, {"server": name}], separators=(",", ":")).encode())[0])
    progress = stored["incremental_snapshot"]
    assert progress["collections"][0]["ns"] == "public.big" and progress["collections"][0]["chunk"] in (3, 4)
    before = len([v for v in _events(bootstrap, f"{name}.public.big") if v and v["op"] == "r"])
    assert before == progress["collections"][0]["chunk"] * 100 - (1 if progress["collections"][0]["chunk"] == 4
                                                                  else 0)
    tables.execute("UPDATE big SET label = 'offline' WHERE id = 999")

    running = Running(config, bootstrap)
    try:
        pipeline = _pipeline(running)
        _wait(lambda: _done(pipeline), pipeline, "resumed snapshot done")
        tables.execute("INSERT INTO big VALUES (5000, 'the end')")
        _wait(lambda: any(v and v["after"] and v["after"]["id"] == 5000
                          for v in _events(bootstrap, f"{name}.public.big")), pipeline, "last insert")
    finally:
        running.stop()
    reads = _check_against_table(tables, _events(bootstrap, f"{name}.public.big"))
    assert len(reads) in (999, 1000)  # the row updated inside the interrupted window may be left to the stream


def test_signal_table_problems_are_named(pg_db, stack, unique_name):
    config = _config(pg_db, _name(unique_name), **{"publication.autocreate.mode": "disabled"})
    pg_db.execute("CREATE TABLE t (id int PRIMARY KEY)")
    pg_db.execute("CREATE PUBLICATION dbz_publication FOR TABLE t")
    with psycopg.connect(pg_db.dsn, autocommit=True) as conn, conn.cursor() as cursor:
        assert "public.dbz_signal does not exist" in signal_table_problem(cursor, config)
        pg_db.execute("CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, kind text)")
        assert "lacks column(s) type, data" in signal_table_problem(cursor, config)
        pg_db.execute("ALTER TABLE dbz_signal RENAME COLUMN kind TO type")
        pg_db.execute("ALTER TABLE dbz_signal ADD COLUMN data text")
        assert "is not in publication dbz_publication" in signal_table_problem(cursor, config)
        pg_db.execute("ALTER PUBLICATION dbz_publication ADD TABLE dbz_signal")
        assert signal_table_problem(cursor, config) is None
        no_signal = pg_config(pg_db, "x")
        assert "need signal.data.collection" in signal_table_problem(cursor, no_signal)


def test_a_connector_whose_signal_table_is_missing_fails_at_start(pg_db, stack, unique_name):
    pg_db.execute("CREATE TABLE t (id int PRIMARY KEY)")
    running = Running(_config(pg_db, _name(unique_name)), stack.kafka_bootstrap)
    running.thread.join(60)
    errors = running.runner.errors
    assert running.outcomes and set(running.outcomes.values()) == {"failed"}
    assert isinstance(next(iter(errors.values())), ConnectorError)
    assert "public.dbz_signal does not exist" in str(next(iter(errors.values())))


def test_kill_minus_nine_mid_snapshot_under_writes_reads_each_row_once(tables, stack, unique_name, tmp_path):
    """`python -m connectors run` kill -9'd three times while the incremental snapshot runs, with a writer updating
    rows 1-500 all along: every row read at most once, each row's last event is its state in the table, and every
    row the writer never touched is read. Each kill is gated: the test holds an ACCESS EXCLUSIVE lock on the table
    and kills the runner once the server shows the runner's session (not the writer's) waiting for that lock, i.e.
    inside a chunk's window (its low watermark written, its rows not yet read). The snapshot goes on only while the
    lock is released for a moment, so it cannot run to its end between two looks (it did on a fast run)."""
    import os
    import signal as signals
    import subprocess
    import sys

    bootstrap = stack.kafka_bootstrap
    name = _name(unique_name)
    tables.execute("INSERT INTO big SELECT g, 'r' || g FROM generate_series(1001, 4000) g")
    dsn = psycopg.conninfo.conninfo_to_dict(tables.dsn)
    config = {"name": name, "connector.class": "postgres", "topic.prefix": name, "database.hostname": dsn["host"],
              "database.port": dsn["port"], "database.user": dsn["user"], "database.password": dsn.get("password"),
              "database.dbname": tables.name, "slot.name": tables.name, "publication.autocreate.mode": "filtered",
              "offset.storage.topic": f"{name}.offsets", "poll.interval.ms": 100, "snapshot.mode": "no_data",
              "signal.data.collection": SIGNALS, "incremental.snapshot.chunk.size": 20}  # 200 chunks
    config_path = tmp_path / "pg.json"
    config_path.write_text(json.dumps(config))
    log_path = tmp_path / "runner.log"

    def start():
        log = open(log_path, "ab")  # noqa: SIM115 - owned by the child
        return subprocess.Popen([sys.executable, "-m", "connectors", "run", str(config_path), "--bootstrap-servers",
                                 bootstrap], stdout=log, stderr=subprocess.STDOUT)

    store = OffsetStore(bootstrap, f"{name}.offsets")
    key = json.dumps([name, {"server": name}], separators=(",", ":")).encode()

    def stored() -> dict | None:
        value = store.read_value(key)[0]
        return json.loads(value) if value else None

    def chunk_committed(runner) -> int | None:
        """The chunk of the stored progress; None once the snapshot is over. The record, once written, is always
        there: an empty answer is the offsets topic not answering yet, asked again."""
        value = wait(stored, "the stored offset", runner)
        progress = value.get("incremental_snapshot")
        return progress["collections"][0]["chunk"] if progress and progress["collections"] else None

    def wait(predicate, what, runner, timeout=120):
        deadline = time.monotonic() + timeout
        while not (found := predicate()):
            assert runner.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, f"{what}: {log_path.read_text()[-3000:]}"
            time.sleep(0.1)
        return found

    writer_sessions: list[int] = []

    def runner_waiting_for(lock_holder) -> bool:
        return tables.execute("SELECT count(*) FROM pg_locks WHERE relation = 'big'::regclass AND NOT granted "
                              "AND pid <> ALL(%s)", ([lock_holder, *writer_sessions],))[0][0] > 0

    def kill_inside_a_window(runner, after: int) -> int:
        """Kills the runner inside a chunk's window once it committed a chunk past `after` + 3; returns that chunk.
        Between looks the lock is released for a moment: a few chunks go through."""
        while True:
            with psycopg.connect(tables.dsn) as locker:
                locker.execute("LOCK TABLE big IN ACCESS EXCLUSIVE MODE")
                holder = locker.execute("SELECT pg_backend_pid()").fetchone()[0]
                wait(lambda holder=holder: runner_waiting_for(holder), "the runner waiting for the table", runner)
                committed = chunk_committed(runner)  # the runner is held in the next chunk's window
                # None: no chunk committed yet (the first look), or the snapshot is over (the gate failed)
                assert committed is not None or after < 0, f"the snapshot ended before the kill after chunk {after}"
                assert committed is None or committed < 199, f"no chunk left to kill in: {committed}"
                if committed is not None and committed > after + 3:
                    os.kill(runner.pid, signals.SIGKILL)
                    runner.wait()
                    return committed
            time.sleep(0.05)

    stop_writer = threading.Event()

    def writer():
        with psycopg.connect(tables.dsn, autocommit=True) as conn:
            writer_sessions.append(conn.info.backend_pid)
            i = 0
            while not stop_writer.is_set():
                i += 1
                conn.execute("UPDATE big SET label = 'k' || %s WHERE id = %s", (i, (i * 37) % 500 + 1))
                time.sleep(0.002)

    runner = start()
    thread = threading.Thread(target=writer, daemon=True)
    killed_at: list[int] = []
    try:
        wait(stored, "a first offset", runner)
        thread.start()
        tables.execute("INSERT INTO dbz_signal (id, type, data) VALUES ('k-1', 'execute-snapshot', %s)",
                       (json.dumps({"data-collections": ["public.big"]}),))
        wait(lambda: writer_sessions, "the writer's session", runner)
        for _ in range(3):
            killed_at.append(kill_inside_a_window(runner, killed_at[-1] if killed_at else -1))
            runner = start()
        wait(lambda: (value := stored()) is not None and value.get("incremental_snapshot") is None
             and "lsn_proc" in value, "the snapshot done", runner, timeout=300)
        stop_writer.set()
        thread.join(10)
        tables.execute("INSERT INTO big VALUES (77777, 'the end')")
        topic = f"{name}.public.big"
        wait(lambda: any(v and v["after"] and v["after"]["id"] == 77777 for v in _events(bootstrap, topic)),
             "last insert", runner)
    finally:
        stop_writer.set()
        runner.send_signal(signals.SIGTERM)
        runner.wait(60)
    reads = _check_against_table(tables, _events(bootstrap, topic))
    untouched = set(range(501, 4001))  # the writer updates rows 1-500 only: a row it touches in its window is
    assert untouched <= set(reads), sorted(untouched - set(reads))[:10]  # left to the stream, the others are read


def test_the_signal_table_is_checked_before_saving(pg_db, stack, unique_name):
    from connectors.postgres.preflight import problems

    def signal_findings(**extra):
        found = problems(_config(pg_db, _name(unique_name), **extra))
        return [message for prop, message in found if prop == "signal.data.collection"]

    pg_db.execute("CREATE TABLE t (id int PRIMARY KEY)")
    assert "public.dbz_signal does not exist; create it" in " ".join(signal_findings())
    pg_db.execute("CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL)")
    assert "lacks column(s) data" in " ".join(signal_findings())
    pg_db.execute("ALTER TABLE dbz_signal ADD COLUMN data text")
    assert signal_findings() == []  # filtered: the connector publishes it when it starts
    pg_db.execute("CREATE PUBLICATION dbz_publication FOR TABLE t")
    assert "is not in publication dbz_publication" in " ".join(
        signal_findings(**{"publication.autocreate.mode": "disabled"}))
    pg_db.execute("ALTER PUBLICATION dbz_publication ADD TABLE dbz_signal")
    assert signal_findings(**{"publication.autocreate.mode": "disabled"}) == []
