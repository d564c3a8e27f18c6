"""Verify against the MongoDB replica set (the emulator, or MONGODB_URI), a running connector and Kafka
(docs/verify.md): a topic corrupted on purpose is named key by key; a run under a concurrent write workload finds
nothing."""

from __future__ import annotations

import time

import pytest
from pymongo import MongoClient

from bench.write_load import DOCUMENT_OPS, Workload, mongo_writer
from connectors.core.verify import Verifier, VerifyOptions
from connectors.mongodb import verify as mongo_verify
from tests.integration.pipeline_harness import RunningConnector, connector_config, wait_for_events
from tests.verify_corruption import after_of, found, latest_event, produce, with_after
from tests.verify_workload import STRAY_KEY, assert_no_false_alarm, verify_repeatedly

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
    """Inserts, updates and deletes at 200 writes/s for 20 s while Verify runs again and again: no run reports a
    difference; a stray record produced into the topic meanwhile is then named, alone."""
    bootstrap = stack.kafka_bootstrap
    name = "mg" + unique_name.replace("-", "")[-12:]
    keys = 3000
    client = MongoClient(mongo_rs.uri)
    client[name]["hot"].insert_many([{"_id": n, "v": 0, "note": "n"} for n in range(keys)])
    config = connector_config(name, mongo_rs.uri, **{"collection.include.list": f"{name}.hot"})
    topic = f"{name}.{name}.hot"
    running = RunningConnector(config, bootstrap).start()
    try:
        wait_for_events(bootstrap, topic, keys, timeout=120)
        _, value = latest_event(bootstrap, topic, key_of(0))  # the snapshot's event: a position long covered
        with Workload(mongo_writer(mongo_rs.uri, name), keys, per_second=200, ops=DOCUMENT_OPS) as load:
            reports = verify_repeatedly(lambda: run_verify(config, bootstrap, chunk_size=500), seconds=20)
            produce(bootstrap, topic, key_of(STRAY_KEY), with_after(value, {**after_of(value), "_id": STRAY_KEY}))
            corrupted = run_verify(config, bootstrap, chunk_size=500)
    finally:
        running.stop.set()
        running.thread.join(60)
        client.close()
    assert_no_false_alarm(reports, load, min_rows=keys // 3)
    assert found(corrupted) == {f'{{"id":"{STRAY_KEY}"}}': "extra"}, corrupted.to_json()


def test_an_update_looked_up_after_a_later_write_is_compared_again_not_reported(mongo_rs, stack, unique_name):
    """With updateLookup (the default), an update's event carries the document as it is when the event is built: an
    event at or before Verify's view can hold a write made after the view, before that write's own event reaches
    the topic, so nothing in the topic marks the key as changed since. Here the topic gets such an event (v 2,
    placed at the snapshot's position, while the source holds v 1), and the write it anticipates (v 2) is made as
    the view's first chunk has been read: the key is compared again in a later view, where it agrees."""
    bootstrap = stack.kafka_bootstrap
    name = "mg" + unique_name.replace("-", "")[-12:]
    client = MongoClient(mongo_rs.uri)
    items = client[name]["items"]
    items.insert_many([{"_id": n, "v": 1} for n in range(1, 4)])
    config = connector_config(name, mongo_rs.uri, **{"collection.include.list": f"{name}.items"})
    topic = f"{name}.{name}.items"
    running = RunningConnector(config, bootstrap).start()
    written = []

    def write_after_the_view(progress: dict) -> None:
        if not written:
            written.append(items.update_one({"_id": 2}, {"$set": {"v": 2}}).modified_count)

    try:
        wait_for_events(bootstrap, topic, 3)
        _, value = latest_event(bootstrap, topic, key_of(2))
        produce(bootstrap, topic, key_of(2), with_after(value, {**after_of(value), "v": 2}))
        report = Verifier(config, mongo_verify.partitions(config), bootstrap, VerifyOptions(chunk_size=7),
                          on_progress=write_after_the_view).run()
    finally:
        running.stop.set()
        running.thread.join(60)
        client.close()
    assert written == [1]
    assert report.mismatched == 0 and report.rechecked == 1, report.to_json()
    assert [view["round"] for view in report.positions] == [1, 2], report.positions


def test_a_snapshot_transaction_the_server_ended_fails_the_run_with_a_sentence(mongo_rs, stack, unique_name,
                                                                              monkeypatch):
    """Verify reads a replica set in one snapshot transaction; a server that aborts it (past its
    transactionLifetimeLimitSeconds, here the emulator's cut to 0.5 s) fails the run with a sentence saying so, not
    with the driver's NoSuchTransaction trace."""
    from connectors import ConnectorError
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
        # chunks read one at a time (no rows read ahead): the later ones after the transaction's end
        options = VerifyOptions(chunk_size=7, read_ahead_chars=1)
        verifier = Verifier(config, mongo_verify.partitions(config), bootstrap, options,
                            on_progress=outlive_the_transaction)
        with pytest.raises(ConnectorError, match="ended Verify's snapshot transaction .* transactionLifetimeLimit"):
            verifier.run()
    finally:
        running.stop.set()
        running.thread.join(60)
        client.close()


def test_a_quiet_connector_without_heartbeats_verifies(mongo_rs, stack, unique_name):
    """A connector whose captured collections see no writes commits no new position (no heartbeats), so its offset
    stays at its last event, before the cluster time Verify reads at; writes elsewhere in the cluster move that
    time on. Verify proves from the source's own change stream that nothing the connector captures happened in
    between, and compares without waiting for the connector."""
    bootstrap = stack.kafka_bootstrap
    name = "mg" + unique_name.replace("-", "")[-12:]
    client = MongoClient(mongo_rs.uri)
    items = client[name]["items"]
    items.insert_many([{"_id": n, "qty": n} for n in range(1, 31)])
    config = connector_config(name, mongo_rs.uri, **{"collection.include.list": f"{name}.items",
                                                     "heartbeat.interval.ms": 0})
    running = RunningConnector(config, bootstrap).start()
    try:
        topic = f"{name}.{name}.items"
        wait_for_events(bootstrap, topic, 30)
        items.update_one({"_id": 3}, {"$set": {"qty": 33}})
        wait_for_events(bootstrap, topic, 31)
        client[name]["elsewhere"].insert_many([{"_id": n} for n in range(5)])  # not captured: the cluster moves on
        verifier = Verifier(config, mongo_verify.partitions(config), bootstrap,
                            VerifyOptions(chunk_size=7, wait_seconds=20))
        report = verifier.run()
    finally:
        running.stop.set()
        running.thread.join(60)
        client.close()
    assert report.mismatched == 0, report.to_json()
    assert report.rows == 30
    assert report.waited < 15


def test_the_quiet_check_waits_for_a_connector_behind_a_captured_change(mongo_rs, unique_name):
    """The check that lets a quiet connector verify: a position followed by a change to a captured collection before
    the view is not covered; one followed only by changes elsewhere is."""
    from connectors.mongodb.position import MongoPosition

    name = "mg" + unique_name.replace("-", "")[-12:]
    client = MongoClient(mongo_rs.uri)
    database = client[name]
    database["items"].insert_one({"_id": 0})
    positions = []
    with database.watch() as stream:
        for collection, key in (("items", 1), ("elsewhere", 1), ("items", 2), ("elsewhere", 2)):
            database[collection].insert_one({"_id": key})
        while len(positions) < 4:
            change = stream.try_next()
            if change is not None:
                positions.append(MongoPosition(change["_id"], change["clusterTime"]))
    config = connector_config(name, mongo_rs.uri, **{"collection.include.list": f"{name}.items"})
    (partition,) = mongo_verify.partitions(config)
    view = partition.open_view()
    try:
        after_first_item, after_last_item = positions[0], positions[2]
        assert not view.reached(after_first_item)  # the second item's insert is still to capture
        assert view.reached(after_last_item)  # only a collection not captured changed since
    finally:
        view.close()
        partition.close()
        client.close()


def test_verify_right_after_a_snapshot_of_an_idle_replica_set(stack, unique_name):
    """On a replica set nobody writes to, a view reads at the cluster time of the last write, which the snapshot's
    events (stamped with the wall-clock time each document was read) are past, and every view of the run reads at
    that same time until the server's periodic no-op (10 s on a real server) moves it. Documents read while the set
    wrote nothing after the view's time are the view's own: Verify finds them in the topic."""
    from devstack.mongo import start_replica_set

    handle = start_replica_set(members=3, election_timeout=0.3, noop_interval=0)  # no no-op writes: idle for good
    bootstrap = stack.kafka_bootstrap
    name = "mg" + unique_name.replace("-", "")[-12:]
    client = MongoClient(handle.uri)
    try:
        client[name]["items"].insert_many([{"_id": n, "qty": n} for n in range(1, 31)])
        last_write = client.admin.command("hello")["lastWrite"]["opTime"]["ts"]
        while time.time() < last_write.time + 1.2:  # the snapshot reads in a later second than the last write
            time.sleep(0.1)
        config = connector_config(name, handle.uri, **{"collection.include.list": f"{name}.items",
                                                         "heartbeat.interval.ms": 0})
        running = RunningConnector(config, bootstrap).start()
        try:
            wait_for_events(bootstrap, f"{name}.{name}.items", 30)
            report = Verifier(config, mongo_verify.partitions(config), bootstrap,
                              VerifyOptions(chunk_size=7, wait_seconds=20)).run()
        finally:
            running.stop.set()
            running.thread.join(60)
        assert client.admin.command("hello")["lastWrite"]["opTime"]["ts"] == last_write, "the set was written to"
    finally:
        client.close()
        handle.stop()
    assert report.rows == 30 and report.mismatched == 0, report.to_json()
