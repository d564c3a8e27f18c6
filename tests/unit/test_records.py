"""ChangeRecord: built from change stream events exactly as pymongo returns them."""

from __future__ import annotations

import datetime

import pytest
from bson import Int64, ObjectId, Timestamp
from bson.binary import Binary

from connectors.mongodb.records import (
    DATA_OPERATION_TYPES,
    ChangeRecord,
    Heartbeat,
    Namespace,
    Operation,
    SnapshotMarker,
    TruncatedArray,
    UnsupportedChangeEvent,
    UpdateDescription,
)

TOKEN = {"_data": "8264E3A1B2000000012B022C0100296E5A1004"}
CLUSTER_TIME = Timestamp(1692639666, 1)
WALL_TIME = datetime.datetime(2023, 8, 21, 17, 41, 6, 512000)
LSID = {
    "id": Binary(b"\x14\x0e\xd8\x13\x35\xe0\x41\x74\x97\xf4\xec\x66\xce\x59\x47\xdb", 4),
    "uid": Binary(b"u" * 32, 0),
}


def event(operation_type: str, **fields) -> dict:
    base = {
        "_id": TOKEN,
        "operationType": operation_type,
        "clusterTime": CLUSTER_TIME,
        "wallTime": WALL_TIME,
        "ns": {"db": "inventory", "coll": "customers"},
        "documentKey": {"_id": Int64(1004)},
    }
    base.update(fields)
    return base


def test_insert():
    record = ChangeRecord.from_change_event(event("insert", fullDocument={"_id": Int64(1004), "name": "Anne"}))
    assert record.operation is Operation.CREATE
    assert record.namespace == Namespace("inventory", "customers")
    assert record.document_id == Int64(1004)
    assert record.full_document == {"_id": 1004, "name": "Anne"}
    assert record.cluster_time == CLUSTER_TIME
    assert record.wall_time == WALL_TIME
    assert record.resume_token == TOKEN
    assert record.source_operation == "insert"
    assert record.transaction_id is None
    assert not record.is_snapshot


def test_update_with_description_and_images():
    record = ChangeRecord.from_change_event(
        event(
            "update",
            updateDescription={
                "updatedFields": {"name": "Anne Marie", "tags.1": "x"},
                "removedFields": ["nickname"],
                "truncatedArrays": [{"field": "history", "newSize": 2}],
            },
            fullDocument={"_id": Int64(1004), "name": "Anne Marie"},
            fullDocumentBeforeChange={"_id": Int64(1004), "name": "Anne"},
        )
    )
    assert record.operation is Operation.UPDATE
    assert record.update_description == UpdateDescription(
        {"name": "Anne Marie", "tags.1": "x"}, ("nickname",), (TruncatedArray("history", 2),)
    )
    assert record.full_document_before_change == {"_id": 1004, "name": "Anne"}


def test_update_without_optional_lists():
    record = ChangeRecord.from_change_event(event("update", updateDescription={"updatedFields": {"a": 1}}))
    assert record.update_description == UpdateDescription({"a": 1}, (), ())
    assert record.full_document is None


def test_replace_is_an_update_with_the_new_document():
    record = ChangeRecord.from_change_event(event("replace", fullDocument={"_id": Int64(1004), "name": "New"}))
    assert record.operation is Operation.UPDATE
    assert record.source_operation == "replace"
    assert record.update_description is None
    assert record.full_document == {"_id": 1004, "name": "New"}


def test_delete_with_pre_image():
    record = ChangeRecord.from_change_event(event("delete", fullDocumentBeforeChange={"_id": Int64(1004)}))
    assert record.operation is Operation.DELETE
    assert record.full_document_before_change == {"_id": 1004}


def test_sharded_document_key_keeps_shard_fields():
    record = ChangeRecord.from_change_event(event("delete", documentKey={"region": "eu", "_id": ObjectId()}))
    assert list(record.document_key) == ["region", "_id"]


def test_transactional_write():
    record = ChangeRecord.from_change_event(event("insert", fullDocument={"_id": 1}, lsid=LSID, txnNumber=Int64(7)))
    assert record.lsid == LSID
    assert record.txn_number == 7
    assert record.transaction_id.endswith(":7")
    assert record.transaction_id.startswith('{"id": {"$binary": "FA7YEzXgQXSX9OxmzllH2w==","$type": "04"}')


def test_transaction_id_with_one_part_only():
    base = dict(operation=Operation.CREATE, namespace=Namespace("a", "b"), document_key={"_id": 1})
    assert ChangeRecord(**base, txn_number=3).transaction_id == "3"
    assert ChangeRecord(**base, lsid={"id": 1}).transaction_id == '{"id": 1}'


@pytest.mark.parametrize("operation_type", ["drop", "rename", "dropDatabase", "invalidate", "create", "modify"])
def test_non_document_events_are_rejected(operation_type):
    with pytest.raises(UnsupportedChangeEvent):
        ChangeRecord.from_change_event({"operationType": operation_type, "_id": TOKEN})


def test_data_operation_types():
    assert DATA_OPERATION_TYPES == {"insert", "update", "replace", "delete"}


def test_document_key_must_hold_the_id():
    with pytest.raises(ValueError, match="_id"):
        ChangeRecord(Operation.CREATE, Namespace("a", "b"), {"x": 1})


def test_snapshot_read():
    record = ChangeRecord.snapshot_read(
        Namespace("inventory", "customers"),
        {"_id": 5, "name": "x"},
        cluster_time=CLUSTER_TIME,
        marker=SnapshotMarker.LAST,
        resume_token=TOKEN,
    )
    assert record.operation is Operation.READ
    assert record.document_key == {"_id": 5}
    assert record.full_document == {"_id": 5, "name": "x"}
    assert record.snapshot is SnapshotMarker.LAST
    assert record.is_snapshot
    assert record.source_operation == "read"


def test_snapshot_marker_false_is_not_a_snapshot():
    record = ChangeRecord(Operation.CREATE, Namespace("a", "b"), {"_id": 1}, snapshot=SnapshotMarker.FALSE)
    assert not record.is_snapshot


@pytest.mark.parametrize("text", ["inventory", ".customers", "inventory.", ""])
def test_namespace_parse_rejects_incomplete_names(text):
    with pytest.raises(ValueError):
        Namespace.parse(text)


def test_namespace_parse_keeps_dots_in_collection_names():
    assert Namespace.parse("inventory.system.views") == Namespace("inventory", "system.views")
    assert str(Namespace("a", "b")) == "a.b"


def test_records_are_immutable():
    record = ChangeRecord(Operation.CREATE, Namespace("a", "b"), {"_id": 1})
    with pytest.raises(AttributeError):
        record.operation = Operation.DELETE  # type: ignore[misc]


def test_heartbeat_record():
    beat = Heartbeat(resume_token=TOKEN, cluster_time=CLUSTER_TIME)
    assert beat.resume_token == TOKEN
