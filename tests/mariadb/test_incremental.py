"""Incremental (ad-hoc) snapshots of MariaDB tables merged with the binlog (DBLog watermarks in Debezium's signal
table): writes inside every window and concurrently, a signal-table request, pause, resume and stop by signal, a
restart mid-snapshot, the signal table's problems. Real MariaDB, real Kafka."""

from __future__ import annotations

import json
import threading
import time

import pytest

from connectors import ConnectorError
from connectors.kafka import OffsetStore
from connectors.mysql.connection import connect
from connectors.mysql.incremental import signal_table_problem
from connectors.sources import engine_config
from tests.integration.kafka_reading import read_topic
from tests.mariadb.test_source import BOOTSTRAP, InProcess, properties

pytestmark = pytest.mark.integration


@pytest.fixture
def tables(mariadb, mariadb_db):
    values = ", ".join(f"({i}, 'r{i}')" for i in range(1, 1001))
    mariadb.execute(
        "CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT)",
        "CREATE TABLE big (id INT PRIMARY KEY, label VARCHAR(40) NOT NULL)",
        f"INSERT INTO big VALUES {values}",  # noqa: S608 - literal numbers
        "CREATE TABLE other AS SELECT * FROM big", "ALTER TABLE other ADD PRIMARY KEY (id)",
        "CREATE TABLE nokey (n INT, label VARCHAR(20))",
        "INSERT INTO nokey SELECT id, label FROM big WHERE id <= 50",
        f"GRANT INSERT, DELETE ON `{mariadb_db}`.`dbz_signal` TO '{mariadb.cdc.user}'@'%'",
        database=mariadb_db)
    return mariadb_db


def _props(mariadb, database, **extra):
    return properties(mariadb, database, **{"snapshot.mode": "no_data",
                                            "signal.data.collection": f"{database}.dbz_signal",
                                            "incremental.snapshot.chunk.size": "100", **extra})


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
        assert any(t.name == f"pipeline-{pipeline.name}" for t in threading.enumerate()), "the pipeline ended"
        time.sleep(0.05)


def _done(pipeline):
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


def _events(topic):
    try:
        return [None if r.value is None else json.loads(r.value) for r in read_topic(BOOTSTRAP, topic, timeout=5)]
    except KeyError:
        return []


def _check_against_table(mariadb, database, values):
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
    now = dict(mariadb.execute("SELECT id, label FROM big", database=database))
    assert set(now) <= set(last), sorted(set(now) - set(last))[:10]  # every row is in the topic
    stale = {k: (v and v["label"], now.get(k)) for k, v in last.items() if (v and v["label"]) != now.get(k)}
    assert not stale, stale  # a chunk row never overwrote a newer streamed change
    return reads


def test_incremental_snapshot_with_writes_inside_every_window_and_concurrently(mariadb, tables):
    props = _props(mariadb, tables)
    running = InProcess(props)
    window_writes: list[tuple[int, int]] = []
    stop_writer = threading.Event()

    def write_inside(chunk):
        if chunk["collection"] != f"{tables}.big":
            return
        low = int(json.loads(chunk["from"])[0])
        mariadb.execute(f"UPDATE big SET label = 'window {low + 1}' WHERE id = {low + 1}",  # noqa: S608
                        f"DELETE FROM big WHERE id = {low + 2}", database=tables)  # noqa: S608
        window_writes.append((low + 1, low + 2))

    touched: set[int] = set()  # the rows the concurrent writer changed: a chunk may drop them

    def writer():
        conn = connect(mariadb.admin.with_database(tables))
        try:
            i = 0
            with conn.cursor() as cursor:
                while not stop_writer.is_set():
                    i += 1
                    touched.add((i * 37) % 1000 + 1)
                    cursor.execute("UPDATE big SET label = %s WHERE id = %s", (f"w{i}", (i * 37) % 1000 + 1))
                    if i % 10 == 0:
                        touched.add((i * 53) % 1000 + 1)
                        cursor.execute("DELETE FROM big WHERE id = %s", ((i * 53) % 1000 + 1,))
                        cursor.execute("INSERT IGNORE INTO big VALUES (%s, 'new')", (1000 + i,))
        finally:
            conn.close()

    thread = threading.Thread(target=writer, daemon=True)
    topic = f"{props['topic.prefix']}.{tables}.big"
    try:
        pipeline = _pipeline(running)
        inside_windows(pipeline, write_inside)
        thread.start()
        pipeline.request_incremental_snapshot([f"{tables}.big"])
        _wait(lambda: _done(pipeline), pipeline, "snapshot done")
        metrics = pipeline.snapshot_metrics.snapshot()
        stop_writer.set()
        thread.join(10)
        mariadb.execute("INSERT INTO big VALUES (99999, 'the end')", database=tables)
        _wait(lambda: any(v and v["after"] and v["after"]["id"] == 99999 for v in _events(topic)), pipeline,
              "last insert")
    finally:
        stop_writer.set()
        running.close()
    assert len(window_writes) >= 10
    reads = _check_against_table(mariadb, tables, _events(topic))
    for updated, deleted in window_writes:
        assert updated not in reads and deleted not in reads  # changed inside its window: left to the stream
    # a row the snapshot did not read was changed while it ran: inside its chunk's window, or by the writer
    in_windows = {key for pair in window_writes for key in pair}
    unexplained = set(range(1, 1001)) - set(reads) - in_windows - touched
    assert not unexplained, sorted(unexplained)[:20]
    assert metrics["RowsDroppedByWatermarks"] >= 2 * len(window_writes) - 2
    assert not _events(f"{props['topic.prefix']}.{tables}.dbz_signal")


def test_signal_table_request_pause_resume_stop_and_a_table_without_key(mariadb, tables):
    props = _props(mariadb, tables)
    running = InProcess(props)
    paused_at: list[dict] = []

    def signal(row_id, kind, data=None):
        mariadb.execute(f"INSERT INTO dbz_signal (id, type, data) VALUES ('{row_id}', '{kind}', "  # noqa: S608
                        + ("NULL" if data is None else "'" + data.replace("\\", "\\\\").replace("'", "''") + "'")
                        + ")", database=tables)

    def in_window(chunk):
        if chunk["collection"] == f"{tables}.big" and chunk["chunk"] == 0 and not paused_at:
            paused_at.append(chunk)
            signal("p-1", "pause-snapshot")
        if chunk["collection"] == f"{tables}.other" and chunk["chunk"] == 1:
            signal("s-1", "stop-snapshot", json.dumps({"data-collections": [f"{tables}.other"]}))

    prefix = props["topic.prefix"]
    try:
        pipeline = _pipeline(running)
        inside_windows(pipeline, in_window)
        signal("x-1", "execute-snapshot", json.dumps({
            "data-collections": [f"{tables}.big", f"{tables}\\.oth.*", f"{tables}.nokey"], "type": "incremental",
            "additional-conditions": [{"data-collection": f"{tables}.big", "filter": "id <= 500"}]}))
        topic = f"{prefix}.{tables}.big"
        _wait(lambda: pipeline.incremental.state is not None and pipeline.incremental.state.paused
              and pipeline.incremental.state.collections[0].chunk == 1, pipeline, "paused after one chunk")
        _wait(lambda: len([v for v in _events(topic) if v]) == 100, pipeline, "the first chunk")
        state = pipeline.incremental.state
        assert state.paused and state.collections[0].chunk == 1 and pipeline.snapshot_metrics.snapshot()[
            "SnapshotPaused"]
        signal("r-1", "resume-snapshot")
        _wait(lambda: _done(pipeline), pipeline, "snapshot done")
        _wait(lambda: len(_events(f"{prefix}.{tables}.nokey")) == 50, pipeline, "the table without key")
    finally:
        running.close()
    big = [v for v in _events(topic) if v]
    assert sorted(v["after"]["id"] for v in big) == list(range(1, 501))  # the additional condition
    other = [v for v in _events(f"{prefix}.{tables}.other") if v]
    assert len(other) == 100, len(other)  # stopped inside its second window: only the first chunk emitted
    nokey = [v for v in _events(f"{prefix}.{tables}.nokey") if v]
    assert sorted(v["after"]["n"] for v in nokey) == list(range(1, 51)) and {v["op"] for v in nokey} == {"r"}
    assert not _events(f"{prefix}.{tables}.dbz_signal")
    left = mariadb.execute("SELECT COUNT(*) FROM dbz_signal WHERE type LIKE 'snapshot-window-%'", database=tables)
    assert left[0][0] <= 2  # earlier windows' watermark rows are deleted as new windows open


def test_a_restart_mid_snapshot_resumes_at_its_chunk_and_reads_each_row_once(mariadb, tables):
    props = _props(mariadb, tables)
    running = InProcess(props)

    def stop_in_fourth(chunk):
        if chunk["chunk"] == 3:
            low = int(json.loads(chunk["from"])[0])
            mariadb.execute(f"UPDATE big SET label = 'during' WHERE id = {low}", database=tables)  # noqa: S608
            running.stop.set()

    pipeline = _pipeline(running)
    inside_windows(pipeline, stop_in_fourth)
    pipeline.request_incremental_snapshot([f"{tables}.big"])
    running.thread.join(120)
    assert not running.thread.is_alive() and not running.runner.errors
    name, prefix = props["name"], props["topic.prefix"]
    stored = json.loads(OffsetStore(BOOTSTRAP, props["offset.storage.topic"]).read_value(
        json.dumps([name, {"server": prefix}], separators=(",", ":")).encode())[0])
    progress = stored["incremental_snapshot"]["collections"][0]
    assert progress["ns"] == f"{tables}.big" and progress["chunk"] in (3, 4), progress
    topic = f"{prefix}.{tables}.big"
    before = len([v for v in _events(topic) if v and v["op"] == "r"])
    assert before == progress["chunk"] * 100 - (1 if progress["chunk"] == 4 else 0)
    mariadb.execute("UPDATE big SET label = 'offline' WHERE id = 999", database=tables)

    running = InProcess(props)
    try:
        pipeline = _pipeline(running)
        _wait(lambda: _done(pipeline), pipeline, "resumed snapshot done")
        mariadb.execute("INSERT INTO big VALUES (5000, 'the end')", database=tables)
        _wait(lambda: any(v and v["after"] and v["after"]["id"] == 5000 for v in _events(topic)), pipeline,
              "last insert")
    finally:
        running.close()
    reads = _check_against_table(mariadb, tables, _events(topic))
    assert len(reads) in (999, 1000)  # the row updated inside the interrupted window may be left to the stream


def test_signal_table_problems_are_named(mariadb, mariadb_db):
    _, config = engine_config(_props(mariadb, mariadb_db))
    conn = connect(mariadb.cdc)
    try:
        with conn.cursor() as cursor:
            assert f"{mariadb_db}.dbz_signal does not exist" in signal_table_problem(cursor, config)
            mariadb.execute("CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, kind TEXT)", database=mariadb_db)
            assert "lacks column(s) type, data" in signal_table_problem(cursor, config)
            mariadb.execute("ALTER TABLE dbz_signal CHANGE kind type VARCHAR(32)",
                            "ALTER TABLE dbz_signal ADD COLUMN data TEXT", database=mariadb_db)
            assert signal_table_problem(cursor, config) is None
    finally:
        conn.close()


def test_a_connector_whose_signal_table_is_missing_fails_at_start_and_one_that_may_not_write_it_says_so(
        mariadb, mariadb_db):
    running = InProcess(_props(mariadb, mariadb_db))
    running.thread.join(60)
    errors = list(running.runner.errors.values())
    assert len(errors) == 1 and isinstance(errors[0], ConnectorError), errors
    assert f"{mariadb_db}.dbz_signal does not exist" in str(errors[0])

    mariadb.execute("CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32), data TEXT)",
                    "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)", database=mariadb_db)
    running = InProcess(_props(mariadb, mariadb_db))
    pipeline = _pipeline(running)
    pipeline.request_incremental_snapshot([f"{mariadb_db}.t"])
    running.thread.join(60)
    errors = list(running.runner.errors.values())
    assert len(errors) == 1 and "may not" in str(errors[0]) and "GRANT INSERT, DELETE" in str(errors[0]), errors


def test_the_signal_table_is_checked_before_saving(mariadb, mariadb_db):
    from connectors.sources import preflight

    def signal_findings():
        found = preflight(_props(mariadb, mariadb_db), 5000)
        return [p.message for p in found if p.property == "signal.data.collection"]

    assert f"{mariadb_db}.dbz_signal does not exist" in " ".join(signal_findings())
    mariadb.execute("CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32))", database=mariadb_db)
    assert "lacks column(s) data" in " ".join(signal_findings())
    mariadb.execute("ALTER TABLE dbz_signal ADD COLUMN data TEXT", database=mariadb_db)
    assert signal_findings() == []
