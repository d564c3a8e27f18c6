"""Verify against the MongoDB replica set (the emulator, or MONGODB_URI), a running connector and Kafka
(docs/verify.md): a topic corrupted on purpose is named key by key; a run under a concurrent write workload finds
nothing."""

from __future__ import annotations

import time

import pytest
from pymongo import MongoClient

from connectors.core.verify import Verifier, VerifyOptions
from connectors.mongodb import verify as mongo_verify
from tests.integration.pipeline_harness import RunningConnector, connector_config, wait_for_events
from tests.verify_corruption import after_of, found, latest_event, produce, with_after
from tests.verify_workload import Workload

pytestmark = [pytest.mark.integration]


def run_verify(config, bootstrap, chunk_size=7):
    return Verifier(config, mongo_verify.partitions(config), bootstrap, VerifyOptions(chunk_size=chunk_size)).run()


def key_of(number: int) -> dict:
    return {"id": str(number)}


def test_verify_names_exactly_the_keys_a_corrupted_topic_gets_wrong(mongo_rs, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "mg" + unique_name.replace("-", "")[-12:]
    client = MongoClient(mongo_rs.uri)
    items = client[name]["items"]
    items.insert_many([{"_id": n, "name": f"item {n}", "qty": n * 10} for n in range(1, 31)])
    config = connector_config(name, mongo_rs.uri, **{"collection.include.list": f"{name}.items",
                                                     "field.renames": f"{name}.items.name:label"})
    topic = f"{name}.{name}.items"
    running = RunningConnector(config, bootstrap).start()
    try:
        wait_for_events(bootstrap, topic, 30)
        items.delete_one({"_id": 5})
        items.update_one({"_id": 9}, {"$set": {"qty": 1}})
        wait_for_events(bootstrap, topic, 32, timeout=60)  # events, not counting the tombstone

        clean = run_verify(config, bootstrap)
        assert clean.mismatched == 0, clean.to_json()
        assert clean.rows == 29

        _, value7 = latest_event(bootstrap, topic, key_of(7))
        _, value9 = latest_event(bootstrap, topic, key_of(9))
        assert "label" in after_of(value7)  # renamed in the topic: compared renamed
        produce(bootstrap, topic, key_of(1000), with_after(value7, {**after_of(value7), "_id": 1000}))  # stray
        produce(bootstrap, topic, key_of(5), with_after(value9, {**after_of(value9), "_id": 5}))  # a deleted key
        produce(bootstrap, topic, key_of(7), with_after(value7, {**after_of(value7), "qty": 71}))  # changed value

        report = run_verify(config, bootstrap)
    finally:
        running.stop.set()
        running.thread.join(60)
        client.close()
    assert found(report) == {'{"id":"1000"}': "extra", '{"id":"5"}': "extra", '{"id":"7"}': "different"}
    assert (report.extra, report.different, report.missing) == (2, 1, 0)
    assert next(m for m in report.mismatches if m.kind == "different").fields == {"qty": [70, 71]}
    assert report.positions[0]["source"]["cluster_time"]


def test_a_concurrent_write_workload_raises_no_false_alarm(mongo_rs, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "mg" + unique_name.replace("-", "")[-12:]
    keys = 3000
    client = MongoClient(mongo_rs.uri)
    client[name]["hot"].insert_many([{"_id": n, "v": 0, "note": "n"} for n in range(keys)])
    config = connector_config(name, mongo_rs.uri, **{"collection.include.list": f"{name}.hot"})
    topic = f"{name}.{name}.hot"
    running = RunningConnector(config, bootstrap).start()

    def open_writer():
        hot = MongoClient(mongo_rs.uri)[name]["hot"]
        writes = {
            "insert": lambda key: hot.update_one({"_id": key}, {"$inc": {"v": 1}}, upsert=True),
            "update": lambda key: hot.update_one({"_id": key}, {"$inc": {"v": 1}, "$set": {"note": str(key)}}),
            "delete": lambda key: hot.delete_one({"_id": key}),
        }
        return lambda op, key: writes[op](key)

    try:
        wait_for_events(bootstrap, topic, keys, timeout=120)
        with Workload(open_writer, keys) as load:
            reports = [run_verify(config, bootstrap, chunk_size=500) for _ in range(3)]
        assert load.writes > 0
    finally:
        running.stop.set()
        running.thread.join(60)
        client.close()
    print(f"workload {load.rate:.0f} writes/s during Verify; " + "; ".join(r.summary() for r in reports))
    for report in reports:
        assert report.rows > 0
        assert report.mismatched == 0, report.to_json()


def test_a_snapshot_transaction_the_server_ended_fails_the_run_with_a_sentence(mongo_rs, stack, unique_name,
                                                                              monkeypatch):
    """Verify reads a replica set in one snapshot transaction; a server that aborts it (past its
    transactionLifetimeLimitSeconds, here the emulator's cut to 0.5 s) fails the run with a sentence saying so, not
    with the driver's NoSuchTransaction trace."""
    from connectors.errors import ConnectorError
    from devstack.mongo import replset

    if not hasattr(mongo_rs, "stop"):
        pytest.skip("the transaction lifetime is cut in the emulator")
    bootstrap = stack.kafka_bootstrap
    name = "mg" + unique_name.replace("-", "")[-12:]
    client = MongoClient(mongo_rs.uri)
    client[name]["items"].insert_many([{"_id": n, "qty": n} for n in range(1, 31)])
    config = connector_config(name, mongo_rs.uri, **{"collection.include.list": f"{name}.items"})
    running = RunningConnector(config, bootstrap).start()
    slept = []

    def outlive_the_transaction(progress: dict) -> None:
        # the emulator's reaper (every 5 s) aborts the transaction by the next chunk's read, if it has not yet
        if not slept:
            slept.append(progress)
            time.sleep(12)

    try:
        wait_for_events(bootstrap, f"{name}.{name}.items", 30)
        monkeypatch.setattr(replset, "TXN_LIFETIME", 0.5)
        verifier = Verifier(config, mongo_verify.partitions(config), bootstrap, VerifyOptions(chunk_size=7),
                            on_progress=outlive_the_transaction)
        with pytest.raises(ConnectorError, match="ended Verify's snapshot transaction .* transactionLifetimeLimit"):
            verifier.run()
    finally:
        running.stop.set()
        running.thread.join(60)
        client.close()
