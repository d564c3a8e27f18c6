"""Kafka messages: topics, keys, each value format, tombstones, schemas, transactions and heartbeats."""

from __future__ import annotations

import datetime
import json

import bson
import pytest
from bson import Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from bson.codec_options import CodecOptions, DatetimeConversion

from connectors.config import ConnectorConfig
from connectors.core.transactions import TransactionBoundary
from connectors.events.version import SOURCE_VERSION
from connectors.kafka.topics import MAX_TOPIC_LENGTH, sanitize_topic
from connectors.mongodb import extjson
from connectors.mongodb.envelopes import apply_update
from connectors.mongodb.events import EventBuilder, KafkaMessage, topic_name
from connectors.mongodb.records import (
    ChangeRecord,
    Namespace,
    Operation,
    SnapshotMarker,
    TruncatedArray,
    UpdateDescription,
)

BASE = {"name": "inventory-cdc", "topic.prefix": "fulfillment", "mongodb.connection.string": "mongodb://h1"}
NOW = 1558965515.240
CUSTOMERS = Namespace("inventory", "customers")
CLUSTER_TIME = Timestamp(1558965508, 31)
WALL_TIME = datetime.datetime(2019, 5, 27, 13, 58, 28, 512000)
DOC = {"_id": Int64(1004), "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
LSID = {"id": Binary(bytes(range(16)), 4), "uid": Binary(b"\x01" * 32, 0)}


def builder(**props) -> EventBuilder:
    config = ConnectorConfig.from_properties({**BASE, **props})
    return EventBuilder(config, "rs0", clock=lambda: NOW)


def change(operation=Operation.CREATE, **fields) -> ChangeRecord:
    defaults = {"cluster_time": CLUSTER_TIME, "wall_time": WALL_TIME, "source_operation": "insert"}
    defaults.update(fields)
    return ChangeRecord(operation, CUSTOMERS, {"_id": Int64(1004)}, **defaults)


def value_of(message: KafkaMessage) -> dict:
    return json.loads(message.value)


def key_of(message: KafkaMessage) -> dict:
    return json.loads(message.key)


# --- topics -----------------------------------------------------------------------------------


def test_topic_names():
    assert topic_name("fulfillment", CUSTOMERS) == "fulfillment.inventory.customers"
    assert topic_name("p", Namespace("my db", "a$b/c")) == "p.my_db.a_b_c"
    assert topic_name("p", Namespace("db", "système")) == "p.db.syst_me"


def test_long_topic_names_are_cut_and_stay_distinct():
    first = topic_name("p", Namespace("db", "x" * 300 + "1"))
    second = topic_name("p", Namespace("db", "x" * 300 + "2"))
    assert len(first) == len(second) == MAX_TOPIC_LENGTH
    assert first != second
    assert sanitize_topic("ok.name") == "ok.name"


# --- keys -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("identifier", "expected"),
    [
        (Int64(1004), "1004"),
        (1234, "1234"),
        ("1234", '"1234"'),
        (ObjectId("596e275826f08b2730779e1f"), '{"$oid": "596e275826f08b2730779e1f"}'),
        ({"hi": "kafka", "n": 1}, '{"hi": "kafka","n": 1}'),
    ],
)
def test_key_is_the_id_as_relaxed_extended_json(identifier, expected):
    record = ChangeRecord(Operation.CREATE, CUSTOMERS, {"_id": identifier}, full_document={"_id": identifier})
    message = builder().change_messages(record)[0]
    assert message.key == json.dumps({"id": expected}, separators=(",", ":")).encode()


def test_key_ignores_shard_key_fields():
    record = ChangeRecord(Operation.DELETE, CUSTOMERS, {"region": "eu", "_id": 7})
    assert key_of(builder().change_messages(record)[0]) == {"id": "7"}


def test_key_with_schema():
    message = builder(**{"schemas.enable": "true"}).change_messages(change(full_document=DOC))[0]
    assert key_of(message) == {
        "schema": {
            "type": "struct",
            "fields": [{"type": "string", "optional": False, "field": "id"}],
            "optional": False,
            "name": "fulfillment.inventory.customers.Key",
        },
        "payload": {"id": "1004"},
    }


# --- Debezium format --------------------------------------------------------------------------


def test_create_event_matches_debezium():
    messages = builder().change_messages(change(full_document=DOC))
    assert len(messages) == 1
    message = messages[0]
    assert message.topic == "fulfillment.inventory.customers"
    assert message.kind == "change"
    value = value_of(message)
    assert list(value) == ["before", "after", "updateDescription", "source", "op", "ts_ms", "transaction"]
    assert value == {
        "before": None,
        "after": '{"_id": {"$numberLong": "1004"},"first_name": "Anne","last_name": "Kretchmar",'
        '"email": "annek@noanswer.org"}',
        "updateDescription": None,
        "source": {
            "version": SOURCE_VERSION,
            "connector": "mongodb",
            "name": "fulfillment",
            "ts_ms": 1558965508512,  # Debezium 3.x: the change's wall time
            "snapshot": "false",
            "db": "inventory",
            "sequence": None,
            "ts_us": 1558965508512000,
            "ts_ns": 1558965508512000000,
            "collection": "customers",
            "ord": 31,
            "lsid": None,
            "txnNumber": None,
            "wallTime": 1558965508512,
        },
        "op": "c",
        "ts_ms": 1558965515240,
        "transaction": None,
    }


def test_debezium_2_compatibility_keeps_the_2x_source_block():
    value = value_of(builder(**{"debezium.compatibility": "2"}).change_messages(change(full_document=DOC))[0])
    assert value["source"] == {
        "version": SOURCE_VERSION,
        "connector": "mongodb",
        "name": "fulfillment",
        "ts_ms": 1558965508000,  # cluster time seconds x 1000
        "snapshot": "false",
        "db": "inventory",
        "sequence": None,
        "rs": "rs0",
        "collection": "customers",
        "ord": 31,
        "lsid": None,
        "txnNumber": None,
        "wallTime": 1558965508512,
    }
    for compatibility, present, absent in (("2", "rs", "ts_us"), ("3", "ts_us", "rs")):
        props = {"debezium.compatibility": compatibility, "value.converter.schemas.enable": "true"}
        wrapped = value_of(builder(**props).change_messages(change(full_document=DOC))[0])
        source = next(field for field in wrapped["schema"]["fields"] if field["field"] == "source")
        names = [field["field"] for field in source["fields"]]
        assert names == list(wrapped["payload"]["source"]) and present in names and absent not in names


def test_snapshot_reads_have_ord_minus_one_and_the_read_time():
    record = ChangeRecord.snapshot_read(CUSTOMERS, {"_id": 1}, cluster_time=CLUSTER_TIME)
    source = value_of(builder().change_messages(record)[0])["source"]
    assert (source["ts_ms"], source["ord"], source["snapshot"]) == (1558965515240, -1, "true")
    assert (source["ts_us"], source["ts_ns"], source["wallTime"]) == (1558965515240000, 1558965515240000000, None)


def test_values_are_compact_utf8_json():
    message = builder().change_messages(change(full_document={"_id": 1, "name": "Zoë"}))[0]
    assert message.value.startswith(b'{"before":null,"after":')
    assert "Zoë".encode() in message.value


def test_update_in_change_streams_mode_has_no_after():
    description = UpdateDescription({"first_name": "Anne Marie"}, (), ())
    value = value_of(
        builder().change_messages(change(Operation.UPDATE, update_description=description, source_operation="update"))[
            0
        ]
    )
    assert value["op"] == "u"
    assert value["after"] is None and value["before"] is None
    assert value["updateDescription"] == {
        "removedFields": None,
        "updatedFields": '{"first_name": "Anne Marie"}',
        "truncatedArrays": None,
    }


def test_update_with_full_document_pre_image_and_every_description_part():
    description = UpdateDescription(
        {"first_name": "Anne Marie", "visits": Int64(3)}, ("nickname", "tags.2"), (TruncatedArray("history", 2),)
    )
    record = change(
        Operation.UPDATE,
        update_description=description,
        full_document={**DOC, "first_name": "Anne Marie"},
        full_document_before_change={**DOC, "first_name": "unknown"},
        source_operation="update",
    )
    value = value_of(builder().change_messages(record)[0])
    assert json.loads(value["before"])["first_name"] == "unknown"
    assert json.loads(value["after"])["first_name"] == "Anne Marie"
    assert value["updateDescription"] == {
        "removedFields": ["nickname", "tags.2"],
        "updatedFields": '{"first_name": "Anne Marie", "visits": 3}',
        "truncatedArrays": [{"field": "history", "size": 2}],
    }


def test_replace_is_an_update_with_after_and_no_description():
    record = change(Operation.UPDATE, full_document={"_id": Int64(1004), "x": 1}, source_operation="replace")
    value = value_of(builder().change_messages(record)[0])
    assert value["op"] == "u"
    assert value["after"] == '{"_id": {"$numberLong": "1004"},"x": 1}'
    assert value["updateDescription"] is None


def test_delete_is_followed_by_a_tombstone():
    messages = builder().change_messages(change(Operation.DELETE, source_operation="delete"))
    assert [m.kind for m in messages] == ["change", "tombstone"]
    value = value_of(messages[0])
    assert value["op"] == "d"
    assert value["before"] is None and value["after"] is None and value["updateDescription"] is None
    assert messages[1].value is None
    assert messages[1].key == messages[0].key and messages[1].topic == messages[0].topic


def test_delete_with_pre_image():
    record = change(Operation.DELETE, full_document_before_change=DOC, source_operation="delete")
    assert json.loads(value_of(builder().change_messages(record)[0])["before"]) == json.loads(
        extjson.document_json(DOC)
    )


def test_tombstones_can_be_disabled():
    messages = builder(**{"tombstones.on.delete": "false"}).change_messages(change(Operation.DELETE))
    assert [m.kind for m in messages] == ["change"]


@pytest.mark.parametrize("marker", [SnapshotMarker.TRUE, SnapshotMarker.FIRST, SnapshotMarker.LAST])
def test_snapshot_read(marker):
    record = ChangeRecord.snapshot_read(CUSTOMERS, DOC, cluster_time=CLUSTER_TIME, marker=marker)
    value = value_of(builder().change_messages(record)[0])
    assert value["op"] == "r"
    assert value["source"]["snapshot"] == marker.value
    assert value["source"]["wallTime"] is None
    assert json.loads(value["after"])["_id"] == {"$numberLong": "1004"}


def test_transactional_source_fields_and_block():
    record = change(full_document=DOC, lsid=LSID, txn_number=Int64(3))
    block = {"id": record.transaction_id, "total_order": 1, "data_collection_order": 1}
    value = value_of(builder().change_messages(record, block)[0])
    assert value["source"]["lsid"] == (
        '{"id": {"$binary": "AAECAwQFBgcICQoLDA0ODw==","$type": "04"},'
        '"uid": {"$binary": "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=","$type": "00"}}'
    )
    assert value["source"]["txnNumber"] == 3
    assert value["transaction"] == block


def test_record_without_cluster_time():
    record = ChangeRecord(Operation.CREATE, CUSTOMERS, {"_id": 1}, full_document={"_id": 1})
    source = value_of(builder().change_messages(record)[0])["source"]
    assert (source["ts_ms"], source["ord"], source["wallTime"]) == (0, 0, None)


def test_aware_wall_time():
    aware = datetime.datetime(2019, 5, 27, 15, 58, 28, 512000, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    source = value_of(builder().change_messages(change(full_document=DOC, wall_time=aware))[0])["source"]
    assert source["wallTime"] == 1558965508512


def test_explicit_processing_time():
    value = value_of(builder().change_messages(change(full_document=DOC), ts_ms=5)[0])
    assert value["ts_ms"] == 5


def test_value_with_schema():
    message = builder(**{"schemas.enable": "true"}).change_messages(change(full_document=DOC))[0]
    value = value_of(message)
    assert set(value) == {"schema", "payload"}
    schema = value["schema"]
    assert schema["name"] == "fulfillment.inventory.customers.Envelope"
    assert [f["field"] for f in schema["fields"]] == [
        "before",
        "after",
        "updateDescription",
        "source",
        "op",
        "ts_ms",
        "transaction",
    ]
    source = next(f for f in schema["fields"] if f["field"] == "source")
    assert source["name"] == "io.debezium.connector.mongo.Source"
    assert [f["field"] for f in source["fields"]] == list(value["payload"]["source"])
    assert value["payload"]["op"] == "c"


def test_tombstone_stays_null_with_schemas():
    messages = builder(**{"schemas.enable": "true"}).change_messages(change(Operation.DELETE))
    assert messages[1].value is None


def test_key_and_value_schemas_are_separate_switches():
    message = builder(**{"value.converter.schemas.enable": "true"}).change_messages(change(full_document=DOC))[0]
    assert key_of(message) == {"id": "1004"}
    assert "schema" in value_of(message)


# --- every BSON type survives the event -------------------------------------------------------

EVERY_TYPE = {
    "_id": ObjectId("596e275826f08b2730779e1f"),
    "int32": 7,
    "int64": Int64(2**40),
    "double": 0.1,
    "decimal": Decimal128("9.99"),
    "string": "ünïcode",
    "binary": Binary(b"\x00\xff", 0),
    "uuid": Binary(bytes(range(16)), 4),
    "date": datetime.datetime(2024, 2, 29, 23, 59, 59, 999000),
    "timestamp": Timestamp(1700000000, 5),
    "regex": Regex("^a.*z$", "ims"),
    "min": MinKey(),
    "max": MaxKey(),
    "null": None,
    "bool": True,
    "nested": {"deeper": {"list": [1, Int64(2), {"x": Decimal128("-0")}]}},
    "array": [[1, 2], ["a", {"b": None}]],
}


@pytest.mark.parametrize("fmt", ["debezium", "legacy"])
def test_every_bson_type_survives_after(fmt):
    original = bson.encode(EVERY_TYPE)
    document = bson.decode(original, codec_options=CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO))
    record = ChangeRecord(Operation.CREATE, CUSTOMERS, {"_id": document["_id"]}, full_document=document)
    after = value_of(builder(**{"event.format": fmt}).change_messages(record)[0])["after"]
    assert bson.encode(extjson.parse(after)) == original


def test_compound_id_key_and_document_round_trip():
    identifier = {"tenant": "acme", "n": Int64(5), "at": datetime.datetime(2020, 1, 1)}
    record = ChangeRecord(Operation.CREATE, CUSTOMERS, {"_id": identifier}, full_document={"_id": identifier})
    message = builder().change_messages(record)[0]
    key_id = key_of(message)["id"]
    assert key_id == '{"tenant": "acme","n": 5,"at": {"$date": "2020-01-01T00:00:00Z"}}'
    assert extjson.parse(key_id) == {"tenant": "acme", "n": 5, "at": datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)}


# --- legacy format ----------------------------------------------------------------------------


def legacy(**props) -> EventBuilder:
    return builder(**{"event.format": "legacy", **props})


def test_legacy_insert():
    value = value_of(legacy().change_messages(change(full_document=DOC))[0])
    assert list(value) == ["after", "patch", "filter", "source", "op", "ts_ms", "transaction"]
    assert value["after"] == extjson.document_json(DOC)
    assert value["patch"] is None and value["filter"] is None
    assert value["op"] == "c"
    assert list(value["source"]) == [
        "version",
        "connector",
        "name",
        "ts_ms",
        "snapshot",
        "db",
        "sequence",
        "rs",
        "collection",
        "ord",
        "h",
        "tord",
        "stxnid",
        "lsid",
        "txnNumber",
    ]


def test_legacy_update_is_a_set_unset_patch_with_filter():
    description = UpdateDescription({"first_name": "Anne Marie"}, ("nickname",), (TruncatedArray("history", 2),))
    record = change(Operation.UPDATE, update_description=description, full_document=DOC, source_operation="update")
    value = value_of(legacy().change_messages(record)[0])
    assert value["after"] is None
    assert json.loads(value["patch"]) == {
        "$set": {"first_name": "Anne Marie"},
        "$unset": {"nickname": True},
        "$push": {"history": {"$each": [], "$slice": 2}},
    }
    assert value["filter"] == '{"_id": {"$numberLong": "1004"}}'
    assert value["op"] == "u"


def test_legacy_replace_patch_is_the_new_document():
    record = change(Operation.UPDATE, full_document={"_id": Int64(1004), "x": 1}, source_operation="replace")
    value = value_of(legacy().change_messages(record)[0])
    assert value["patch"] == '{"_id": {"$numberLong": "1004"},"x": 1}'


def test_legacy_update_without_any_image_or_description():
    record = change(Operation.UPDATE, source_operation="update")
    assert value_of(legacy().change_messages(record)[0])["patch"] is None


def test_legacy_delete_has_filter_and_tombstone():
    messages = legacy().change_messages(change(Operation.DELETE, source_operation="delete"))
    value = value_of(messages[0])
    assert value["filter"] == '{"_id": {"$numberLong": "1004"}}'
    assert value["after"] is None and value["patch"] is None
    assert messages[1].value is None


def test_legacy_filter_can_be_given_after_field_rules():
    messages = legacy().change_messages(change(Operation.DELETE), document_filter={"_id": 1, "region": "eu"})
    assert value_of(messages[0])["filter"] == '{"_id": 1,"region": "eu"}'


def test_legacy_transaction_id():
    value = value_of(legacy().change_messages(change(full_document=DOC, lsid={"id": 1}, txn_number=2))[0])
    assert value["source"]["stxnid"] == '{"id": 1}:2'
    assert value["source"]["h"] is None


def test_legacy_value_schema():
    value = value_of(legacy(**{"schemas.enable": "true"}).change_messages(change(full_document=DOC))[0])
    assert [f["field"] for f in value["schema"]["fields"]] == [
        "after",
        "patch",
        "filter",
        "source",
        "op",
        "ts_ms",
        "transaction",
    ]


# --- flattened format -------------------------------------------------------------------------


def flattened(**props) -> EventBuilder:
    return builder(**{"event.format": "flattened", **props})


def test_flattened_insert_is_the_document():
    messages = flattened().change_messages(change(full_document={**DOC, "when": datetime.datetime(2020, 1, 1)}))
    assert value_of(messages[0]) == {
        "_id": 1004,
        "first_name": "Anne",
        "last_name": "Kretchmar",
        "email": "annek@noanswer.org",
        "when": {"$date": "2020-01-01T00:00:00Z"},
    }
    assert key_of(messages[0]) == {"id": "1004"}


def test_flattened_update_with_full_document():
    record = change(Operation.UPDATE, full_document={"_id": 1, "a": 2}, update_description=UpdateDescription({"a": 2}))
    assert value_of(flattened().change_messages(record)[0]) == {"_id": 1, "a": 2}


def test_flattened_update_rebuilds_the_document_from_the_pre_image():
    record = change(
        Operation.UPDATE,
        full_document_before_change={"_id": 1, "a": {"b": 1, "c": 2}, "list": [1, 2, 3, 4], "gone": True},
        update_description=UpdateDescription(
            {"a.b": 5, "list.1": 20, "new.deep": "x"}, ("gone", "a.c"), (TruncatedArray("list", 3),)
        ),
    )
    assert value_of(flattened().change_messages(record)[0]) == {
        "_id": 1,
        "a": {"b": 5},
        "list": [1, 20, 3],
        "new": {"deep": "x"},
    }


def test_flattened_update_without_images_is_debeziums_partial_document():
    record = change(Operation.UPDATE, update_description=UpdateDescription({"a.b": 5, "c": 1}, ("d",)))
    assert value_of(flattened().change_messages(record)[0]) == {"_id": 1004, "a.b": 5, "c": 1}


@pytest.mark.parametrize(
    ("mode", "kinds", "value"),
    [
        ("tombstone", ["tombstone"], None),
        ("drop", [], None),
        ("rewrite", ["change"], {"_id": 1004, "__deleted": True}),
        ("rewrite-with-tombstone", ["change", "tombstone"], {"_id": 1004, "__deleted": True}),
    ],
)
def test_flattened_delete_handling(mode, kinds, value):
    messages = flattened(**{"flattened.delete.tombstone.handling.mode": mode}).change_messages(change(Operation.DELETE))
    assert [m.kind for m in messages] == kinds
    if value is not None:
        assert value_of(messages[0]) == value


def test_flattened_rewrite_uses_the_pre_image_and_marks_other_events():
    build = flattened(**{"flattened.delete.tombstone.handling.mode": "rewrite"})
    deleted = build.change_messages(change(Operation.DELETE, full_document_before_change={"_id": 1, "a": 1}))
    assert value_of(deleted[0]) == {"_id": 1, "a": 1, "__deleted": True}
    created = build.change_messages(change(full_document={"_id": 1}))
    assert value_of(created[0]) == {"_id": 1, "__deleted": False}


def test_flattened_added_fields():
    build = flattened(**{"flattened.add.fields": "op,ts_ms,source.ts_ms,db,collection,rs"})
    value = value_of(build.change_messages(change(full_document={"_id": 1}))[0])
    assert value == {
        "_id": 1,
        "__op": "c",
        "__ts_ms": 1558965515240,
        "__source_ts_ms": 1558965508512,
        "__db": "inventory",
        "__collection": "customers",
        "__rs": "rs0",
    }
    build = flattened(**{"flattened.add.fields": "op", "flattened.add.fields.prefix": "cdc_"})
    assert value_of(build.change_messages(change(full_document={"_id": 1}))[0]) == {"_id": 1, "cdc_op": "c"}


def test_flattened_key_schema():
    message = flattened(**{"key.converter.schemas.enable": "true"}).change_messages(change(full_document={"_id": 1}))[0]
    assert key_of(message)["payload"] == {"id": "1004"}
    assert value_of(message) == {"_id": 1}


def test_apply_update_sets_array_positions_and_unsets_elements():
    before = {"_id": 1, "list": [1, 2], "doc": {"x": 1}}
    after = apply_update(before, UpdateDescription({"list.3": 9, "doc.y.z": 2}, ("list.0", "missing.path")))
    assert after == {"_id": 1, "list": [None, 2, None, 9], "doc": {"x": 1, "y": {"z": 2}}}
    assert before == {"_id": 1, "list": [1, 2], "doc": {"x": 1}}


# --- transactions and heartbeats --------------------------------------------------------------


def test_transaction_messages():
    build = builder()
    begin = build.transaction_message(TransactionBoundary("BEGIN", "tx:1", 1000))
    assert begin.topic == "fulfillment.transaction"
    assert begin.kind == "transaction"
    assert key_of(begin) == {"id": "tx:1"}
    assert value_of(begin) == {
        "status": "BEGIN",
        "id": "tx:1",
        "event_count": None,
        "data_collections": None,
        "ts_ms": 1000,
    }
    end = build.transaction_message(
        TransactionBoundary("END", "tx:1", 2000, 3, (("rs0.inventory.a", 2), ("rs0.inventory.b", 1)))
    )
    assert value_of(end) == {
        "status": "END",
        "id": "tx:1",
        "event_count": 3,
        "data_collections": [
            {"data_collection": "rs0.inventory.a", "event_count": 2},
            {"data_collection": "rs0.inventory.b", "event_count": 1},
        ],
        "ts_ms": 2000,
    }


def test_transaction_topic_name_and_schemas():
    build = builder(**{"topic.transaction": "tx", "schemas.enable": "true"})
    message = build.transaction_message(TransactionBoundary("BEGIN", "t", 1))
    assert message.topic == "fulfillment.tx"
    assert key_of(message)["schema"]["name"] == "io.debezium.connector.common.TransactionMetadataKey"
    assert value_of(message)["schema"]["name"] == "io.debezium.connector.common.TransactionMetadataValue"


def test_heartbeat_message():
    message = builder().heartbeat_message()
    assert message.topic == "__debezium-heartbeat.fulfillment"
    assert message.kind == "heartbeat"
    assert key_of(message) == {"serverName": "fulfillment"}
    assert value_of(message) == {"ts_ms": 1558965515240}
    message = builder(**{"heartbeat.topics.prefix": "hb", "schemas.enable": "true"}).heartbeat_message(ts_ms=7)
    assert message.topic == "hb.fulfillment"
    assert value_of(message) == {
        "schema": {
            "type": "struct",
            "fields": [{"type": "int64", "optional": False, "field": "ts_ms"}],
            "optional": False,
            "name": "io.debezium.connector.common.Heartbeat",
            "version": 1,
        },
        "payload": {"ts_ms": 7},
    }
    assert key_of(message)["schema"]["name"] == "io.debezium.connector.common.ServerNameKey"


def test_messages_carry_what_the_sink_needs():
    from connectors.kafka.sink import OutMessage, record_size

    message = builder().change_messages(change(full_document=DOC))[0]
    assert record_size(message) == record_size(OutMessage(message.topic, message.key, message.value, message.headers))


ODD_DOCUMENT = {
    "_id": 2**70,  # over 64 bits: orjson refuses it, the json fallback writes it
    "float": 1e-7, "big_float": 1e16, "nan": float("nan"), "decimal": Decimal128("1.10"),
    "text": 'quote " backslash \\ tab \t nul \x00 del \x7f line sep \u2028 emoji \U0001F600 é',
    "nested": {"ts": Timestamp(5, 6), "min": MinKey(), "max": MaxKey(), "re": Regex("^a", "i"), "oid": ObjectId()},
    "list": [Int64(5), 2.5, None, True, Binary(b"\x00\xff", 0)],
}


@pytest.mark.parametrize("props", [{}, {"event.format": "legacy"}, {"key.converter.schemas.enable": True,
                                                                    "value.converter.schemas.enable": True}])
@pytest.mark.parametrize("identifier", [2**70, "é\u2028", ObjectId(), {"a": 1.5e300, "b": [1, "x"]}, 7])
def test_envelopes_encoded_by_orjson_are_the_bytes_json_writes(monkeypatch, props, identifier):
    from connectors.mongodb import events

    key = {"_id": identifier}
    common = {"cluster_time": CLUSTER_TIME, "wall_time": WALL_TIME}
    records = [
        ChangeRecord(Operation.CREATE, CUSTOMERS, key, full_document={**ODD_DOCUMENT, "_id": identifier}, **common),
        ChangeRecord(Operation.UPDATE, CUSTOMERS, key, full_document_before_change=ODD_DOCUMENT, **common,
                     update_description=UpdateDescription(updated_fields=ODD_DOCUMENT, removed_fields=("a.b", "é"),
                                                          truncated_arrays=(TruncatedArray("list", 1),))),
        ChangeRecord(Operation.DELETE, CUSTOMERS, key, lsid=LSID, txn_number=Int64(2**40), **common),
    ]
    fast = [builder(**props).change_messages(r, {"id": "t", "total_order": 2**63 - 1}) for r in records]
    monkeypatch.setattr(events, "encode_envelope", events.encode_json)
    plain = [builder(**props).change_messages(r, {"id": "t", "total_order": 2**63 - 1}) for r in records]
    assert fast == plain
