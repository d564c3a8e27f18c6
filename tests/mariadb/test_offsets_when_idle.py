"""A run that captures no change still commits its binlog position: at once when it streams from "now"
(snapshot.mode=no_data), every few seconds while what it reads is not captured, and at a clean stop. A restart
(after a clean stop or a kill -9) then resumes there and gets every change written while it was down, where it used
to stream from a new "now" and skip them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from connectors.core import pipeline as core_pipeline
from tests.integration.kafka_reading import read_topic
from tests.mariadb.binlog_reading import binlog_status
from tests.mariadb.test_source import BOOTSTRAP, ROOT, InProcess, properties

pytestmark = pytest.mark.integration

ROWS = 300


def stored_offsets(props: dict) -> list[dict]:
    try:
        return [json.loads(r.value) for r in read_topic(BOOTSTRAP, props["offset.storage.topic"]) if r.value]
    except KeyError:
        return []


def wait_for(condition, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def write_rows(mariadb, database: str, first: int = 0) -> None:
    for start in range(first, first + ROWS, 100):
        values = ", ".join(f"({i}, {i})" for i in range(start, start + 100))
        mariadb.execute(f"INSERT INTO t VALUES {values}", database=database)  # noqa: S608 - literal numbers


def captured_ids(props: dict, database: str) -> list[int]:
    try:
        records = read_topic(BOOTSTRAP, f"{props['topic.prefix']}.{database}.t")
    except KeyError:
        return []
    return [json.loads(r.value)["after"]["id"] for r in records if r.value]


def wait_streaming(runner: InProcess) -> None:
    wait_for(lambda: any(p.metrics.phase == "streaming" for p in runner.runner.pipelines.values()), "streaming")


@pytest.fixture
def tables(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", "CREATE TABLE other (id INT PRIMARY KEY)",
                    database=mariadb_db)
    return mariadb_db


def no_data(mariadb, database: str) -> dict:
    return properties(mariadb, database, **{"snapshot.mode": "no_data", "table.include.list": f"{database}.t"})


def test_a_run_that_captured_nothing_resumes_after_a_clean_stop(mariadb, tables):
    props = no_data(mariadb, tables)
    runner = InProcess(props)
    try:
        wait_streaming(runner)
    finally:
        runner.close()
    write_rows(mariadb, tables)
    runner = InProcess(props)
    try:
        ids = wait_for(lambda: len(captured_ids(props, tables)) >= ROWS and captured_ids(props, tables),
                       f"the {ROWS} rows written while stopped", timeout=90)
    finally:
        runner.close()
    assert sorted(ids) == list(range(ROWS))


def test_the_position_reached_without_a_captured_change_is_committed_at_a_clean_stop(mariadb, tables, monkeypatch):
    monkeypatch.setattr(core_pipeline, "IDLE_COMMIT_SECONDS", 3600.0, raising=False)  # start and stop only
    props = no_data(mariadb, tables)
    runner = InProcess(props)
    try:
        wait_for(lambda: stored_offsets(props), "the start's commit")
        mariadb.execute("INSERT INTO other VALUES (1)", database=tables)
        end = binlog_status(mariadb).gtids
        pipeline = next(iter(runner.runner.pipelines.values()))
        wait_for(lambda: pipeline.latest is not None and pipeline.latest.binlog.gtids == end, "the reader's move")
        assert stored_offsets(props)[-1]["gtids"] != end
    finally:
        runner.close()
    assert stored_offsets(props)[-1]["gtids"] == end


def test_a_position_that_moves_without_a_captured_change_is_committed_while_running(mariadb, tables, monkeypatch):
    monkeypatch.setattr(core_pipeline, "IDLE_COMMIT_SECONDS", 1.0, raising=False)
    props = no_data(mariadb, tables)
    runner = InProcess(props)
    try:
        wait_for(lambda: stored_offsets(props), "the start's commit")
        mariadb.execute("INSERT INTO other VALUES (1)", database=tables)
        end = binlog_status(mariadb).gtids
        wait_for(lambda: stored_offsets(props)[-1]["gtids"] == end, "a commit of the moved position")
    finally:
        runner.close()


def test_a_run_killed_after_its_first_commit_resumes_there(mariadb, tables, tmp_path):
    props = no_data(mariadb, tables)
    path = tmp_path / "connector.json"
    path.write_text(json.dumps(props))
    log_path = tmp_path / "runner.log"

    def start():
        with open(log_path, "ab") as log:
            return subprocess.Popen([sys.executable, "-m", "connectors", "run", str(path), "--bootstrap-servers",
                                     BOOTSTRAP], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)

    process = start()
    try:
        wait_for(lambda: stored_offsets(props) or process.poll() is not None, "the first commit")
        assert process.poll() is None, log_path.read_text()[-3000:]
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    write_rows(mariadb, tables)
    process = start()
    try:
        ids = wait_for(lambda: len(captured_ids(props, tables)) >= ROWS and captured_ids(props, tables),
                       f"the {ROWS} rows written while killed", timeout=90)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    assert sorted(ids) == list(range(ROWS))
    assert "starting: resuming at" in log_path.read_text()
