"""The CDC pipeline end to end: emulator (or MONGODB_URI) → pipeline → real Kafka, read back read_committed."""

from __future__ import annotations

import json
import threading

import pymongo
import pytest
from bson import ObjectId

from connectors.kafka import OffsetStore
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import RunningConnector, connector_config, values, wait_for_events

pytestmark = pytest.mark.integration


@pytest.fixture
def mongo(mongo_rs):
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=10_000)
    yield client
    client.close()


def _name(unique_name: str) -> str:
    return "p" + unique_name.replace("-", "")[-12:]


def test_snapshot_then_every_operation_in_order(stack, mongo_rs, mongo, unique_name):
    name = _name(unique_name)
    db = mongo[name]
    db.items.insert_many([{"_id": 1, "v": "a"}, {"_id": 2, "v": "b"}])
    config = connector_config(name, mongo_rs.uri, database__include__list=name)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()

    oid = ObjectId()
    db.items.insert_one({"_id": oid, "v": "c"})
    db.items.update_one({"_id": 1}, {"$set": {"v": "a2"}, "$unset": {"missing": ""}})
    db.items.replace_one({"_id": 2}, {"v": "b-replaced"})
    db.items.delete_one({"_id": oid})
    topic = f"{name}.{name}.items"
    records = wait_for_events(stack.kafka_bootstrap, topic, 6)
    running.finish()

    events = values(records)
    assert [e["op"] for e in events] == ["r", "r", "c", "u", "u", "d"]
    assert [e["source"]["snapshot"] for e in events[:2]] == ["true", "last"]
    assert json.loads(records[0].key) == {"id": "1"}
    assert json.loads(records[2].key) == {"id": json.dumps({"$oid": str(oid)})}
    assert json.loads(events[2]["after"]) == {"_id": {"$oid": str(oid)}, "v": "c"}
    assert events[3]["updateDescription"]["updatedFields"] == json.dumps({"v": "a2"})
    assert json.loads(events[4]["after"]) == {"_id": 2, "v": "b-replaced"}
    assert events[5]["after"] is None
    # Debezium 3.x source block: no rs, ts_us/ts_ns; snapshot reads ord -1, changes the cluster-time increment
    assert all("rs" not in e["source"] and e["source"]["ts_us"] == e["source"]["ts_ms"] * 1000 for e in events)
    assert [e["source"]["ord"] for e in events[:2]] == [-1, -1] and all(e["source"]["ord"] > 0 for e in events[2:])
    assert all(e["source"]["ts_ms"] == e["source"]["wallTime"] for e in events[2:])
    # the delete is followed by its tombstone
    assert records[-1].value is None and records[-1].key == records[-2].key

    stored = OffsetStore(stack.kafka_bootstrap, config.offset_storage_topic).load(name)
    (offset,) = stored.values()
    assert offset.resume_token is not None and offset.snapshot is None  # streaming after a finished snapshot


def test_resume_after_graceful_stop_loses_and_repeats_nothing(stack, mongo_rs, mongo, unique_name):
    name = _name(unique_name)
    coll = mongo[name].orders
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="never")
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    coll.insert_many([{"_id": i} for i in range(10)])
    topic = f"{name}.{name}.orders"
    wait_for_events(stack.kafka_bootstrap, topic, 10)
    running.finish()

    coll.insert_many([{"_id": i} for i in range(10, 25)])  # while stopped
    coll.delete_many({"_id": {"$lt": 5}})

    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    coll.insert_one({"_id": 99})
    records = wait_for_events(stack.kafka_bootstrap, topic, 31)
    running.finish()
    events = values(records)
    keys = [(e["op"], json.loads(e["after"])["_id"] if e["after"] else None) for e in events]
    inserts = [k for op, k in keys if op == "c"]
    assert inserts == list(range(25)) + [99]
    assert sum(1 for op, _ in keys if op == "d") == 5


def test_transaction_metadata_and_enrichment(stack, mongo_rs, mongo, unique_name):
    name = _name(unique_name)
    db = mongo[name]
    db.create_collection("a")
    db.create_collection("b")
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="never",
                              provide__transaction__metadata="true")
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    with mongo.start_session() as session, session.start_transaction():
        db.a.insert_one({"_id": 1}, session=session)
        db.b.insert_one({"_id": 1}, session=session)
        db.a.update_one({"_id": 1}, {"$set": {"x": 1}}, session=session)
    db.a.insert_one({"_id": 2})  # outside any transaction
    wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.a", 3)
    boundaries = values(wait_for_events(stack.kafka_bootstrap, f"{name}.transaction", 2))
    running.finish()

    assert [b["status"] for b in boundaries] == ["BEGIN", "END"]
    assert boundaries[0]["id"] == boundaries[1]["id"]
    assert boundaries[1]["event_count"] == 3
    collections = {c["data_collection"]: c["event_count"] for c in boundaries[1]["data_collections"]}
    assert collections == {f"{name}.a": 2, f"{name}.b": 1}  # <db>.<collection>, as Debezium 2.7+/3.x
    a_events = values(read_topic(stack.kafka_bootstrap, f"{name}.{name}.a"))
    assert [e["transaction"]["total_order"] for e in a_events[:2]] == [1, 3]
    assert a_events[0]["source"]["txnNumber"] is not None and a_events[0]["source"]["lsid"]
    assert a_events[2]["transaction"] is None


def test_heartbeat_moves_the_offset_on_an_idle_source(stack, mongo_rs, mongo, unique_name):
    name = _name(unique_name)
    config = connector_config(name, mongo_rs.uri, collection__include__list=f"{name}.captured",
                              snapshot__mode="never", heartbeat__interval__ms=200)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    store = OffsetStore(stack.kafka_bootstrap, config.offset_storage_topic)
    for i in range(5):  # changes the connector does not capture
        mongo[name].other.insert_one({"_id": i})
    first = wait_for_offset(store, name)
    mongo[name].other.insert_one({"_id": 100})
    later = wait_for_offset(store, name, newer_than=first.resume_token)
    heartbeats = values(read_topic(stack.kafka_bootstrap, f"__debezium-heartbeat.{name}"))
    running.finish()
    assert later.resume_token["_data"] > first.resume_token["_data"]
    assert heartbeats and heartbeats[0]["ts_ms"] > 0
    assert not any(t.startswith(f"{name}.{name}.") for t in list_topics(stack.kafka_bootstrap))


def wait_for_offset(store, connector, newer_than=None, timeout=20):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        offsets = store.load(connector)
        for record in offsets.values():
            if record.resume_token and (newer_than is None or record.resume_token != newer_than):
                return record
        time.sleep(0.2)
    raise AssertionError("offset did not move")


def list_topics(bootstrap):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics


def test_changes_made_while_a_transaction_commits_go_into_the_next_one(stack, mongo_rs, mongo, unique_name):
    """The loop builds what comes while a batch commits and hands it all over as soon as that commit is done: a
    change waits for the transaction in flight, not for the one after it too."""
    name = _name(unique_name)
    topic = f"{name}.{name}.docs"
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="never")
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    pipeline = running.pipeline()
    handed: list[list[str]] = []
    built: list[str] = []
    progress = threading.Condition()
    release = threading.Event()

    def trace(stage: str, batch: list) -> None:
        if stage in ("built", "handed"):
            ids = [json.loads(m.key)["id"] for m in batch if m.topic == topic and m.value is not None]
            if stage == "handed" and not ids:
                return  # a commit of the position alone (at start, or while idle)
            with progress:
                (built.extend if stage == "built" else handed.append)(ids)
                progress.notify_all()

    def hold_the_first_change() -> None:
        if handed and handed[-1] == ["0"]:
            assert release.wait(60), "the test never released the commit"

    pipeline.trace = trace
    pipeline.sink.before_commit = hold_the_first_change
    mongo[name].docs.insert_one({"_id": 0})
    with progress:
        assert progress.wait_for(lambda: handed == [["0"]], 30), handed
    for i in range(1, 6):  # five changes (five oplog entries) while the first one's transaction is held open
        mongo[name].docs.insert_one({"_id": i})
    with progress:
        built_all = progress.wait_for(lambda: built[-5:] == ["1", "2", "3", "4", "5"], 30)
    release.set()
    assert built_all, f"the changes made during the commit were not built meanwhile: {built}"
    wait_for_events(stack.kafka_bootstrap, topic, 6)
    running.finish()
    assert handed[:2] == [["0"], ["1", "2", "3", "4", "5"]]


def test_the_lag_is_taken_once_a_batch_is_visible_and_counts_its_commit(stack, mongo_rs, mongo, unique_name):
    """MilliSecondsBehindSource is recorded after the batch's transaction committed (its event is visible to a
    read_committed reader then), from the source time of the batch's change: a commit held for HOLD_S shows in it."""
    hold_s = 0.6
    name = _name(unique_name)
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="never")
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    pipeline = running.pipeline()
    topic = f"{name}.{name}.items"
    recorded: list[tuple[int, list]] = []
    original = pipeline.metrics.record_committed

    def record_committed(source_ms, lag_basis=None):
        original(source_ms, lag_basis)
        visible = [json.loads(json.loads(r.value)["after"])["_id"] for r in read_topic(stack.kafka_bootstrap, topic)
                   if r.value]
        recorded.append((pipeline.metrics.ms_behind_source, visible))

    pipeline.metrics.record_committed = record_committed
    pipeline.sink.before_commit = lambda: threading.Event().wait(hold_s)
    mongo[name].items.insert_one({"_id": "held"})
    wait_for_events(stack.kafka_bootstrap, topic, 1)
    running.finish()
    lag_ms, visible = next((lag, ids) for lag, ids in recorded if "held" in ids)
    assert lag_ms >= hold_s * 1000
    assert visible == ["held"]


def test_a_change_written_when_the_phase_shows_streaming_is_captured(stack, mongo_rs, mongo, unique_name):
    """snapshot.mode=never streams from "now": that is fixed when the reader is opened, before the phase shows
    "streaming", so a change committed then is in the topic (the reader's thread used to open the stream later)."""
    from connectors.runner import ConnectorRunner

    name = _name(unique_name)
    config = connector_config(name, mongo_rs.uri, collection__include__list=f"{name}.docs", snapshot__mode="never")

    class WritingWhenStreaming(ConnectorRunner):
        def pipeline(self, partition, on_phase=None):
            return super().pipeline(partition, lambda phase: phase == "streaming"
                                    and mongo[name].docs.insert_one({"_id": "at streaming"}))

    runner = WritingWhenStreaming(config, stack.kafka_bootstrap, threading.Event())
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        records = wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.docs", 1)
    finally:
        runner.stop.set()
        thread.join(60)
    assert not runner.errors, runner.errors
    assert [(v["op"], json.loads(v["after"])["_id"]) for v in values(records)] == [("c", "at streaming")]
