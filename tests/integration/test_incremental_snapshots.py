"""Incremental (ad-hoc) snapshots merged with the live stream: DBLog watermarks under heavy updates, Debezium
signals through the signal collection, progress across restarts. Real Kafka, the emulator."""

from __future__ import annotations

import json
import random
import threading
import time

import pymongo
import pytest

from connectors import ConnectorError
from connectors.kafka import OffsetStore
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import RunningConnector, connector_config, values, wait_for_events
from tests.integration.topic_state import wait_for_state

pytestmark = pytest.mark.integration


@pytest.fixture
def client(mongo_rs):
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=10_000)
    yield client
    client.close()


def _name(unique_name: str) -> str:
    return "i" + unique_name.replace("-", "")[-12:]


def _config(name, uri, **props):
    base = {"database__include__list": name, "signal__data__collection": f"{name}.signals",
            "snapshot__mode": "no_data", "incremental__snapshot__chunk__size": 100}
    return connector_config(name, uri, **{**base, **props})


def _wait_snapshot_done(pipeline, timeout=60, after: dict | None = None) -> dict:
    """Metrics once an incremental snapshot (another one than `after`'s) has finished."""
    deadline = time.monotonic() + timeout
    while True:
        metrics = pipeline.snapshot_metrics.snapshot()
        newer = after is None or metrics["SnapshotId"] != after["SnapshotId"]
        if metrics["SnapshotKind"] == "incremental" and not metrics["SnapshotRunning"] and newer:
            return metrics
        assert time.monotonic() < deadline, metrics
        assert pipeline.metrics.phase != "failed", pipeline.metrics.last_error
        time.sleep(0.05)


def inside_windows(pipeline, action) -> None:
    """Runs `action(chunk)` on the pipeline's thread while each incremental chunk's watermark window is open (the
    chunk is read, its closing watermark not yet written): what it writes lands inside the window, and what it
    waits for holds the snapshot at that chunk, on any machine speed."""
    metrics = pipeline.snapshot_metrics
    original = metrics.set_current_chunk

    def hooked(chunk):
        if chunk is not None:
            action(chunk)
        original(chunk)

    metrics.set_current_chunk = hooked


def _int_bounds(chunk: dict) -> tuple[int, int] | None:
    low, high = json.loads(chunk["from"]), json.loads(chunk["to"])
    if isinstance(low, int) and isinstance(high, int) and low < high:
        return low, high
    return None


class Updater(threading.Thread):
    """Increments random documents' `seq` as fast as it can (plus some inserts and deletes) until stopped; with
    a pipeline, half of the updates hit the chunk the incremental snapshot is reading, to race its window."""

    def __init__(self, collection, ids: int, pipeline=None):
        super().__init__(daemon=True)
        self.collection, self.ids, self.pipeline = collection, ids, pipeline
        self.halt = threading.Event()
        self.writes = 0

    def _pick(self, rng) -> int:
        if self.pipeline is not None and rng.random() < 0.5:
            chunk = self.pipeline.snapshot_metrics.snapshot()["CurrentChunk"]
            if chunk is not None:
                low, high = json.loads(chunk["from"]), json.loads(chunk["to"])
                if isinstance(low, int) and isinstance(high, int) and low < high:
                    return rng.randrange(low, high)
        return rng.randrange(self.ids)

    def run(self):
        rng = random.Random(5)
        next_id = self.ids
        while not self.halt.is_set():
            action = rng.random()
            if action < 0.9:
                self.collection.update_one({"_id": self._pick(rng)}, {"$inc": {"seq": 1}})
            elif action < 0.95:
                self.collection.insert_one({"_id": next_id, "seq": 0})
                next_id += 1
            else:
                self.collection.delete_one({"_id": rng.randrange(next_id)})
            self.writes += 1


def test_incremental_snapshot_under_heavy_updates_ends_in_the_database_state(stack, mongo_rs, client, unique_name):
    name = _name(unique_name)
    collection = client[name].docs
    collection.insert_many([{"_id": i, "seq": 0, "pad": "x" * 40} for i in range(3000)])
    config = _config(name, mongo_rs.uri, capture__mode="change_streams_update_full",
                     incremental__snapshot__chunk__size=50)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    pipeline = running.pipeline()
    rng = random.Random(9)
    in_window: list[int] = []

    def update_rows_of_the_chunk(chunk):  # the chunk's rows change while its window is open
        bounds = _int_bounds(chunk)
        if bounds is not None:
            for _ in range(5):
                document = rng.randrange(*bounds)
                collection.update_one({"_id": document}, {"$inc": {"seq": 1}})
                in_window.append(document)

    inside_windows(pipeline, update_rows_of_the_chunk)
    updater = Updater(collection, 3000, pipeline)
    updater.start()
    pipeline.request_incremental_snapshot([f"{name}.docs"])
    metrics = _wait_snapshot_done(pipeline)
    updater.halt.set()
    updater.join()
    records = wait_for_state(stack.kafka_bootstrap, f"{name}.{name}.docs", collection, timeout=60)
    running.finish()

    assert metrics["SnapshotCompleted"] and metrics["ChunksDone"] == metrics["ChunksTotal"] >= 60
    assert len(in_window) >= 5 * (metrics["ChunksTotal"] - 2) and updater.writes > 0
    assert metrics["RowsDroppedByWatermarks"] > 0, "no chunk row met a concurrent change: the test proves nothing"
    # A chunk row never overwrites a newer streamed change: per document, seq never goes back in topic order.
    # (An update's own seq comes from its updateDescription: `after` is looked up later and may be newer.)
    last_seq: dict = {}
    for record, event in zip([r for r in records if r.value], values(records), strict=True):
        if event["op"] == "u":
            seq = json.loads(event["updateDescription"]["updatedFields"])["seq"]
        elif event["op"] in ("r", "c"):
            seq = json.loads(event["after"])["seq"]
        else:
            continue
        assert seq >= last_seq.get(record.key, 0), (event["op"], event["source"]["snapshot"], record.key, seq)
        last_seq[record.key] = seq
    markers = {e["source"]["snapshot"] for e in values(records) if e["op"] == "r"}
    assert markers == {"incremental"}


def test_signals_through_the_signal_collection(stack, mongo_rs, client, unique_name):
    name = _name(unique_name)
    client[name].a.insert_many([{"_id": i, "color": "blue" if i % 4 == 0 else "red"} for i in range(400)])
    client[name].b.insert_many([{"_id": i} for i in range(5000)])
    config = _config(name, mongo_rs.uri)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    pipeline = running.pipeline()
    signals = client[name].signals

    # execute-snapshot with Debezium's additional-conditions (filter given as JSON text)
    signals.insert_one({"type": "execute-snapshot", "data": {
        "data-collections": [f"{name}\\.a"], "type": "incremental",
        "additional-conditions": [{"data-collection": f"{name}.a", "filter": '{"color": "blue"}'}]}})
    metrics = _wait_snapshot_done(pipeline)
    events = values(wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.a", 100))
    assert metrics["SnapshotCompleted"] and metrics["RowsScanned"] == {f"{name}.a": 100}
    assert sorted(json.loads(e["after"])["_id"] for e in events) == list(range(0, 400, 4))

    # execute then stop right away (data as a JSON string, as the SQL connectors write it)
    signals.insert_one({"type": "execute-snapshot",
                        "data": json.dumps({"data-collections": [f"{name}.b"], "type": "incremental"})})
    signals.insert_one({"type": "stop-snapshot", "data": {"data-collections": [f"{name}.b"], "type": "incremental"}})
    metrics = _wait_snapshot_done(pipeline, after=metrics)
    assert metrics["SnapshotAborted"] and metrics["RowsScanned"][f"{name}.b"] < 5000
    stored = OffsetStore(stack.kafka_bootstrap, config.offset_storage_topic).get(name, "rs0")
    running.finish()
    assert "incremental_snapshot" not in stored.extra


def test_incremental_progress_survives_a_restart(stack, mongo_rs, client, unique_name):
    name = _name(unique_name)
    client[name].docs.insert_many([{"_id": i, "v": i} for i in range(6000)])
    config = _config(name, mongo_rs.uri)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    pipeline = running.pipeline()
    with pytest.raises(ValueError):
        pipeline.request_incremental_snapshot([])
    # the snapshot is held at its 16th chunk's window until the runner stops: 15 chunks done, on any machine speed
    inside_windows(pipeline, lambda chunk: chunk["chunk"] >= 15 and pipeline.stop.wait())
    pipeline.request_incremental_snapshot(f"{name}.docs")
    deadline = time.monotonic() + 60
    while pipeline.snapshot_metrics.snapshot()["ChunksDone"] < 15:
        assert time.monotonic() < deadline and pipeline.metrics.phase != "failed"
        time.sleep(0.01)
    running.finish()
    stored = OffsetStore(stack.kafka_bootstrap, config.offset_storage_topic).get(name, "rs0")
    state = stored.extra["incremental_snapshot"]
    done_before = state["collections"][0]["chunk"]
    assert 15 <= done_before < 60

    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    metrics = _wait_snapshot_done(running.pipeline())
    running.finish()
    assert metrics["ChunksDoneAtStart"] == done_before and metrics["ChunksReadThisRun"] == 60 - done_before
    records = read_topic(stack.kafka_bootstrap, f"{name}.{name}.docs")
    ids = [json.loads(e["after"])["_id"] for e in values(records)]
    assert sorted(ids) == list(range(6000))  # every document exactly once across the restart


def test_incremental_snapshot_needs_the_signal_collection(stack, mongo_rs, client, unique_name):
    name = _name(unique_name)
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="no_data")
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    pipeline = running.pipeline()
    with pytest.raises(ConnectorError, match="signal.data.collection"):
        pipeline.request_incremental_snapshot([f"{name}.docs"])
    running.finish()


def test_incremental_snapshot_with_update_patches_and_a_filter(stack, mongo_rs, client, unique_name):
    """Default capture mode (updates carry only their changes): the topic's history plus the incremental rows
    still end in the database's state, and a filter from the API selects documents."""
    name = _name(unique_name)
    collection = client[name].docs
    collection.insert_many([{"_id": i, "seq": 0, "kind": i % 2} for i in range(1500)])
    config = _config(name, mongo_rs.uri, snapshot__mode="initial")
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    updater = Updater(collection, 1500)
    updater.start()
    pipeline = running.pipeline()
    pipeline.request_incremental_snapshot([rf"{name}\.do.*"], filter={"kind": 1})
    metrics = _wait_snapshot_done(pipeline)
    updater.halt.set()
    updater.join()
    records = wait_for_state(stack.kafka_bootstrap, f"{name}.{name}.docs", collection, timeout=60)
    running.finish()
    incremental = [e for e in values(records) if e["source"]["snapshot"] == "incremental"]
    assert incremental and all(json.loads(e["after"])["kind"] == 1 for e in incremental)
    assert metrics["RowsScanned"][f"{name}.docs"] + metrics["RowsDroppedByWatermarks"] >= 600


def test_pause_and_resume_an_incremental_snapshot(stack, mongo_rs, client, unique_name):
    """pause-snapshot (signal) stops opening chunk windows while the stream goes on, and the pause is part of the
    stored progress; resume (API) finishes the snapshot with every document exactly once."""
    name = _name(unique_name)
    client[name].docs.insert_many([{"_id": i} for i in range(3000)])
    config = _config(name, mongo_rs.uri)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    pipeline = running.pipeline()
    signals = client[name].signals
    held, release = threading.Event(), threading.Event()

    def hold_the_fourth_chunk(chunk):  # the pause is signalled while chunk 3's window is open
        if chunk["chunk"] == 3:
            held.set()
            release.wait(60)

    inside_windows(pipeline, hold_the_fourth_chunk)
    signals.insert_one({"type": "execute-snapshot", "data": {"data-collections": [f"{name}.docs"]}})
    assert held.wait(60) and pipeline.metrics.phase != "failed"
    signals.insert_one({"type": "pause-snapshot"})
    release.set()
    deadline = time.monotonic() + 60
    while not pipeline.snapshot_metrics.snapshot()["SnapshotPaused"]:
        assert time.monotonic() < deadline and pipeline.metrics.phase != "failed"
        time.sleep(0.01)

    # writes streamed after the pause: the stream has moved past any window open when it came, and no new one opens
    client[name].other.insert_one({"_id": 1})
    wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.other", 1)
    paused = pipeline.snapshot_metrics.snapshot()
    client[name].other.insert_one({"_id": 2})
    wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.other", 2)
    still = pipeline.snapshot_metrics.snapshot()
    assert paused["SnapshotPaused"] and paused["SnapshotRunning"]
    assert still["ChunksDone"] == paused["ChunksDone"] < paused["ChunksTotal"] == 30
    stored = OffsetStore(stack.kafka_bootstrap, config.offset_storage_topic).get(name, "rs0")
    assert stored.extra["incremental_snapshot"]["paused"] is True

    pipeline.resume_incremental_snapshot()
    metrics = _wait_snapshot_done(pipeline)
    running.finish()
    assert metrics["SnapshotCompleted"] and not metrics["SnapshotPaused"] and metrics["ChunksDone"] == 30
    ids = [json.loads(e["after"])["_id"] for e in values(read_topic(stack.kafka_bootstrap, f"{name}.{name}.docs"))]
    assert sorted(ids) == list(range(3000))
