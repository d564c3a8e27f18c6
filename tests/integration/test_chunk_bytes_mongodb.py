"""Snapshot chunks bounded in bytes (`snapshot.chunk.max.bytes`, core.snapshot.chunks.planned_chunk_rows) on
MongoDB: a collection of large documents is planned in chunks of fewer documents, and every document still arrives
once. Real Kafka, emulator (or MONGODB_URI)."""

from __future__ import annotations

import time

import pymongo
import pytest

from connectors.mongodb.pipeline import ReplicaSetPipeline
from connectors.mongodb.snapshots.chunks import document_bytes
from connectors.mongodb.topology import discover
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import RunningConnector, connector_config, wait_for_events

pytestmark = pytest.mark.integration

VALUE_BYTES = 20_000  # each document of `wide` holds about this much text
DOCUMENTS = 60


@pytest.fixture
def client(mongo_rs):
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=10_000)
    yield client
    client.close()


def snapshot(stack, mongo_rs, name: str, prefix: str, max_bytes: int, **extra) -> tuple[int, list[int]]:
    config = connector_config(prefix, mongo_rs.uri, database__include__list=name, snapshot__mode="initial_only",
                              snapshot__chunk__max__bytes=max_bytes, **extra)
    (replica_set,) = discover(config.mongo_client_options()).replica_sets
    pipeline = ReplicaSetPipeline(config, replica_set, stack.kafka_bootstrap)
    assert pipeline.run() == "snapshot-done"
    records = read_topic(stack.kafka_bootstrap, f"{prefix}.{name}.wide")
    return pipeline.snapshot_metrics.snapshot()["ChunksTotal"], sorted(int(r.key.split(b'"')[-2]) for r in records)


def test_a_collection_of_large_documents_is_planned_in_chunks_of_fewer_documents(stack, mongo_rs, client,
                                                                                  unique_name):
    name = "cb" + unique_name.replace("-", "")[-12:]
    client[name]["wide"].insert_many([{"_id": i, "body": f"{i:05d}" * (VALUE_BYTES // 5)}
                                      for i in range(1, DOCUMENTS + 1)])
    client[name]["narrow"].insert_many([{"_id": i, "n": i} for i in range(1, 501)])
    wide, narrow = document_bytes(client, f"{name}.wide"), document_bytes(client, f"{name}.narrow")
    assert VALUE_BYTES <= wide < 2 * VALUE_BYTES and 0 < narrow < 100
    limit = 5 * VALUE_BYTES + VALUE_BYTES // 2  # five documents and a half
    chunks, ids = snapshot(stack, mongo_rs, name, name, limit)
    assert ids == list(range(1, DOCUMENTS + 1))  # every document once
    assert chunks == DOCUMENTS // 5 + 1  # the narrow collection is one chunk; wide is chunks of five documents
    chunks, ids = snapshot(stack, mongo_rs, name, name + "x", 0)
    assert ids == list(range(1, DOCUMENTS + 1))
    assert chunks == 2  # bounded in documents only: one chunk each
    chunks, ids = snapshot(stack, mongo_rs, name, name + "y", 1000,
                           snapshot__include__collection__list=f"{name}.wide")
    assert ids == list(range(1, DOCUMENTS + 1))  # documents over the bound: a chunk each, none left out
    assert DOCUMENTS - 1 <= chunks <= DOCUMENTS  # splitVector may keep the last two together


def test_an_incremental_snapshot_of_large_documents_reads_windows_of_fewer_documents(stack, mongo_rs, client,
                                                                                     unique_name):
    name = "ci" + unique_name.replace("-", "")[-12:]
    client[name]["wide"].insert_many([{"_id": i, "body": f"{i:05d}" * (VALUE_BYTES // 5)}
                                      for i in range(1, DOCUMENTS + 1)])
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="no_data",
                              signal__data__collection=f"{name}.signals",
                              snapshot__chunk__max__bytes=5 * VALUE_BYTES + VALUE_BYTES // 2)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    try:
        running.wait_streaming()
        pipeline = running.pipeline()
        pipeline.request_incremental_snapshot([f"{name}.wide"])
        deadline = time.monotonic() + 60
        while not ((metrics := pipeline.snapshot_metrics.snapshot())["SnapshotKind"] == "incremental"
                   and not metrics["SnapshotRunning"]):
            assert time.monotonic() < deadline, metrics
            assert pipeline.metrics.phase != "failed", pipeline.metrics.last_error
            time.sleep(0.05)
        records = wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.wide", DOCUMENTS)
    finally:
        running.finish()
    assert sorted(int(r.key.split(b'"')[-2]) for r in records) == list(range(1, DOCUMENTS + 1))
    assert metrics["ChunksTotal"] == DOCUMENTS // 5  # windows of five documents, not incremental.snapshot.chunk.size
