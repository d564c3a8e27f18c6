"""The transformer stage end to end: raw change stream events in, Kafka messages out."""

from __future__ import annotations

import datetime
import json

from bson import Int64, Timestamp

from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.records import ChangeRecord, Namespace, SnapshotMarker
from connectors.mongodb.transformer import Transformer

BASE = {"name": "c", "topic.prefix": "fulfillment", "mongodb.connection.string": "mongodb://h1"}
LSID = {"id": "s"}


def transformer(state=None, **props) -> Transformer:
    config = ConnectorConfig.from_properties({**BASE, **props})
    return Transformer(config, "rs0", clock=lambda: 1700000000.5, transaction_state=state)


def event(operation_type="insert", coll="customers", txn=None, inc=1, **fields) -> ChangeRecord:
    raw = {
        "_id": {"_data": f"82{inc:04d}"},
        "operationType": operation_type,
        "clusterTime": Timestamp(1700000000, inc),
        "wallTime": datetime.datetime(2023, 11, 14, 22, 13, 20),
        "ns": {"db": "inventory", "coll": coll},
        "documentKey": {"_id": Int64(1)},
    }
    if operation_type in ("insert", "replace"):
        raw["fullDocument"] = {"_id": Int64(1), "name": "Anne", "ssn": "1"}
    if operation_type == "update":
        raw["updateDescription"] = {"updatedFields": {"name": "Bea", "ssn": "2"}, "removedFields": []}
    if txn is not None:
        raw["lsid"], raw["txnNumber"] = LSID, Int64(txn)
    raw.update(fields)
    return ChangeRecord.from_change_event(raw)


def values(messages) -> list:
    return [json.loads(m.value) if m.value is not None else None for m in messages]


def test_insert_becomes_one_change_event():
    messages = transformer().transform(event())
    assert [(m.topic, m.kind) for m in messages] == [("fulfillment.inventory.customers", "change")]
    assert values(messages)[0]["op"] == "c"


def test_filtered_records_produce_nothing():
    t = transformer(**{"collection.exclude.list": r"inventory\.customers", "skipped.operations": "d"})
    assert t.transform(event()) == []
    assert not t.accepts(event())
    assert t.transform(event("delete", coll="orders")) == []
    assert t.transform(event("insert", coll="orders"))


def test_field_rules_apply_to_documents_descriptions_and_the_legacy_filter():
    t = transformer(
        **{
            "field.exclude.list": "inventory.customers.ssn",
            "field.renames": "inventory.customers.name:full_name",
            "field.mask.hash.SHA-256.with.salt.s": "inventory.customers._id",
            "event.format": "debezium",
        }
    )
    (insert,) = values(t.transform(event()))
    after = json.loads(insert["after"])
    assert "ssn" not in after and after["full_name"] == "Anne"
    assert len(after["_id"]) == 64  # hashed
    (update,) = values(t.transform(event("update")))
    assert update["updateDescription"]["updatedFields"] == '{"full_name": "Bea"}'

    legacy = transformer(**{"field.mask.redact": "inventory.customers._id", "event.format": "legacy"})
    delete = values(legacy.transform(event("delete")))[0]
    assert delete["filter"] == '{"_id": "********"}'


def test_keys_are_not_masked():
    t = transformer(**{"field.mask.redact": "inventory.customers._id"})
    assert json.loads(t.transform(event())[0].key) == {"id": "1"}


def test_transactions_produce_boundaries_in_order():
    t = transformer(**{"provide.transaction.metadata": "true"})
    first = t.transform(event(txn=1, inc=1))
    second = t.transform(event(txn=1, coll="orders", inc=1))
    after = t.transform(event(inc=2))
    assert [m.kind for m in first] == ["transaction", "change"]
    assert [m.kind for m in second] == ["change"]
    assert [m.kind for m in after] == ["transaction", "change"]
    begin, created = values(first)
    assert begin["status"] == "BEGIN" and begin["ts_ms"] == 1700000000000
    assert created["transaction"] == {"id": '{"id": "s"}:1', "total_order": 1, "data_collection_order": 1}
    end = values(after)[0]
    assert end["status"] == "END" and end["event_count"] == 2
    assert end["data_collections"] == [
        {"data_collection": "inventory.customers", "event_count": 1},
        {"data_collection": "inventory.orders", "event_count": 1},
    ]
    assert values(after)[1]["transaction"] is None


def test_debezium_2_compatibility_names_data_collections_with_the_replica_set():
    t = transformer(**{"provide.transaction.metadata": "true", "debezium.compatibility": "2"})
    t.transform(event(txn=1, inc=1))
    end = values(t.transform(event(inc=2)))[0]
    assert end["data_collections"] == [{"data_collection": "rs0.inventory.customers", "event_count": 1}]


def test_idle_closes_the_open_transaction():
    t = transformer(**{"provide.transaction.metadata": "true"})
    t.transform(event(txn=4))
    assert t.transaction_state()["total"] == 1
    (end,) = t.idle()
    assert json.loads(end.value)["status"] == "END"
    assert t.idle() == []
    assert t.transaction_state() is None


def test_transaction_state_is_restored():
    first = transformer(**{"provide.transaction.metadata": "true"})
    first.transform(event(txn=9))
    resumed = transformer(first.transaction_state(), **{"provide.transaction.metadata": "true"})
    messages = resumed.transform(event(txn=9, coll="orders"))
    assert [m.kind for m in messages] == ["change"]
    assert values(messages)[0]["transaction"]["total_order"] == 2


def test_without_transaction_metadata():
    t = transformer()
    messages = t.transform(event(txn=1))
    assert [m.kind for m in messages] == ["change"]
    assert values(messages)[0]["transaction"] is None
    assert values(messages)[0]["source"]["txnNumber"] == 1
    assert t.idle() == [] and t.transaction_state() is None


def test_snapshot_reads_are_outside_transactions():
    t = transformer(**{"provide.transaction.metadata": "true"})
    read = ChangeRecord.snapshot_read(
        Namespace("inventory", "customers"), {"_id": 1}, cluster_time=Timestamp(1, 1), marker=SnapshotMarker.LAST
    )
    messages = t.transform(read)
    assert [m.kind for m in messages] == ["change"]
    assert values(messages)[0]["source"]["snapshot"] == "last"


def test_heartbeat_closes_a_transaction_first():
    t = transformer(**{"provide.transaction.metadata": "true"})
    t.transform(event(txn=1))
    assert [m.kind for m in t.heartbeat()] == ["transaction", "heartbeat"]
    assert [m.kind for m in t.heartbeat()] == ["heartbeat"]


def test_delete_and_tombstone():
    messages = transformer().transform(event("delete"))
    assert [m.kind for m in messages] == ["change", "tombstone"]


def test_a_snapshot_rows_key_and_after_are_those_of_its_event():
    """Verify compares a snapshot read's key and `after` (Transformer.snapshot_row) without building its event:
    they are the event's own, whatever the field rules, key schemas, event format and document."""
    from bson import Decimal128, ObjectId

    from connectors.core.verify_events import read_event, row_state

    documents = [{"_id": Int64(1), "name": "Anne", "ssn": "1", "address": {"geo": [1.5, 2]}},
                 {"_id": ObjectId("64b7f1f1f1f1f1f1f1f1f1f1"), "name": "Bé 😀", "n": Decimal128("1.10"),
                  "when": datetime.datetime(2023, 1, 2, 3, 4, 5, 6000), "nan": float("nan"), "big": 2**62},
                 {"_id": "text-key", "nested": {"a": [{"b": None}]}}, {"_id": {"compound": 1, "k": "x"}}]
    settings = [{}, {"field.exclude.list": "inventory.customers.ssn,inventory.customers.address.geo",
                     "field.renames": "inventory.customers.name:full_name"},
                {"key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"},
                {"event.format": "legacy"}, {"collection.exclude.list": "inventory.customers"}]
    for props in settings:
        stage = transformer(**props)
        for document in documents:
            read = ChangeRecord.snapshot_read(Namespace("inventory", "customers"), document,
                                              cluster_time=Timestamp(1700000000, 1))
            messages = stage.transform(read)
            row = stage.snapshot_row(read)
            if not messages:
                assert row is None, props
                continue
            (message,) = messages
            assert row is not None and row[0] == message.key, props
            assert row_state(row[1]) == row_state(read_event(message.value).after), (props, document)
