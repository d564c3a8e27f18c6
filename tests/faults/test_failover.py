"""Primary step-downs and a lost oplog position, in the middle of streaming."""

from __future__ import annotations

import json
import threading
import time

import pymongo
import pytest
from pymongo.errors import DuplicateKeyError, PyMongoError

from devstack.mongo import start_replica_set
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import RunningConnector, connector_config, values, wait_for_events

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _insert_all(collection, count: int, rate: float, stored: list | None = None) -> None:
    """Inserts _id 0..count-1 in order, retrying each through elections until it is stored exactly once; appends
    each stored _id to `stored`."""
    for i in range(count):
        while True:
            try:
                collection.insert_one({"_id": i})
                break
            except DuplicateKeyError:
                break  # the retried insert had been applied before the error reached us
            except PyMongoError:
                time.sleep(0.05)
        if stored is not None:
            stored.append(i)
        time.sleep(1 / rate)


def _wait_stored(stored: list, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(stored) < count:
        assert time.monotonic() < deadline, f"only {len(stored)} of {count} writes stored"
        time.sleep(0.01)


def test_step_down_mid_stream_loses_and_repeats_nothing(stack, mongo_rs, unique_name):
    if not hasattr(mongo_rs, "step_down"):
        pytest.skip("needs the emulator's fault hooks")
    name = "sd" + unique_name.replace("-", "")[-12:]
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=20_000)
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="never",
                              connect__backoff__initial__delay__ms=100, connect__backoff__max__delay__ms=500)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    stored: list[int] = []
    writer = threading.Thread(target=_insert_all, args=(client[name].docs, 300, 150, stored), daemon=True)
    writer.start()
    # each step-down after so many writes (not after a sleep): writes before, between and after them on any machine
    _wait_stored(stored, 90)
    mongo_rs.step_down(seconds=1)
    _wait_stored(stored, 180)
    mongo_rs.step_down(seconds=1)
    writer.join(60)
    assert len(stored) == 300
    records = wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.docs", 300, timeout=60)
    metrics = running.pipeline().metrics.snapshot()
    running.finish()
    ids = [json.loads(e["after"])["_id"] for e in values(records)]
    assert ids == list(range(300))
    assert metrics["NumberOfPrimaryElections"] >= 2
    assert metrics["Primary"] in mongo_rs.hosts


@pytest.fixture
def small_oplog_rs():
    handle = start_replica_set(members=1, oplog_max_entries=40, noop_interval=0)
    yield handle
    handle.stop()


def _stream_then_overflow(stack, uri, name):
    client = pymongo.MongoClient(uri)
    config = connector_config(name, uri, database__include__list=name, snapshot__mode="never")
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    client[name].docs.insert_one({"_id": -1})
    wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.docs", 1)
    running.finish()
    client[name].docs.insert_many([{"_id": i} for i in range(100)])  # pushes our position out of the oplog
    return client


def test_history_lost_fails_clearly_unless_when_needed(stack, small_oplog_rs, unique_name):
    name = "hl" + unique_name.replace("-", "")[-12:]
    _stream_then_overflow(stack, small_oplog_rs.uri, name)

    failing = RunningConnector(connector_config(name, small_oplog_rs.uri, database__include__list=name,
                                                snapshot__mode="initial"), stack.kafka_bootstrap).start()
    failing.thread.join(30)
    assert failing.outcome == {"rs0": "failed"}
    message = str(failing.runner.errors["rs0"])
    assert "no longer in the MongoDB oplog" in message and "when_needed" in message

    recovering = RunningConnector(connector_config(name, small_oplog_rs.uri, database__include__list=name,
                                                   snapshot__mode="when_needed"), stack.kafka_bootstrap).start()
    recovering.wait_streaming()
    records = wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.docs", 102)
    recovering.finish()
    events = values(read_topic(stack.kafka_bootstrap, f"{name}.{name}.docs"))
    snapshot_ids = sorted(json.loads(e["after"])["_id"] for e in events if e["op"] == "r")
    assert snapshot_ids == [-1, *range(100)]  # the re-snapshot recovers the database's full state
    assert len(records) >= 102
