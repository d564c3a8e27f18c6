"""A change event over MongoDB's 16 MB limit (BSONObjectTooLarge, 10334, on getMore) is a permanent error with a
message saying what to do, not a network error retried for 20 minutes; under message.too.large.policy=skip the
reader steps over it and goes on."""

from __future__ import annotations

import json
import threading

import pymongo
import pytest

from connectors.config.types import CaptureScope
from connectors.core.metrics import StreamingMetrics
from connectors.core.stream import Backoff, ReaderFailed
from connectors.mongodb.errors import ChangeEventTooLarge
from connectors.mongodb.filters import WatchTarget
from connectors.mongodb.stream import (
    ChangeStreamReader,
    OversizedSkipped,
    StartPosition,
    StreamOptions,
    next_cluster_time,
)
from tests.integration.pipeline_harness import RunningConnector, connector_config, wait_for_events
from tests.reader_queue import ReaderQueue

pytestmark = pytest.mark.integration

MB = 1024 * 1024


def _read(mongo_rs, name: str, skip: bool) -> list:
    """Items the reader queues for: a small insert, an update whose event is ~18 MB (12 MB looked-up document plus
    6 MB of updatedFields), another small insert."""
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=10_000)
    coll = client[name].big
    coll.insert_one({"_id": 0, "a": "x" * (6 * MB)})
    start = client[name].command("ping")["operationTime"]
    coll.insert_one({"_id": 1})
    coll.update_one({"_id": 0}, {"$set": {"b": "y" * (6 * MB)}})
    coll.insert_one({"_id": 2})
    out = ReaderQueue()
    stop = threading.Event()
    reader = ChangeStreamReader(
        client, WatchTarget(CaptureScope.COLLECTION, name, "big"), [],
        StreamOptions(full_document="updateLookup", batch_size=1, skip_oversized_events=skip),
        StartPosition(start_at_operation_time=next_cluster_time(start)), out, StreamingMetrics(name, "rs0"),
        Backoff(initial_ms=60_000, max_attempts=16), stop,
    )
    items = []
    try:
        reader.start()
        while len(items) < 6:
            item = out.get(timeout=30)
            items.append(item)
            if isinstance(item, ReaderFailed) or (isinstance(item, dict) and item["documentKey"]["_id"] == 2):
                break
    finally:
        stop.set()
        reader.join(10)
        client.close()
    return items


def test_an_oversized_change_event_fails_at_once_with_what_to_do(stack, mongo_rs, unique_name):
    items = _read(mongo_rs, "o" + unique_name.replace("-", "")[-12:], skip=False)
    changes = [item for item in items if isinstance(item, dict)]
    assert [change["documentKey"]["_id"] for change in changes] == [1]
    assert isinstance(items[-1], ReaderFailed), items
    error = items[-1].error
    assert isinstance(error, ChangeEventTooLarge)
    message = str(error)
    assert "16 MB" in message and "10334" in message and "capture.mode" in message
    assert "message.too.large.policy=skip" in message


def test_skip_policy_steps_over_an_oversized_change_event(stack, mongo_rs, unique_name):
    items = _read(mongo_rs, "s" + unique_name.replace("-", "")[-12:], skip=True)
    assert not any(isinstance(item, ReaderFailed) for item in items), items
    changes = [item for item in items if isinstance(item, dict)]
    assert [(change["operationType"], change["documentKey"]["_id"]) for change in changes] == [
        ("insert", 1), ("insert", 2)]
    skipped = [item for item in items if isinstance(item, OversizedSkipped)]
    assert len(skipped) == 1 and skipped[0].resume_token is not None
    assert skipped[0].summary["operationType"] == "update" and skipped[0].summary["documentKey"] == {"_id": 0}


def test_the_pipeline_records_a_skipped_oversized_event_on_the_errors_topic(stack, mongo_rs, unique_name):
    name = "p" + unique_name.replace("-", "")[-12:]
    config = connector_config(name, mongo_rs.uri, snapshot__mode="never", capture__mode="change_streams_update_full",
                              message__too__large__policy="skip", collection__include__list=f"{name}.big")
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    coll = pymongo.MongoClient(mongo_rs.uri)[name].big
    coll.insert_one({"_id": 0, "a": "x" * (6 * MB)})
    coll.update_one({"_id": 0}, {"$set": {"b": "y" * (6 * MB)}})
    coll.insert_one({"_id": 2})
    events = wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.big", 1, timeout=60)
    # the 6 MB insert is over Kafka's 1 MB limit (recorded as message_too_large); the update MongoDB cannot return
    errors = wait_for_events(stack.kafka_bootstrap, config.errors_topic_name, 2, timeout=60)
    running.finish()
    assert [json.loads(record.key)["id"] for record in events if record.value] == ["2"]
    kinds = [json.loads(record.value)["error"] for record in errors]
    assert kinds == ["message_too_large", "change_event_too_large"]
    recorded = json.loads(errors[1].value)
    assert recorded["error"] == "change_event_too_large" and recorded["operationType"] == "update"
    assert recorded["documentKey"] == {"_id": 0} and recorded["resume_token"]


def test_raised_message_limits_let_a_3_mb_event_through(stack, mongo_rs, unique_name):
    """A message over Kafka's default 1 MB limit goes through once the connector raises both limits: the producer's
    (producer.override.max.request.size) and the topics' it creates (topic.creation.default.max.message.bytes)."""
    name = "p" + unique_name.replace("-", "")[-12:]
    config = connector_config(name, mongo_rs.uri, snapshot__mode="never", collection__include__list=f"{name}.big",
                              producer__override__max__request__size=str(8 * MB),
                              topic__creation__default__max__message__bytes=str(8 * MB))
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    pymongo.MongoClient(mongo_rs.uri)[name].big.insert_one({"_id": 1, "a": "x" * (3 * MB)})
    events = wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.big", 1, timeout=60)
    running.finish()
    assert len(events[0].value) > 3 * MB
    assert json.loads(json.loads(events[0].value)["after"])["a"] == "x" * (3 * MB)
