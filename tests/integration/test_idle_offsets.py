"""A MongoDB run that captures no change still commits its stream position (at start, while idle and at a clean
stop), so a restart resumes there and gets every change written while it was down. Without it, the restart of a
`snapshot.mode=no_data` connector that had seen nothing streamed from a new "now" and skipped those changes."""

from __future__ import annotations

import json

import pytest
from pymongo import MongoClient

from tests.integration.pipeline_harness import RunningConnector, connector_config, values, wait_for_events

pytestmark = pytest.mark.integration

DOCS = 50


@pytest.mark.parametrize("mode", ["no_data", "never"])
def test_a_run_that_captured_nothing_resumes_where_it_stopped(stack, mongo_rs, unique_name, mode):
    database = f"idle_{mode}_{unique_name[-8:]}"
    client = MongoClient(mongo_rs.uri)
    client[database]["orders"].insert_one({"_id": -1})  # the collection exists; the run sees no change of it
    config = connector_config(unique_name, mongo_rs.uri, snapshot__mode=mode,
                              collection__include__list=f"{database}.orders")
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    running.finish()

    client[database]["orders"].insert_many([{"_id": i} for i in range(DOCS)])
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    try:
        records = wait_for_events(stack.kafka_bootstrap, f"{unique_name}.{database}.orders", DOCS, timeout=60)
    finally:
        running.finish()
    ids = sorted(json.loads(event["after"])["_id"] for event in values(records))
    assert ids == list(range(DOCS))
