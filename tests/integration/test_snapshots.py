"""Initial snapshots end to end: chunking of every BSON `_id` type, parallel chunks, consistency with concurrent
writes, snapshot.* options, every snapshot.mode, and chunks as separate worker processes. Real Kafka, emulator."""

from __future__ import annotations

import datetime
import json
import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pymongo
import pytest
from bson import Binary, Decimal128, Int64, ObjectId, Timestamp
from pymongo import monitoring
from pymongo.errors import OperationFailure

import connectors.mongodb.source
from connectors.mongodb.pipeline import ReplicaSetPipeline
from connectors.mongodb.snapshots import (
    ChunkTask,
    PolledChunkExecutor,
    ProcessPoolChunkExecutor,
    ThreadPoolChunkExecutor,
    chunks,
    run_chunk_task,
    run_chunk_task_json,
)
from connectors.mongodb.snapshots.bson_order import sort_key
from connectors.mongodb.snapshots.chunks import chunks_of, plan_collection
from connectors.mongodb.snapshots.executors import ChunkInterrupted
from connectors.mongodb.snapshots.progress import SnapshotProgress
from connectors.mongodb.topology import discover
from devstack.mongo import start_replica_set
from tests.integration.kafka_reading import last_snapshot_record, read_topic
from tests.integration.pipeline_harness import RunningConnector, connector_config, values, wait_for_events
from tests.integration.topic_state import wait_for_state

pytestmark = pytest.mark.integration

MIXED_IDS = [
    None, -7, 0, 1, Int64(2), 2.5, Decimal128("3.25"), 10**12, float("inf"), "", "a", "b", "zz", "é",
    {"a": 1}, {"a": 1, "b": 2}, {"a": "x"}, {"b": 0}, Binary(b"\x01", 0), Binary(b"\x01\x02", 5),
    ObjectId("000000000000000000000001"), ObjectId("ffffffffffffffffffffffff"), False, True,
    datetime.datetime(2001, 1, 1), datetime.datetime(2024, 5, 1, 12), Timestamp(1, 1), Timestamp(2, 0),
]


@pytest.fixture
def client(mongo_rs):
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=10_000)
    yield client
    client.close()


def _name(unique_name: str, prefix: str = "s") -> str:
    return prefix + unique_name.replace("-", "")[-12:]


def _mixed_documents() -> list[dict]:
    ids = list(MIXED_IDS)
    ids += list(range(100, 160)) + [f"k{i:03d}" for i in range(60)] + [ObjectId() for _ in range(60)]
    ids += [{"tenant": i % 3, "n": i} for i in range(40)] + [Decimal128(f"{i}.5") for i in range(200, 240)]
    return [{"_id": i, "n": n} for n, i in enumerate(ids)]


def _read_plan(collection, namespace: str, plan) -> list:
    seen = []
    for chunk in chunks_of(namespace, plan.bounds, 0):
        seen.extend(d["_id"] for d in collection.find(chunk.query()))
    return seen


def test_chunks_cover_every_bson_id_type_exactly_once(client, unique_name, monkeypatch):
    name = _name(unique_name)
    collection = client[name].mixed
    documents = _mixed_documents()
    collection.insert_many(documents)
    ids = [d["_id"] for d in documents]
    # the client-side BSON order is the server's index order
    server_order = [sort_key(d["_id"]) for d in collection.find({}, {"_id": 1}).sort("_id", 1)]
    assert server_order == sorted(sort_key(i) for i in ids)

    def counted(seen):
        return Counter(json.dumps(sort_key(i), default=repr) for i in seen)

    expected = counted(ids)
    by_split_vector = plan_collection(client, f"{name}.mixed", chunk_size=9)
    assert by_split_vector.method == "splitVector" and len(by_split_vector.bounds) > 20
    assert counted(_read_plan(collection, f"{name}.mixed", by_split_vector)) == expected

    def refused(*args, **kwargs):
        raise OperationFailure("not allowed", code=13)

    monkeypatch.setattr(chunks, "_split_vector", refused)
    by_sample = plan_collection(client, f"{name}.mixed", chunk_size=25)
    assert by_sample.method == "sample" and len(by_sample.bounds) > 5
    assert counted(_read_plan(collection, f"{name}.mixed", by_sample)) == expected

    single = plan_collection(client, f"{name}.mixed", chunk_size=10_000)
    assert single.method == "single" and len(single.bounds) == 2
    assert plan_collection(client, f"{name}.nothing", chunk_size=10).bounds == []


def _keys(records) -> list[str]:
    return [json.loads(r.key)["id"] for r in records if r.value is not None]


def test_initial_snapshot_of_every_id_type_empty_and_large_collections(stack, mongo_rs, client, unique_name):
    name = _name(unique_name)
    db = client[name]
    contents = {
        "oids": [{"_id": ObjectId(), "i": i} for i in range(2500)],
        "ints": [{"_id": Int64(i) if i % 2 else i, "i": i} for i in range(1500)],
        "strings": [{"_id": f"key-{i:05d}", "i": i} for i in range(1000)],
        "compound": [{"_id": {"region": i % 7, "seq": i}, "i": i} for i in range(800)],
        "decimals": [{"_id": Decimal128(f"{i}.{i % 10}"), "i": i} for i in range(700)],
        "mixed": _mixed_documents(),
        "large": [{"_id": i, "pad": "x" * 50} for i in range(12_000)],
    }
    for collection, documents in contents.items():
        db[collection].insert_many(documents)
    db.create_collection("empty")
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__chunk__size=400,
                              snapshot__max__threads=4, max__batch__size=2000)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming(90)
    metrics = running.pipeline().snapshot_metrics.snapshot()
    db.oids.insert_one({"_id": "after-the-snapshot"})
    wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.oids", 2501)
    running.finish()

    markers = []
    for collection, documents in contents.items():
        records = read_topic(stack.kafka_bootstrap, f"{name}.{name}.{collection}")
        events = values(records)
        snapshot_events = [e for e in events if e["op"] == "r"]
        assert len(snapshot_events) == len(documents), collection  # each document exactly once
        assert len(set(_keys(records)[: len(documents)])) == len(documents), collection
        markers += [e["source"]["snapshot"] for e in snapshot_events]
    assert Counter(markers)["last"] == 1 and set(markers) == {"true", "last"}
    assert values(read_topic(stack.kafka_bootstrap, f"{name}.{name}.oids"))[-1]["op"] == "c"

    assert metrics["SnapshotCompleted"] and not metrics["SnapshotRunning"] and not metrics["SnapshotAborted"]
    assert metrics["TotalTableCount"] == 8 and metrics["RemainingTableCount"] == 0
    assert metrics["RowsScanned"] == {f"{name}.{c}": len(d) for c, d in contents.items()} | {f"{name}.empty": 0}
    assert metrics["ChunksDone"] == metrics["ChunksTotal"] == metrics["ChunksReadThisRun"] > 40
    assert metrics["Collections"][f"{name}.large"]["chunks_total"] >= 25
    assert metrics["Collections"][f"{name}.empty"]["chunks_total"] == 0


class _GatedExecutor(ThreadPoolChunkExecutor):
    """Reader threads that read a chunk only when the test releases one (a permit of `gate` per chunk)."""

    def __init__(self, context, gate: threading.Semaphore, threads: int = 1):
        super().__init__(context, threads=threads)
        self.gate = gate

    def _run(self, task):
        while not self.gate.acquire(timeout=0.05):
            if self.context.stop.is_set():
                raise ChunkInterrupted(task.chunk.label)
        return super()._run(task)


def _wait_metrics(pipeline, condition, timeout=60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        metrics = pipeline.snapshot_metrics.snapshot()
        if condition(metrics):
            return metrics
        assert time.monotonic() < deadline and pipeline.metrics.phase != "failed", (metrics,
                                                                                      pipeline.metrics.last_error)
        time.sleep(0.02)


def test_writes_during_the_snapshot_end_in_the_database_state(stack, mongo_rs, client, unique_name):
    """Every write lands while the snapshot runs, between its chunk reads: the readers are gated, one chunk is let
    through per 50 writes (and read and committed before the next 50), the rest once the writes are done. The
    final chunk is read only after all others, so the snapshot cannot end early on any machine."""
    name = _name(unique_name)
    collection = client[name].docs
    collection.insert_many([{"_id": i, "seq": 0, "pad": "p" * 64} for i in range(12_000)])
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__chunk__size=500,
                              snapshot__max__threads=2, capture__mode="change_streams_update_full")
    gate = threading.Semaphore(0)
    running = RunningConnector(config, stack.kafka_bootstrap,
                               chunk_executor=lambda context: _GatedExecutor(context, gate, threads=2)).start()
    pipeline = running.pipeline()
    try:
        started = _wait_metrics(pipeline, lambda m: m["SnapshotRunning"])
        assert started["ChunksTotal"] >= 22 and started["ChunksDone"] == 0
        rng = random.Random(3)
        writes_during_snapshot = 0
        next_id = 12_000
        for n in range(1000):
            if n % 50 == 0:
                gate.release()
                _wait_metrics(pipeline, lambda m, done=n // 50 + 1: m["ChunksDone"] >= done)
            action = rng.random()
            if action < 0.6:
                collection.update_one({"_id": rng.randrange(next_id)},
                                      {"$inc": {"seq": 1}, "$set": {"w": rng.random()}})
            elif action < 0.8:
                collection.insert_one({"_id": next_id, "seq": 0})
                next_id += 1
            else:
                collection.delete_one({"_id": rng.randrange(next_id)})
            if pipeline.metrics.phase == "snapshot":
                writes_during_snapshot += 1
        assert writes_during_snapshot == 1000
        during = pipeline.snapshot_metrics.snapshot()
        assert during["SnapshotRunning"] and during["ChunksDone"] == 20  # 20 chunks read between the writes
    finally:
        gate.release(100)  # the remaining chunks (after a failure: lets the readers end)
    running.wait_streaming(60)
    wait_for_state(stack.kafka_bootstrap, f"{name}.{name}.docs", collection, timeout=60)
    running.finish()


class _Commands(monitoring.CommandListener):
    """The commands a client sends: (name, database, collection, batchSize, filter)."""

    def __init__(self):
        self.seen: list[tuple] = []

    def started(self, event):
        command = event.command
        collection = command.get("collection") if event.command_name == "getMore" else command.get(event.command_name)
        self.seen.append((event.command_name, event.database_name, collection, command.get("batchSize"),
                          command.get("filter")))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def test_include_list_filter_override_delay_and_fetch_size(stack, mongo_rs, client, unique_name, monkeypatch):
    name = _name(unique_name)
    client[name].a.insert_many([{"_id": i, "keep": i % 3 == 0} for i in range(300)])
    client[name].b.insert_many([{"_id": i} for i in range(50)])
    commands = _Commands()
    open_client = connectors.mongodb.source.open_client
    monkeypatch.setattr(connectors.mongodb.source, "open_client",
                        lambda options, listeners=(): open_client(options, [*listeners, commands]))
    config = connector_config(
        name, mongo_rs.uri, database__include__list=name, snapshot__include__collection__list=rf"{name}\.a",
        snapshot__collection__filter__overrides=f"{name}.a", snapshot__delay__ms=700, snapshot__chunk__size=40,
        snapshot__fetch__size=7, **{f"snapshot.collection.filter.overrides.{name}.a": '{"keep": true}'},
    )
    started = time.time()
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming(30)
    # snapshot.delay.ms: the snapshot (its stream position, its first read) began only after the delay
    assert running.pipeline().snapshot_metrics.started_at - started >= 0.7
    client[name].b.insert_one({"_id": 1000})
    b_events = values(wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.b", 1))
    running.finish()
    a_events = values(read_topic(stack.kafka_bootstrap, f"{name}.{name}.a"))
    assert sorted(json.loads(e["after"])["_id"] for e in a_events) == list(range(0, 300, 3))
    assert [e["op"] for e in b_events] == ["c"]  # b is captured but not snapshotted
    # snapshot.fetch.size is the chunk cursors' batch size: ~13 matching documents per chunk, in batches of 7
    ours = [c for c in commands.seen if c[1] == name and c[0] in ("find", "getMore")]
    chunk_finds = [c for c in ours if c[0] == "find" and "keep" in json.dumps(c[4], default=str)]
    assert len(chunk_finds) >= 5 and {c[3] for c in chunk_finds} == {7}, chunk_finds
    get_mores = [c for c in ours if c[0] == "getMore" and c[2] == "a"]
    assert get_mores and {c[3] for c in get_mores} == {7}, get_mores


def _run_until(config, stack, phase="streaming"):
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    if phase == "streaming":
        running.wait_streaming(30)
    return running


def test_modes_initial_initial_only_always_and_no_data(stack, mongo_rs, client, unique_name):
    name = _name(unique_name)
    client[name].docs.insert_many([{"_id": i} for i in range(30)])
    topic = f"{name}.{name}.docs"

    def config(mode, suffix=""):
        return connector_config(name + suffix, mongo_rs.uri, database__include__list=name, snapshot__mode=mode,
                                snapshot__chunk__size=8, topic__prefix=name + suffix)

    # initial_only: snapshot, then stop; a restart after it completed neither re-snapshots nor streams
    only = RunningConnector(config("initial_only", "o"), stack.kafka_bootstrap).start()
    only.thread.join(30)
    assert only.outcome == {"rs0": "snapshot-done"}, only.error
    again = RunningConnector(config("initial_only", "o"), stack.kafka_bootstrap).start()
    again.thread.join(30)
    assert again.outcome == {"rs0": "snapshot-done"}
    assert [e["op"] for e in values(read_topic(stack.kafka_bootstrap, f"{name}o.{name}.docs"))] == ["r"] * 30

    # no_data (and never): stream from now, nothing read
    for mode, suffix in (("no_data", "d"), ("never", "v")):
        running = _run_until(config(mode, suffix), stack)
        client[name].docs.insert_one({"_id": f"{mode}-1"})
        events = values(wait_for_events(stack.kafka_bootstrap, f"{name}{suffix}.{name}.docs", 1))
        running.finish()
        assert [e["op"] for e in events] == ["c"]

    # initial: snapshot on the first run only; always: at every start
    _run_until(config("initial"), stack).finish()
    _run_until(config("initial"), stack).finish()
    reads = [e for e in values(read_topic(stack.kafka_bootstrap, topic)) if e["op"] == "r"]
    assert len(reads) == 32
    always = _run_until(config("always"), stack)
    metrics = always.pipeline().snapshot_metrics.snapshot()
    always.finish()
    reads = [e for e in values(read_topic(stack.kafka_bootstrap, topic)) if e["op"] == "r"]
    assert len(reads) == 64 and metrics["ChunksTotal"] >= 4 and metrics["SnapshotCompleted"]


def test_when_needed_resnapshots_in_chunks_after_the_oplog_lost_our_position(stack, unique_name):
    handle = start_replica_set(members=1, oplog_max_entries=40, noop_interval=0)
    try:
        name = _name(unique_name, "w")
        client = pymongo.MongoClient(handle.uri)
        client[name].docs.insert_one({"_id": -2})
        config = connector_config(name, handle.uri, database__include__list=name, snapshot__mode="when_needed",
                                  snapshot__chunk__size=30, snapshot__max__threads=3)
        topic = f"{name}.{name}.docs"
        running = _run_until(config, stack)  # first run: a snapshot, then streaming
        client[name].docs.insert_one({"_id": -1})
        wait_for_events(stack.kafka_bootstrap, topic, 2)
        running.finish()
        client[name].docs.insert_many([{"_id": i} for i in range(200)])  # our position leaves the oplog
        running = _run_until(config, stack)
        metrics = running.pipeline().snapshot_metrics.snapshot()
        wait_for_state(stack.kafka_bootstrap, topic, client[name].docs)
        running.finish()
        assert metrics["SnapshotCompleted"] and metrics["ChunksTotal"] >= 5
        events = values(read_topic(stack.kafka_bootstrap, topic))
        assert sorted(json.loads(e["after"])["_id"] for e in events if e["op"] == "r") == [-2, -2, -1, *range(200)]

        # position still in the oplog: when_needed streams on from it, no snapshot
        running = _run_until(config, stack)
        client[name].docs.insert_one({"_id": 1000})
        after = values(wait_for_events(stack.kafka_bootstrap, topic, len(events) + 1))
        metrics = running.pipeline().snapshot_metrics.snapshot()
        running.finish()
        assert metrics["SnapshotKind"] is None and metrics["ChunksTotal"] == 0
        assert [e["op"] for e in after[len(events):]] == ["c"]
    finally:
        handle.stop()


def test_snapshot_metrics_while_running_aborted_and_resumed(stack, mongo_rs, client, unique_name):
    name = _name(unique_name)
    sizes = {"a": 300, "b": 300, "c": 100}
    for collection, size in sizes.items():
        client[name][collection].insert_many([{"_id": i} for i in range(size)])
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__chunk__size=100)
    (replica_set,) = discover(config.mongo_client_options()).replica_sets
    gate = threading.Semaphore(0)
    pipeline = ReplicaSetPipeline(config, replica_set, stack.kafka_bootstrap,
                                  chunk_executor=lambda context: _GatedExecutor(context, gate))
    runner = threading.Thread(target=pipeline.run, daemon=True)
    runner.start()
    ns = {c: f"{name}.{c}" for c in sizes}
    try:
        running = _wait_metrics(pipeline, lambda m: m["SnapshotRunning"])
        assert running["SnapshotKind"] == "initial" and not running["SnapshotCompleted"]
        assert running["TotalTableCount"] == 3 and running["RemainingTableCount"] == 3
        assert running["ChunksTotal"] == 7 and running["ChunksDone"] == 0
        assert running["EstimatedSecondsRemaining"] is None  # nothing done yet to estimate from
        assert running["Collections"][ns["a"]] == {"chunks_total": 3, "chunks_done": 0, "rows": 0,
                                                   "estimated_rows": 300}

        for _ in range(3):  # collection a, chunk by chunk (one reader: in plan order)
            gate.release()
        part = _wait_metrics(pipeline, lambda m: m["ChunksDone"] == 3)
        time.sleep(0.05)
        later = pipeline.snapshot_metrics.snapshot()
        assert part["SnapshotRunning"] and not part["SnapshotCompleted"] and not part["SnapshotAborted"]
        assert part["RemainingTableCount"] == 2 and part["RowsScanned"] == {ns["a"]: 300, ns["b"]: 0, ns["c"]: 0}
        assert part["EstimatedSecondsRemaining"] > 0 and part["RowsPerSecond"] > 0
        assert later["SnapshotDurationInSeconds"] > part["SnapshotDurationInSeconds"] > 0  # a running clock
        assert later["ChunksDone"] == 3  # the fourth chunk waits at the gate
    finally:
        pipeline.stop.set()  # also when an assertion failed: the gated reader gives up
        runner.join(30)
    aborted = pipeline.snapshot_metrics.snapshot()
    assert aborted["SnapshotAborted"] and not aborted["SnapshotRunning"] and not aborted["SnapshotCompleted"]
    assert aborted["ChunksDone"] == 3 and aborted["RemainingTableCount"] == 2

    # a restart, whatever its mode, finishes the unfinished snapshot and counts from where it stopped
    resumed = ReplicaSetPipeline(connector_config(name, mongo_rs.uri, database__include__list=name,
                                                  snapshot__chunk__size=100, snapshot__mode="initial_only"),
                                 replica_set, stack.kafka_bootstrap)
    assert resumed.run() == "snapshot-done"
    done = resumed.snapshot_metrics.snapshot()
    assert done["SnapshotCompleted"] and not done["SnapshotRunning"] and not done["SnapshotAborted"]
    assert done["SnapshotId"] == aborted["SnapshotId"]
    assert done["ChunksDoneAtStart"] == 3 and done["ChunksReadThisRun"] == 4 and done["ChunksDone"] == 7
    assert done["RemainingTableCount"] == 0 and done["EstimatedSecondsRemaining"] == 0.0
    assert done["RowsScanned"] == {ns[c]: size for c, size in sizes.items()}
    assert done["SnapshotDurationInSeconds"] >= aborted["SnapshotDurationInSeconds"]  # since the first start
    for collection, size in sizes.items():
        records = read_topic(stack.kafka_bootstrap, f"{name}.{name}.{collection}")
        assert len(records) == size and len(set(_keys(records))) == size


def test_first_chunks_are_read_while_later_collections_are_planned(stack, mongo_rs, client, unique_name,
                                                                   monkeypatch):
    from confluent_kafka.admin import AdminClient

    from connectors.mongodb.snapshots.reader import MongoSnapshotReader

    name = _name(unique_name)
    for collection in ("a", "b"):
        client[name][collection].insert_many([{"_id": i} for i in range(300)])
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__chunk__size=100,
                              snapshot__mode="initial_only")
    (replica_set,) = discover(config.mongo_client_options()).replica_sets
    read_chunk, plan = MongoSnapshotReader.read_chunk, MongoSnapshotReader.plan
    chunk_read = threading.Event()
    topics_while_planning: list[str] = []

    def reading(self, *args, **kwargs):
        result = read_chunk(self, *args, **kwargs)
        chunk_read.set()
        return result

    def planning(self, namespace, chunk_size):
        if namespace == f"{name}.b":  # a is planned (3 chunks); its first one is read before b's plan is made
            assert chunk_read.wait(30), f"no chunk of {name}.a was read while {name}.b was planned"
            existing = AdminClient({"bootstrap.servers": stack.kafka_bootstrap}).list_topics(timeout=10).topics
            topics_while_planning.extend(t for t in existing if t.startswith(f"{name}.{name}."))
        return plan(self, namespace, chunk_size)

    monkeypatch.setattr(MongoSnapshotReader, "read_chunk", reading)
    monkeypatch.setattr(MongoSnapshotReader, "plan", planning)
    pipeline = ReplicaSetPipeline(config, replica_set, stack.kafka_bootstrap)
    assert pipeline.run() == "snapshot-done"
    # nothing was committed before the plan: the events' topic is created by the first chunk's commit
    assert topics_while_planning == []
    done = pipeline.snapshot_metrics.snapshot()
    assert done["ChunksTotal"] == 6 and done["ChunksReadThisRun"] == 6 and done["ChunksDone"] == 6
    for collection in ("a", "b"):
        records = read_topic(stack.kafka_bootstrap, f"{name}.{name}.{collection}")
        assert len(records) == 300 and len(set(_keys(records))) == 300
        assert [json.loads(r.value)["source"]["snapshot"] for r in records].count("last") == (collection == "b")


def test_chunks_as_separate_worker_processes(stack, mongo_rs, client, unique_name):
    name = _name(unique_name)
    client[name].docs.insert_many([{"_id": i, "v": "x" * 20} for i in range(3000)])
    client[name].more.insert_many([{"_id": ObjectId()} for _ in range(700)])
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__chunk__size=250)
    (replica_set,) = discover(config.mongo_client_options()).replica_sets
    pipeline = ReplicaSetPipeline(config, replica_set, stack.kafka_bootstrap,
                                  chunk_executor=lambda context: ProcessPoolChunkExecutor(context, 2))
    outcome: dict = {}

    def run():
        outcome["result"] = pipeline.run()

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    deadline = time.monotonic() + 90
    while pipeline.metrics.phase != "streaming":
        assert time.monotonic() < deadline and pipeline.metrics.phase != "failed", pipeline.metrics.last_error
        time.sleep(0.05)
    pipeline.stop.set()
    runner.join(30)
    metrics = pipeline.snapshot_metrics.snapshot()
    assert metrics["SnapshotCompleted"] and metrics["ChunksDone"] == metrics["ChunksTotal"] >= 14
    assert metrics["RowsScanned"] == {f"{name}.docs": 3000, f"{name}.more": 700}
    for collection, count in (("docs", 3000), ("more", 700)):
        records = read_topic(stack.kafka_bootstrap, f"{name}.{name}.{collection}")
        assert len(records) == count and len(set(_keys(records))) == count

    # A chunk task run again (a retry, or a zombie's twin) finds its marker and writes nothing.
    snapshot = last_snapshot_record(stack.kafka_bootstrap, config.offset_storage_topic, name)
    assert snapshot is not None and snapshot["completed"]
    progress = SnapshotProgress.from_json(snapshot)
    chunk = progress.chunks()[0]
    task = ChunkTask(name, "rs0", "replayed", chunk, progress.cluster_time)
    first = run_chunk_task(config, replica_set, stack.kafka_bootstrap, task)
    second = run_chunk_task(config, replica_set, stack.kafka_bootstrap, task)
    assert first.rows == 250 and not first.already_committed
    assert second.already_committed and second.rows == 250
    assert len(read_topic(stack.kafka_bootstrap, f"{name}.{name}.docs")) == 3000 + 250


class _Handle:
    """What PolledChunkExecutor needs from a task queue's result (Celery's AsyncResult has the same two)."""

    def __init__(self, future):
        self.future = future

    def ready(self) -> bool:
        return self.future.done()

    def get(self) -> dict:
        return self.future.result()


def test_chunk_tasks_through_a_queue_that_delivers_each_task_twice(stack, mongo_rs, client, unique_name):
    """At-least-once task delivery (a Celery redelivery, a retried task running next to its zombie): per-chunk
    transactional ids and chunk markers keep every document exactly once for read_committed consumers."""
    name = _name(unique_name)
    client[name].docs.insert_many([{"_id": ObjectId(), "n": i} for i in range(2400)])
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__chunk__size=300,
                              snapshot__mode="initial_only")
    (replica_set,) = discover(config.mongo_client_options()).replica_sets
    workers = ThreadPoolExecutor(4)
    deliveries = Counter()

    def send(task_json: str):
        deliveries[task_json] += 2
        first = workers.submit(run_chunk_task_json, config, replica_set, stack.kafka_bootstrap, task_json)
        second = workers.submit(run_chunk_task_json, config, replica_set, stack.kafka_bootstrap, task_json)
        return _Handle(second if len(deliveries) % 2 else first)

    pipeline = ReplicaSetPipeline(config, replica_set, stack.kafka_bootstrap,
                                  chunk_executor=lambda context: PolledChunkExecutor(context, send, capacity=3))
    assert pipeline.run() == "snapshot-done"
    workers.shutdown(wait=True)
    metrics = pipeline.snapshot_metrics.snapshot()
    records = read_topic(stack.kafka_bootstrap, f"{name}.{name}.docs")
    assert len(records) == 2400 and len(set(_keys(records))) == 2400
    assert metrics["SnapshotCompleted"] and metrics["ChunksDone"] == metrics["ChunksTotal"] >= 7
    # every chunk but the final one (read by the coordinator) went out twice, more when a fenced twin was retried
    assert len(deliveries) == metrics["ChunksTotal"] - 1 and min(deliveries.values()) >= 2
    # late twins, still running when the snapshot completed, find it completed and write nothing
    late = run_chunk_task_json(config, replica_set, stack.kafka_bootstrap, next(iter(deliveries)))
    assert late["already_committed"]
    assert len(read_topic(stack.kafka_bootstrap, f"{name}.{name}.docs")) == 2400
