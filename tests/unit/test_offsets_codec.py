"""The offset record's bytes: Kafka Connect key layout, lossless values, tombstones, startup instructions."""

from __future__ import annotations

import datetime
import json
import uuid

import bson
import pytest
from bson import Binary, Decimal128, Int64, ObjectId, Timestamp

from connectors.kafka.offset_record import (
    OffsetDecodeError,
    OffsetRecord,
    OffsetTombstone,
    decode_key,
    encode_key,
)
from connectors.kafka.sink import OutMessage, lane_transactional_ids, record_size, transactional_id


def test_key_is_the_kafka_connect_layout_as_compact_json():
    assert encode_key("orders", "rs0") == b'["orders",{"rs":"rs0"}]'
    assert decode_key(b'["orders", {"rs": "rs0"}]') == ("orders", "rs0")


def test_key_keeps_non_ascii_names():
    key = encode_key("kunden-ü", "rs-é")
    assert decode_key(key) == ("kunden-ü", "rs-é")


def test_a_sharded_clusters_record_is_keyed_by_server_id_and_keeps_it():
    """Debezium 3.x's key of a sharded cluster read through mongos: read back and rewritten unchanged."""
    key = b'["orders",{"server_id":"shop"}]'
    record = OffsetRecord.from_kafka(key, b'{"resume_token":null,"cluster_time":null,"snapshot":null}')
    assert (record.replica_set, record.key_field, record.key) == ("shop", "server_id", key)
    assert OffsetTombstone("orders", "shop", "server_id").key == key
    assert decode_key(key) == ("orders", "shop")


@pytest.mark.parametrize("key", [b"not json", b'{"rs": "x"}', b'["c"]', b'["c", {"server": "x"}]',
                                 b'["c", {"rs": "x", "server_id": "y"}]', b'["c", "rs"]'])
def test_foreign_keys_are_rejected(key):
    with pytest.raises(OffsetDecodeError):
        decode_key(key)


def test_value_layout_is_readable():
    record = OffsetRecord("c", "rs0", resume_token={"_data": "8263A1"}, cluster_time=Timestamp(1700000000, 7))
    assert json.loads(record.to_value()) == {
        "resume_token": {"_data": "8263A1"},
        "cluster_time": {"t": 1700000000, "i": 7},
        "snapshot": None,
    }


def test_round_trip_keeps_bson_types():
    snapshot = {
        "chunks": [
            {"ns": "shop.orders", "min": ObjectId("596e275826f08b2730779e1f"), "max": Decimal128("10.5"), "done": True},
            {"ns": "shop.items", "min": Binary(uuid.uuid4().bytes, 4), "max": Int64(2**40), "done": False},
        ],
        "started_at": datetime.datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=datetime.UTC),
        "resume_from": {"_data": "8264"},
    }
    record = OffsetRecord(
        "c", "rs0",
        resume_token={"_data": "82" + "ab" * 40},
        cluster_time=Timestamp(4294967295, 4294967295),
        snapshot=snapshot,
        extra={"ts_ms": 1700000000123, "heartbeat": True},
    )
    decoded = OffsetRecord.from_kafka(record.key, record.to_value())
    assert decoded.resume_token == record.resume_token
    assert decoded.cluster_time == Timestamp(4294967295, 4294967295)
    assert isinstance(decoded.cluster_time, Timestamp)
    chunks = decoded.snapshot["chunks"]
    assert chunks[0]["min"] == ObjectId("596e275826f08b2730779e1f")
    assert chunks[0]["max"] == Decimal128("10.5")
    assert chunks[1]["min"] == snapshot["chunks"][1]["min"] and isinstance(chunks[1]["min"], Binary)
    assert chunks[1]["max"] == 2**40
    assert decoded.snapshot["started_at"] == snapshot["started_at"]
    assert decoded.extra == {"ts_ms": 1700000000123, "heartbeat": True}
    assert decoded == record


def test_binary_resume_token_round_trips():
    # Servers before 4.2 used BinData tokens.
    token = {"_data": Binary(b"\x82\x00\x01")}
    record = OffsetRecord("c", "rs0", resume_token=token)
    decoded = OffsetRecord.from_kafka(record.key, record.to_value())
    assert bson.encode(decoded.resume_token) == bson.encode(token)  # subtype 0 comes back as bytes: same BSON


def test_startup_instruction_round_trips_with_timestamp():
    record = OffsetRecord("c", "rs0", startup={"mode": "timestamp", "timestamp": Timestamp(1700000000, 1),
                                               "requested_by": "alice", "requested_at_ms": 1})
    assert json.loads(record.to_value())["startup"]["timestamp"] == {"t": 1700000000, "i": 1}
    assert OffsetRecord.from_kafka(record.key, record.to_value()) == record


@pytest.mark.parametrize("startup", [{"mode": "sometime"}, {"no": "mode"}, "latest"])
def test_unknown_startup_modes_are_rejected(startup):
    value = json.dumps({"resume_token": None, "cluster_time": None, "snapshot": None, "startup": startup}).encode()
    with pytest.raises(OffsetDecodeError, match="startup"):
        OffsetRecord.from_kafka(encode_key("c", "rs0"), value)


@pytest.mark.parametrize("value", [b"[1, 2]", b"{not json", b'{"cluster_time": {"t": 1}}'])
def test_malformed_values_are_rejected(value):
    with pytest.raises(OffsetDecodeError):
        OffsetRecord.from_kafka(encode_key("c", "rs0"), value)


def test_tombstone_has_the_same_key_and_no_value():
    tombstone = OffsetTombstone("c", "rs0")
    assert tombstone.key == OffsetRecord("c", "rs0").key
    assert tombstone.to_value() is None


def test_transactional_id_is_connector_dot_replica_set():
    assert transactional_id("orders", "rs0") == "orders.rs0"


def test_a_pipelines_lanes_are_its_transactional_id_and_numbered_ones():
    assert lane_transactional_ids("orders", "rs0") == ["orders.rs0", "orders.rs0.lane-1"]
    assert lane_transactional_ids("orders", "rs0", lanes=1) == ["orders.rs0"]


def test_record_size_is_an_upper_bound_counting_headers():
    plain = record_size(OutMessage("t", b"k" * 10, b"v" * 100))
    assert plain >= 110
    with_headers = record_size(OutMessage("t", b"k" * 10, b"v" * 100, [("h", b"x" * 50)]))
    assert with_headers >= plain + 51
    assert record_size(OutMessage("t", b"k", None)) < plain
