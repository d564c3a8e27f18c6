"""Exactly once across crashes: the runner is kill -9'd at random points under a steady write load, restarted,
and a read_committed consumer must see every change exactly once and in order per document."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pymongo
import pytest

from connectors.kafka import OffsetStore
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import topic_exists

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOCUMENTS = 30


def _start_runner(config_path, bootstrap, log_path) -> subprocess.Popen:
    log = open(log_path, "ab")  # noqa: SIM115 - owned by the child
    return subprocess.Popen([sys.executable, "-m", "connectors", "run", str(config_path),
                             "--bootstrap-servers", bootstrap], stdout=log, stderr=subprocess.STDOUT,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def _wait_offset(store: OffsetStore, name: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(r.resume_token for r in store.load(name).values()):
            return
        time.sleep(0.2)
    raise AssertionError("the runner never committed an offset")


class Writer(threading.Thread):
    """Inserts DOCUMENTS documents with seq 0, then increments a random document's seq, at a steady rate: at least
    `writes` writes, and on until halted (so the kills always happen under load, whatever the machine's speed)."""

    def __init__(self, collection, writes: int, rate: float):
        super().__init__(daemon=True)
        self.collection, self.writes, self.rate = collection, writes, rate
        self.final: dict[int, int] = {}
        self.halt = threading.Event()
        self.done = 0

    def run(self):
        rng = random.Random(7)
        i = 0
        while i < self.writes or not self.halt.is_set():
            if i < DOCUMENTS:
                self.collection.insert_one({"_id": i, "seq": 0})
                self.final[i] = 0
            else:
                doc = rng.randrange(DOCUMENTS)
                self.collection.update_one({"_id": doc}, {"$inc": {"seq": 1}})
                self.final[doc] += 1
            i += 1
            self.done = i
            time.sleep(1 / self.rate)


def test_kill_minus_nine_repeatedly_gives_exactly_once(stack, mongo_rs, tmp_path, unique_name):
    name = "k9" + unique_name.replace("-", "")[-12:]
    config = {
        "name": name, "topic.prefix": name, "mongodb.connection.string": mongo_rs.uri,
        "database.include.list": name, "offset.storage.topic": f"{name}.offsets",
        "poll.interval.ms": 50, "max.batch.size": 64,
    }
    config_path = tmp_path / "connector.json"
    config_path.write_text(json.dumps(config))
    log_path = tmp_path / "runner.log"
    client = pymongo.MongoClient(mongo_rs.uri)
    store = OffsetStore(stack.kafka_bootstrap, f"{name}.offsets")

    runner = _start_runner(config_path, stack.kafka_bootstrap, log_path)
    _wait_offset(store, name)
    writer = Writer(client[name]["docs"], writes=900, rate=150)
    writer.start()
    rng = random.Random(11)
    for _ in range(5):
        time.sleep(rng.uniform(0.4, 1.5))
        assert writer.is_alive()
        before = writer.done
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        runner = _start_runner(config_path, stack.kafka_bootstrap, log_path)
        while writer.done < before + 20:  # writes go on between the kills, however slow the machine
            assert writer.is_alive()
            time.sleep(0.05)
    writer.halt.set()
    writer.join()

    topic = f"{name}.{name}.docs"
    expected_events = DOCUMENTS + sum(writer.final.values())
    deadline = time.monotonic() + 60
    records = []
    while time.monotonic() < deadline:
        if topic_exists(stack.kafka_bootstrap, topic):
            records = [r for r in read_topic(stack.kafka_bootstrap, topic) if r.value]
            if len(records) >= expected_events:
                break
        time.sleep(0.5)
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(30) == 0, log_path.read_text()[-3000:]

    seen: dict[int, list[int]] = {}
    for record in records:
        doc_id = int(json.loads(record.key)["id"])
        event = json.loads(record.value)
        if event["op"] == "c":
            seq = json.loads(event["after"])["seq"]
        else:
            assert event["op"] == "u", event
            seq = json.loads(event["updateDescription"]["updatedFields"])["seq"]
        seen.setdefault(doc_id, []).append(seq)
    assert len(records) == expected_events, (len(records), expected_events)
    for doc, final in writer.final.items():
        assert seen[doc] == list(range(final + 1)), f"document {doc}: {seen[doc]}"
