"""Errors a user reads (Recent errors, the activity log, the API, Connect's trace) are sentences with BSON values
as relaxed Extended JSON: never pymongo's "full error: RawBSONDocument(b'…')" nor a Python {'_data': …} repr."""

from __future__ import annotations

import os
import re
import time

import bson
import pymongo
import pytest
from bson.raw_bson import RawBSONDocument
from pymongo.errors import OperationFailure

from connectors.mongodb.stream import skipped_event_text
from devstack.mongo import start_replica_set
from tests.integration.pipeline_harness import RunningConnector, connector_config, wait_for_events

pytestmark = pytest.mark.integration


@pytest.fixture
def quiet_replica_set():
    """A replica set of the test's own with no periodic no-op writes: the clean stop commits the stream's latest
    position, which stays the captured event's token only while nothing else enters the oplog."""
    if os.environ.get("MONGODB_URI"):
        pytest.skip("needs an emulated replica set without periodic no-op writes")
    handle = start_replica_set(members=1, noop_interval=0)
    yield handle
    handle.stop()


def test_a_resume_token_the_stream_cannot_find_is_reported_as_a_sentence(stack, quiet_replica_set, unique_name):
    """capture.target changed from one database to another: the stored token names an event the new stream does
    not contain (280); the connector fails with what happened and what to do, the token as Extended JSON."""
    prefix = "e" + unique_name.replace("-", "")[-10:]
    mongo_rs = quiet_replica_set
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=10_000)
    for database in ("a", "b"):
        config = connector_config(prefix, mongo_rs.uri, capture__scope="database", capture__target=prefix + database,
                                  snapshot__mode="never")
        running = RunningConnector(config, stack.kafka_bootstrap).start()
        if database == "a":
            running.wait_streaming(60)
            client[prefix + "a"]["c"].insert_one({"_id": 1})
            wait_for_events(stack.kafka_bootstrap, f"{prefix}.{prefix}a.c", 1, 60)
            running.finish()
            continue
        pipeline = running.pipeline(60)
        client[prefix + "b"]["c"].insert_one({"_id": 2})  # an event after the token: the server sees it is missing
        deadline = time.monotonic() + 60
        while pipeline.metrics.phase != "failed":
            assert time.monotonic() < deadline, "the connector did not fail"
            time.sleep(0.1)
        assert running.finish() == {"rs0": "failed"}
    client.close()
    assert re.fullmatch(
        r'MongoDB cannot resume the change stream from the stored resume token \{"_data": "82[0-9A-F]+"\}: the '
        r"stream no longer contains the event it names \(ChangeStreamFatalError, code 280\), for example because "
        r"capture\.scope or capture\.target changed since it was stored\. Reset the connector's offset to start "
        r"from now, or take a new snapshot\.",
        pipeline.metrics.last_error,
    ), pipeline.metrics.last_error


def test_the_warning_for_a_skipped_oversized_event_writes_its_values_as_extended_json():
    details = RawBSONDocument(bson.encode({
        "ok": 0.0, "code": 10334, "codeName": "BSONObjectTooLarge",
        "errmsg": "Executor error during getMore :: caused by :: BSONObj size: 16793600 (0x1004000) is invalid",
    }))
    error = OperationFailure(details["errmsg"], 10334, details)
    event = {"operationType": "update", "ns": {"db": "shop", "coll": "orders"}, "documentKey": {"_id": 7},
             "clusterTime": bson.Timestamp(1700000000, 3)}
    assert skipped_event_text(event, error) == (
        "Skipped a change event (update) of shop.orders over MongoDB's 16 MB limit (message.too.large.policy=skip): "
        'document key {"_id": 7}, cluster time {"$timestamp": {"t": 1700000000, "i": 3}}. MongoDB said: Executor '
        "error during getMore :: caused by :: BSONObj size: 16793600 (0x1004000) is invalid (BSONObjectTooLarge, "
        "code 10334)."
    )
