"""Parsing every event format the connectors can produce, read with Spark's Kafka source (read_committed),
and the latest state rebuilt from each format equals the state the writes left in the collection."""

from __future__ import annotations

import pytest
from bson import Int64, json_util

from connectors.mongodb.events import KafkaMessage
from sparkjobs.events import parse_events
from sparkjobs.latest_state import latest_state
from sparkjobs.topics import TopicSource
from tests.spark.workload import Clock, Collection, create_topics, encode, key_id, oid, produce, transformer

pytestmark = pytest.mark.integration

VARIANTS = {
    "debezium": {},
    "debezium_schemas": {"schemas.enable": True},
    "debezium_2x": {"debezium.compatibility": "2"},
    "legacy": {"event.format": "legacy"},
    "legacy_schemas": {"event.format": "legacy", "schemas.enable": True},
    "flattened": {"event.format": "flattened", "flattened.add.fields": "op,source.ts_ms,db,collection"},
    "flattened_rewrite": {"event.format": "flattened", "flattened.delete.tombstone.handling.mode": "rewrite"},
    "transactions": {"provide.transaction.metadata": True},
    "no_tombstones": {"tombstones.on.delete": False},
}


def workload(collection: Collection) -> list:
    """A snapshot, then inserts, updates (set, unset, truncate, dotted paths), a replace, a transaction, a delete."""
    collection.docs.update({Int64(1): {"_id": Int64(1), "name": "Anne", "tags": [1, 2, 3], "addr": {"city": "X"}}})
    records = collection.snapshot()
    records += [
        collection.insert({"_id": oid(2), "name": "Bob", "n": Int64(5)}),
        collection.insert({"_id": "three", "name": "Cy"}),
        collection.update(Int64(1), {"name": "Anna", "addr.zip": "123"}, unset=["addr.city"], truncate=[("tags", 1)]),
        collection.update(oid(2), {"n": Int64(6)}, unset=["name"]),
        collection.replace({"_id": "three", "name": "Cyd", "v": 2}),
    ]
    collection.begin(7)
    records += [collection.update(Int64(1), {"in_txn": True}), collection.insert({"_id": 4, "four": 4.5})]
    collection.commit()
    records += [collection.delete(oid(2))]
    return records


@pytest.fixture(scope="module")
def produced(stack, request):
    run = request.node.name.split(".")[0][-4:] + oid(0).__class__().__str__()[-6:]
    expected, topics, counts = {}, {}, {}
    for variant, props in VARIANTS.items():
        prefix = f"spark.fmt.{variant}.{run}"
        flattened = props.get("event.format") == "flattened"
        collection = Collection("inventory", "customers", Clock(), full_update=flattened)
        messages = encode(workload(collection), prefix, **props)
        if variant == "transactions":
            messages += transformer(prefix, **props).heartbeat()
        names = sorted({message.topic for message in messages})
        create_topics(stack.kafka_bootstrap, names)
        # The aborted transaction repeats the first messages with other values: read_committed must skip them.
        aborted = [KafkaMessage(m.topic, m.key, b'{"aborted": true}') for m in messages[:3]]
        produce(stack.kafka_bootstrap, messages, aborted=aborted)
        topics[variant] = f"{prefix}.inventory.customers"
        expected[variant] = collection.docs
        counts[variant] = {name: sum(1 for m in messages if m.topic == name) for name in names}
    invalid = f"spark.fmt.invalid.{run}"
    create_topics(stack.kafka_bootstrap, [invalid])
    produce(stack.kafka_bootstrap, [KafkaMessage(invalid, b"k", b"not json"), KafkaMessage(invalid, None, b"[1,2]")])
    all_topics = sorted({t for c in counts.values() for t in c} | {invalid})
    return {"topics": topics, "expected": expected, "counts": counts, "invalid": invalid, "all": all_topics}


@pytest.fixture(scope="module")
def parsed(spark, produced, stack):
    source = TopicSource(topics=produced["all"], bootstrap_servers=stack.kafka_bootstrap)
    events = parse_events(source.read(spark)).persist()
    rows = {}
    for row in events.orderBy("topic", "partition", "offset").collect():
        rows.setdefault(row.topic, []).append(row)
    state = {}
    for row in latest_state(events).collect():
        state.setdefault(row.topic, {})[row.id] = row
    events.unpersist()
    return rows, state


def change_rows(parsed, produced, variant):
    return parsed[0][produced["topics"][variant]]


def test_read_committed_sees_exactly_the_committed_records(parsed, produced):
    rows, _ = parsed
    for counts in produced["counts"].values():
        for topic, count in counts.items():
            assert len(rows[topic]) == count, topic
            assert all(row.format != "flattened" or "aborted" not in row.value for row in rows[topic])


@pytest.mark.parametrize("variant", ["debezium", "debezium_schemas", "debezium_2x", "transactions"])
def test_debezium_envelope(parsed, produced, variant):
    rows = change_rows(parsed, produced, variant)
    assert [r.format for r in rows] == ["debezium"] * 9 + ["tombstone"]
    assert [r.op for r in rows] == ["r", "c", "c", "u", "u", "u", "u", "c", "d", None]
    assert all(r.schema_wrapped == (variant == "debezium_schemas") for r in rows[:-1])
    snapshot, insert, update = rows[0], rows[1], rows[3]
    assert snapshot.snapshot == "last" and insert.snapshot == "false"
    assert insert.id == key_id(oid(2)) == '{"$oid": "000000000000000000000002"}'
    assert rows[2].id == '"three"' and snapshot.id == "1"
    assert json_util.loads(insert.after) == {"_id": oid(2), "name": "Bob", "n": Int64(5)}
    assert insert.after_fields["name"] == "Bob"
    # Debezium 3.x's source block has no rs; debezium.compatibility=2 keeps it
    rs = "rs0" if variant == "debezium_2x" else None
    assert (insert.db, insert.collection, insert.rs) == ("inventory", "customers", rs)
    assert insert.source_ts_ms == 1_700_000_000_000 and insert.ord == 2
    assert insert.source_ts.year == 2023 and insert.ts_ms > insert.source_ts_ms
    assert update.after is None and update.before is None
    assert update.update_description.removed_fields == ["addr.city"]
    assert update.update_description.truncated_arrays[0].asDict() == {"field": "tags", "size": 1}
    assert update.updated_fields == {"name": "Anna", "addr.zip": "123"}
    in_txn = rows[6]
    assert in_txn.txn_number == 7 and in_txn.lsid is not None
    assert rows[6].source_ts_ms == rows[7].source_ts_ms and rows[6].ord == rows[7].ord
    if variant == "transactions":
        assert (in_txn.transaction.total_order, rows[7].transaction.total_order) == (1, 2)
        assert in_txn.transaction.id.endswith(":7")
    else:
        assert in_txn.transaction is None
    tombstone = rows[-1]
    assert tombstone.is_tombstone and tombstone.id == insert.id and tombstone.op is None


def test_transaction_topic_and_heartbeats(parsed, produced):
    rows, _ = parsed
    prefix = produced["topics"]["transactions"].rsplit(".inventory.customers", 1)[0]
    txn = rows[f"{prefix}.transaction"]
    assert [(r.format, r.txn_status) for r in txn] == [("transaction", "BEGIN"), ("transaction", "END")]
    assert txn[1].txn_event_count == 2 and txn[1].txn_id == txn[0].id
    assert txn[1].txn_data_collections[0].asDict() == {"data_collection": "inventory.customers", "event_count": 2}
    heartbeat = rows[f"__debezium-heartbeat.{prefix}"]
    assert [r.format for r in heartbeat] == ["heartbeat"] and heartbeat[0].ts_ms > 0


@pytest.mark.parametrize("variant", ["legacy", "legacy_schemas"])
def test_legacy_patch_and_filter(parsed, produced, variant):
    rows = change_rows(parsed, produced, variant)
    assert [r.format for r in rows] == ["legacy"] * 9 + ["tombstone"]
    update, replace, delete = rows[3], rows[5], rows[8]
    assert json_util.loads(update.patch) == {
        "$set": {"name": "Anna", "addr.zip": "123"},
        "$unset": {"addr.city": True},
        "$push": {"tags": {"$each": [], "$slice": 1}},
    }
    assert json_util.loads(update.filter) == {"_id": Int64(1)}
    assert json_util.loads(replace.patch) == {"_id": "three", "name": "Cyd", "v": 2}
    assert delete.op == "d" and delete.after is None and json_util.loads(delete.filter) == {"_id": oid(2)}


def test_flattened_documents(parsed, produced):
    rows = change_rows(parsed, produced, "flattened")
    assert [r.format for r in rows] == ["flattened"] * 8 + ["tombstone"]
    assert [r.op for r in rows[:8]] == ["r", "c", "c", "u", "u", "u", "u", "c"]
    insert = rows[1]
    assert (insert.db, insert.collection, insert.source_ts_ms) == ("inventory", "customers", 1_700_000_000_000)
    assert json_util.loads(insert.after)["n"] == 5  # relaxed Extended JSON
    rewrite = change_rows(parsed, produced, "flattened_rewrite")
    assert [r.format for r in rewrite] == ["flattened"] * 9  # rewrite: the delete is a document, no tombstone
    assert rewrite[-1].op == "d" and [r.op for r in rewrite[:-1]] == [None] * 8


def test_records_that_are_not_json_objects_are_invalid(parsed, produced):
    rows = parsed[0][produced["invalid"]]
    assert [(r.format, r.key, r.id) for r in rows] == [("invalid", "k", "k"), ("invalid", None, None)]


def test_no_tombstones_option(parsed, produced):
    rows = change_rows(parsed, produced, "no_tombstones")
    assert [r.format for r in rows] == ["debezium"] * 9


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_latest_state_of_every_format_equals_the_collection(parsed, produced, variant):
    state = parsed[1][produced["topics"][variant]]
    expected = produced["expected"][variant]
    assert set(state) == {key_id(_id) for _id in expected}
    for _id, document in expected.items():
        row = state[key_id(_id)]
        assert json_util.loads(row.document) == document, variant
        assert row.complete and not row.deleted
        assert (row.db, row.collection) == ("inventory", "customers") or variant == "flattened_rewrite"
