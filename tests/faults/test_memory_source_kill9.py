"""The core with a source that is not MongoDB (tests/faults/memory_source.py): snapshot, stream, kill -9 inside a
snapshot transaction and inside a streaming transaction, restarts, and a read_committed consumer sees every row
and every change exactly once, each row's changes in order."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from connectors.kafka import OffsetStore
from connectors.kafka.sink import lane_transactional_ids
from tests.faults.memory_source import PARTITION, ROWS, row_of
from tests.integration.kafka_reading import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


class Connector:
    def __init__(self, tmp_path: Path, name: str, bootstrap: str):
        self.name, self.bootstrap, self.tmp = name, bootstrap, tmp_path
        self.head_file = tmp_path / "head"
        self.head_file.write_text("0")
        self.config_path = tmp_path / "connector.json"
        self.config_path.write_text(json.dumps({"name": name, "head_file": str(self.head_file),
                                                "offset_storage_topic": f"{name}.offsets"}))
        self.log_path = tmp_path / "runner.log"
        self.mark = tmp_path / "held"
        self.offsets = OffsetStore(bootstrap, f"{name}.offsets")
        self.process: subprocess.Popen | None = None

    def started(self) -> int:
        return self.log().count(f"pipeline {self.name}/{PARTITION} starting")

    def wait_started(self, count: int, timeout: float = 60) -> None:
        """Until the `count`-th pipeline start is logged (the process has its signal handlers by then)."""
        deadline = time.monotonic() + timeout
        while self.started() < count:
            assert self.process.poll() is None, self.log()[-4000:]
            assert time.monotonic() < deadline, self.log()[-4000:]
            time.sleep(0.05)

    def start(self, hold: int = 0) -> None:
        self.mark.unlink(missing_ok=True)
        env = {**os.environ, "CDC_TEST_HOLD_COMMIT": str(hold), "CDC_TEST_HOLD_MARK": str(self.mark)}
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.faults.memory_source", str(self.config_path), self.bootstrap],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)

    def head(self, seq: int) -> None:
        self.head_file.write_text(str(seq))

    def kill_when_held(self, timeout: float = 60) -> None:
        """Waits until the process holds a transaction open (its messages produced), then kills it with -9."""
        deadline = time.monotonic() + timeout
        while not self.mark.exists():
            assert self.process.poll() is None, self.log()[-4000:]
            assert time.monotonic() < deadline, "the held transaction never came"
            time.sleep(0.05)
        self.kill()
        # Fence the dead process's transactional ids, as its successor would: its open transaction is aborted now
        # (not after transaction.timeout.ms), so read_committed readers of the offsets can read past it.
        for lane_id in lane_transactional_ids(self.name, PARTITION):
            producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": lane_id})
            producer.init_transactions(30)
            producer.flush(5)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stored(self) -> dict | None:
        key = json.dumps([self.name, {"partition": PARTITION}], separators=(",", ":")).encode()
        value, _ = self.offsets.read_value(key)
        return json.loads(value) if value is not None else None

    def wait_committed(self, seq: int, timeout: float = 90) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, self.log()[-4000:]
            stored = self.stored()
            if stored is not None and stored.get("seq") == seq:
                return stored
            assert time.monotonic() < deadline, (stored, self.log()[-4000:])
            time.sleep(0.2)

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""


def test_a_source_of_the_core_is_exactly_once_across_kill_minus_nine(stack, tmp_path, unique_name):
    name = "mem" + unique_name.replace("-", "")[-12:]
    connector = Connector(tmp_path, name, stack.kafka_bootstrap)

    # 1. kill -9 inside the snapshot: transaction 1 commits the plan, 2 the first chunk (with any chunk that finished
    # while 1 committed: the core commits those together), 3 is held open
    connector.start(hold=3)
    connector.kill_when_held()
    progress = connector.stored()["snapshot"]
    done = progress["collections"][0]["done"]
    assert 1 <= done.count("1") < len(done) and not progress["completed"], progress

    # 2. restart: the snapshot resumes, completes, then streams the first changes
    connector.head(300)
    connector.start()
    connector.wait_committed(300)
    connector.kill()

    # 3. kill -9 inside a streaming transaction: the first batch after more changes arrive is held open
    connector.start(hold=1)
    connector.head(600)
    connector.kill_when_held()
    assert connector.stored()["seq"] == 300

    # 4. restart, more changes, a kill -9 wherever the stream is then (possibly done), restart, SIGTERM
    connector.start()
    connector.wait_committed(600)
    connector.head(900)
    while (connector.stored() or {}).get("seq", 0) <= 600:
        assert connector.process.poll() is None, connector.log()[-4000:]
        time.sleep(0.05)
    connector.kill()
    starts = connector.started()
    connector.start()
    connector.wait_started(starts + 1)
    connector.wait_committed(900)
    connector.process.send_signal(signal.SIGTERM)
    assert connector.process.wait(30) == 0, connector.log()[-4000:]

    committed = [json.loads(r.value) for r in read_topic(stack.kafka_bootstrap, f"{name}.t")]
    everything = read_topic(stack.kafka_bootstrap, f"{name}.t", isolation="read_uncommitted")
    reads = [e["after"]["id"] for e in committed if e["op"] == "r"]
    assert sorted(reads) == list(range(ROWS))  # every row once
    assert [e for e in committed if e["op"] == "r"][-1]["source"]["snapshot"] == "last"
    changes = [e["source"]["seq"] for e in committed if e["op"] == "u"]
    assert sorted(changes) == list(range(1, 901))  # every change once
    by_row: dict[int, list[int]] = {}
    for event in committed:
        if event["op"] == "u":
            assert event["after"]["id"] == row_of(event["source"]["seq"])
            by_row.setdefault(event["after"]["id"], []).append(event["source"]["seq"])
    assert all(seqs == sorted(seqs) for seqs in by_row.values())
    # the kills landed inside transactions: their aborted records are in the log, and no reader saw them
    assert len(everything) > len(committed)
