"""The latest-state template: applies c/u/d/r, tombstones and patch updates in source order, whatever the
partitions, duplicates and gaps; equals MongoDB's own state after a real pipeline ran a mixed workload."""

from __future__ import annotations

import json
import random
import time

import pymongo
import pytest
from bson import Decimal128, Int64, json_util

from sparkjobs.events import parse_events
from sparkjobs.latest_state import latest_state
from sparkjobs.topics import TopicSource
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import RunningConnector, connector_config
from tests.spark.workload import Clock, Collection, create_topics, encode, key_id, oid, produce

pytestmark = pytest.mark.integration


def scrambled_workload(rng: random.Random) -> Collection:
    """Snapshot, then updates as patches (no full documents), replaces, deletes, re-inserts, transactions."""
    coll = Collection("shop", "orders", Clock())
    coll.docs.update({i: {"_id": i, "qty": i, "tags": ["a", "b", "c"], "meta": {"k": i}} for i in range(12)})
    records = coll.snapshot()
    txn = 100
    for step in range(120):
        live = sorted(coll.docs, key=str)
        choice = rng.random()
        if choice < 0.12 or not live:
            _id = oid(step) if step % 2 else f"s{step}"
            records.append(coll.insert({"_id": _id, "qty": step, "tags": ["x"] * (step % 4)}))
        elif choice < 0.6:
            _id = rng.choice(live)
            unset = ["meta.k"] if rng.random() < 0.3 and "k" in coll.docs[_id].get("meta", {}) else []
            truncate = [("tags", 1)] if rng.random() < 0.2 and len(coll.docs[_id].get("tags", [])) > 1 else []
            records.append(coll.update(_id, {"qty": Int64(step), f"f{step % 5}": step, "meta.t": step},
                                       unset=unset, truncate=truncate))
        elif choice < 0.7:
            _id = rng.choice(live)
            records.append(coll.replace({"_id": _id, "replaced": step, "price": Decimal128("9.99")}))
        elif choice < 0.85:
            _id = rng.choice(live)
            records.append(coll.delete(_id))
            if rng.random() < 0.4:  # deleted, then inserted again with the same _id
                records.append(coll.insert({"_id": _id, "again": step}))
        else:
            txn += 1
            coll.begin(txn)
            first, second = rng.choice(live), rng.choice(live)
            records.append(coll.update(first, {"txn": txn}))
            records.append(coll.update(second, {"txn2": txn}))
            records.append(coll.update(first, {"txn_last": txn}))
            coll.commit()
    coll.records = records
    return coll


@pytest.fixture(scope="module")
def scrambled(stack, request):
    """Events of a document spread over 3 partitions in shuffled order, with 30% produced twice."""
    rng = random.Random(9)
    coll = scrambled_workload(rng)
    prefix = f"spark.ls.{oid(random.randrange(1 << 40))}"  # not from the seeded rng: a new topic every run
    messages = encode(coll.records, prefix, **{"provide.transaction.metadata": True})
    topic = f"{prefix}.shop.orders"
    changes = [m for m in messages if m.topic == topic]
    # Keep each delete with its tombstone (a tombstone follows its delete in one partition), shuffle the rest.
    units, index = [], 0
    while index < len(changes):
        if index + 1 < len(changes) and changes[index + 1].value is None:
            units.append(changes[index : index + 2])
            index += 2
        else:
            units.append([changes[index]])
            index += 1
    units += [unit for unit in units if rng.random() < 0.3]  # duplicates
    rng.shuffle(units)
    ordered = [(message, partition) for unit in units for partition in [rng.randrange(3)] for message in unit]
    create_topics(stack.kafka_bootstrap, [topic], partitions=3)
    partitions = {id(m): p for m, p in ordered}
    produce(stack.kafka_bootstrap, [m for m, _ in ordered], partition_of=lambda _, m: partitions[id(m)])
    return {"topic": topic, "expected": coll.docs, "count": len(ordered)}


def test_duplicates_out_of_order_partitions_deletes_and_patches(spark, scrambled, stack):
    events = parse_events(TopicSource(topics=[scrambled["topic"]], bootstrap_servers=stack.kafka_bootstrap).read(spark))
    rows = latest_state(events, include_deleted=True).collect()
    live = {row.id: row for row in rows if not row.deleted}
    expected = scrambled["expected"]
    assert set(live) == {key_id(_id) for _id in expected}
    for _id, document in expected.items():
        row = live[key_id(_id)]
        assert json_util.loads(row.document) == document, _id
        assert row.complete and (row.db, row.collection) == ("shop", "orders")
    assert all(row.document is None for row in rows if row.deleted)
    assert sum(row.events for row in rows) == scrambled["count"]


def test_patches_without_the_earlier_state_build_an_incomplete_document(spark, stack, run_job, tmp_path):
    coll = Collection("shop", "people", Clock())
    records = [coll.insert({"_id": Int64(5), "name": "Ann", "age": 30}), coll.insert({"_id": 6, "name": "Bo"})]
    records += [coll.update(Int64(5), {"age": 31, "city": "Oslo"}), coll.update(Int64(5), {}, unset=["name"])]
    records += [coll.delete(6)]
    prefix = f"spark.inc.{oid(random.randrange(1 << 40))}"
    messages = encode(records, prefix)
    create_topics(stack.kafka_bootstrap, [messages[0].topic])
    produce(stack.kafka_bootstrap, messages)
    topic = messages[0].topic
    # Start after the inserts: document 5 is only known through its two updates; 6 through its delete.
    code, lines = run_job("latest_state", {
        "topics": [topic], "bootstrap_servers": stack.kafka_bootstrap,
        "starting_offsets": {topic: {"0": 2}}, "output_path": str(tmp_path / "state"), "include_deleted": True,
    })
    assert code == 0, lines[-1]
    result = lines[-1]
    assert result["status"] == "succeeded" and result["rows_in"] == 4
    state = {row.id: row for row in spark.read.parquet(str(tmp_path / "state")).collect()}
    assert set(state) == {"5", "6"}
    assert json.loads(state["5"].document) == {"_id": 5, "age": 31, "city": "Oslo"}  # _id from the key
    assert state["5"].complete is False and state["5"].last_op == "u"
    assert state["6"].deleted and state["6"].last_op == "d"
    # "keep deleted": rows_out counts every row written, the deleted document's too (it once said 1 of 2)
    assert result["rows_out"] == len(state) == 2
    assert [row[1] for row in result["preview"]["rows"]] == ["5", "6"]


def test_a_tombstone_alone_deletes_and_later_events_win(spark, stack):
    coll = Collection("shop", "gone", Clock())
    records = [coll.insert({"_id": 1, "v": 1}), coll.delete(1), coll.insert({"_id": 1, "v": 2})]
    prefix = f"spark.tomb.{oid(random.randrange(1 << 40))}"
    messages = encode(records, prefix)
    topic = messages[0].topic
    # As after compaction: the insert and the delete of the first life are gone, only the tombstone remains,
    # followed by the second life; document 2 has nothing but a tombstone.
    tombstone_of_2 = type(messages[0])(topic, b'{"id":"2"}', None)
    create_topics(stack.kafka_bootstrap, [topic])
    produce(stack.kafka_bootstrap, [messages[2], messages[3], tombstone_of_2])
    events = parse_events(TopicSource(topics=[topic], bootstrap_servers=stack.kafka_bootstrap).read(spark))
    rows = {row.id: row for row in latest_state(events, include_deleted=True).collect()}
    assert json.loads(rows["1"].document) == {"_id": 1, "v": 2} and not rows["1"].deleted
    assert rows["2"].deleted and rows["2"].last_op == "d"


# --- against MongoDB itself ------------------------------------------------------------------------


def _wait_for_key(bootstrap: str, topic: str, key_id_text: str, timeout: float = 60) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            records = read_topic(bootstrap, topic)
        except (KeyError, AssertionError):
            records = []
        if any(r.key and json.loads(r.key)["id"] == key_id_text for r in records):
            return records
        time.sleep(0.3)
    raise AssertionError(f"{topic}: no event for {key_id_text}")


def test_latest_state_job_equals_the_collection_after_a_real_pipeline(stack, mongo_rs, run_job, spark, tmp_path):
    name = f"sls{oid(random.randrange(1 << 40))}"[-14:]
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=10_000)
    coll = client[name].items
    coll.insert_many([
        {"_id": i, "n": Int64(i), "tags": ["a", "b", "c"], "sub": {"x": i, "y": [1, 2]}, "price": Decimal128("1.5")}
        for i in range(20)
    ])
    config = connector_config(name, mongo_rs.uri, database__include__list=name)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    try:
        running.wait_streaming()
        coll.insert_many([{"_id": f"new{i}", "n": i} for i in range(10)])
        coll.update_many({"_id": {"$lt": 10}}, {"$set": {"sub.x": -1, "flag": True}, "$inc": {"n": 100}})
        coll.update_many({"_id": {"$in": [1, 2, 3]}}, {"$unset": {"price": ""}, "$push": {"tags": "d"}})
        coll.update_one({"_id": 4}, {"$pop": {"tags": 1}})
        coll.replace_one({"_id": 5}, {"replaced": True})
        coll.delete_many({"_id": {"$in": [6, 7, "new3"]}})
        coll.insert_one({"_id": 7, "second_life": True})
        with client.start_session() as session, session.start_transaction():
            coll.update_one({"_id": 8}, {"$set": {"in_txn": 1}}, session=session)
            coll.delete_one({"_id": 9}, session=session)
            coll.insert_one({"_id": "txn", "v": 1}, session=session)
        coll.update_one({"_id": 8}, {"$rename": {"flag": "renamed"}})
        coll.insert_one({"_id": "marker"})
        topic = f"{name}.{name}.items"
        _wait_for_key(stack.kafka_bootstrap, topic, '"marker"')
    finally:
        running.finish()
    expected = {doc["_id"]: doc for doc in coll.find()}
    client.close()

    out = tmp_path / "items"
    code, lines = run_job("latest_state", {"topics": [topic], "output_path": str(out),
                                           "bootstrap_servers": stack.kafka_bootstrap})
    assert code == 0, lines[-1]
    state = {row.id: row for row in spark.read.parquet(str(out)).collect()}
    assert set(state) == {key_id(_id) for _id in expected}
    for _id, document in expected.items():
        assert json_util.loads(state[key_id(_id)].document) == document, _id
    result = lines[-1]
    assert result["rows_out"] == len(expected) and result["output_path"] == str(out)
    assert len(result["preview"]["rows"]) == len(expected) and "document" in result["preview"]["columns"]
    assert any(line.get("event") == "stage" for line in lines)
