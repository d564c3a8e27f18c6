"""OffsetStore against the real broker: last value wins, tombstones, committed-only reads, fencing resets."""

from __future__ import annotations

import datetime
import threading

import pytest
from bson import Timestamp
from confluent_kafka import Producer

from connectors.kafka.errors import SinkFencedError
from connectors.kafka.offset_record import OffsetRecord, OffsetTombstone
from connectors.kafka.offsets import OffsetStore
from connectors.kafka.sink import OutMessage, TransactionalSink
from tests.integration.kafka_reading import read_topic

pytestmark = pytest.mark.integration


@pytest.fixture
def store(stack, unique_name) -> OffsetStore:
    return OffsetStore(stack.kafka_bootstrap, f"it.offsets.{unique_name}", timeout=20)


@pytest.fixture
def connector(unique_name) -> str:
    return f"conn-{unique_name}"


def position(connector: str, rs: str, n: int) -> OffsetRecord:
    return OffsetRecord(connector, rs, resume_token={"_data": f"82{n:04d}"}, cluster_time=Timestamp(1_700_000_000, n),
                        snapshot={"completed": n > 1})


def test_missing_topic_means_no_offsets(store, connector):
    assert store.load(connector) == {}
    assert store.get(connector, "rs0") is None


def test_last_value_per_key_wins_and_tombstones_delete(store, connector):
    for record in [
        position(connector, "rs0", 1),
        position(connector, "rs1", 1),
        position("other-connector", "rs0", 9),
        position(connector, "rs0", 2),
        position(connector, "rs1", 2),
        OffsetTombstone(connector, "rs1"),
        position(connector, "rs2", 1),
        OffsetTombstone(connector, "rs2"),
        position(connector, "rs2", 3),
    ]:
        store.write(record)
    assert store.load(connector) == {"rs0": position(connector, "rs0", 2), "rs2": position(connector, "rs2", 3)}
    assert store.load("other-connector") == {"rs0": position("other-connector", "rs0", 9)}
    assert set(store.load_all()) == {(connector, "rs0"), (connector, "rs2"), ("other-connector", "rs0")}


def test_foreign_records_in_the_topic_are_ignored(stack, store, connector):
    store.write(position(connector, "rs0", 1))
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap})
    producer.produce(store.topic.name, key=b"not an offset", value=b"{}")
    producer.produce(store.topic.name, key=b'["x", {"rs": "rs0"}]', value=b"[not json")
    producer.flush(10)
    assert store.load(connector) == {"rs0": position(connector, "rs0", 1)}


def test_committed_offset_behind_another_pipelines_open_transaction_is_read(stack, store, connector):
    # Another pipeline holds a transaction open on the shared offsets topic; our commit lands after its records.
    store.write(position("busy", "rs0", 1))  # creates the topic
    other = Producer({"bootstrap.servers": stack.kafka_bootstrap, "transactional.id": f"busy.{connector}"})
    other.init_transactions(20)
    other.begin_transaction()
    other.produce(store.topic.name, key=OffsetRecord("busy", "rs9").key, value=position("busy", "rs9", 5).to_value())
    other.flush(10)
    store.write(position(connector, "rs0", 7))
    threading.Timer(0.5, other.commit_transaction).start()
    assert store.load(connector) == {"rs0": position(connector, "rs0", 7)}
    assert store.get("busy", "rs9") == position("busy", "rs9", 5)


def test_reset_fences_a_running_pipeline_which_cannot_overwrite_it(stack, store, connector):
    sink = TransactionalSink(stack.kafka_bootstrap, connector, "rs0", offsets_topic=store.topic)
    sink.open()
    sink.write_batch([], position(connector, "rs0", 1))
    reset = store.reset_to_timestamp(connector, "rs0", Timestamp(1_700_000_123, 4), requested_by="alice")
    with pytest.raises(SinkFencedError):
        sink.write_batch([], position(connector, "rs0", 2))
    sink.close()
    loaded = store.get(connector, "rs0")
    assert loaded == reset
    assert loaded.resume_token is None and loaded.snapshot is None
    assert loaded.startup["mode"] == "timestamp" and loaded.startup["timestamp"] == Timestamp(1_700_000_123, 4)
    assert loaded.startup["requested_by"] == "alice" and loaded.startup["requested_at_ms"] > 0


def test_reset_during_a_batch_aborts_that_batch(stack, store, connector, unique_name):
    topic = f"it.events.{unique_name}"
    sink = TransactionalSink(stack.kafka_bootstrap, connector, "rs0", offsets_topic=store.topic)
    sink.open()
    sink.before_commit = lambda: store.request_resnapshot(connector, "rs0", requested_by="bob")
    with pytest.raises(SinkFencedError):
        sink.write_batch([OutMessage(topic, b"k", b"event")], position(connector, "rs0", 3))
    sink.close()
    assert read_topic(stack.kafka_bootstrap, topic) == []
    assert store.get(connector, "rs0").startup["mode"] == "snapshot"


def test_every_reset_kind_reads_back(store, connector):
    store.write(position(connector, "rs0", 1))
    latest = store.reset_to_latest(connector, "rs0")
    assert store.get(connector, "rs0") == latest and latest.startup["mode"] == "latest"

    token = {"_data": "8265A1B2C3000000012B022C0100296E5A1004"}
    by_token = store.reset_to_token(connector, "rs0", token, requested_by="carol")
    assert store.get(connector, "rs0").startup == {**by_token.startup, "token": token}

    when = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    by_time = store.reset_to_timestamp(connector, "rs0", when)
    assert store.get(connector, "rs0").startup["timestamp"] == Timestamp(int(when.timestamp()), 0) == \
        by_time.startup["timestamp"]

    assert store.request_resnapshot(connector, "rs0").startup["mode"] == "snapshot"
    store.delete(connector, "rs0")
    assert store.load(connector) == {}
    with pytest.raises(ValueError, match="resume token"):
        store.reset_to_token(connector, "rs0", {})
