"""MongoDB events byte for byte as Debezium 3.6.1.Final's MongoDB connector writes them through Kafka Connect 4.1.1's
JsonConverter (the expected bytes are its own, from `python -m bench.compat --source mongodb`): names inside the
envelope escaped as Jackson escapes them, the Connect schemas' member order, and the transaction topic's
`data_collections` order and `ts_ms`."""

from __future__ import annotations

import datetime
import json

import bson
from bson import Int64, Timestamp

from connectors.core.java_hash_map import iteration_order, string_hash
from connectors.core.transactions import TransactionTracker
from connectors.mongodb import connect_schemas, envelopes, rawjson
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.events import encode_envelope
from connectors.mongodb.records import ChangeRecord, UpdateDescription
from connectors.mongodb.transformer import Transformer
from tests.unit.document_writers import require_compiled

REMOVED = ["ctl\x01\x1f", "quote\"back\\slash", "sep\u2028para\u2029", "tab\tname", "emo😀", "del\x7f"]
# Debezium's removedFields for REMOVED, as Kafka Connect wrote them
DEBEZIUM_REMOVED = (b'"removedFields":["ctl\\u0001\\u001F","quote\\"back\\\\slash","sep\xe2\x80\xa8para\xe2\x80\xa9",'
                    b'"tab\\tname","emo\\uD83D\\uDE00","del\x7f"]')


def _description() -> dict:
    return {"updatedFields": {"x": 1}, "removedFields": REMOVED, "truncatedArrays": [{"field": "emo😀", "newSize": 2}]}


def test_removed_and_truncated_names_are_escaped_as_jackson_does():
    text = encode_envelope(envelopes.update_description_block(UpdateDescription.from_event(_description())))
    assert DEBEZIUM_REMOVED in text
    assert b'"truncatedArrays":[{"field":"emo\\uD83D\\uDE00","size":2}]' in text


def test_the_compiled_writer_escapes_names_as_jackson_does():
    require_compiled()
    text = rawjson.compiled.update_description(bson.encode(_description()))
    assert text == encode_envelope(envelopes.update_description_block(UpdateDescription.from_event(_description())))
    assert DEBEZIUM_REMOVED in text


def test_an_escaped_backslash_before_u00_text_stays_as_it_is():
    # a document's Extended JSON text already holds "\u0301" (the Java driver's escape): in the envelope that is
    # an escaped backslash, not a control character's escape
    assert encode_envelope({"after": '{"s": "e\\u00e9"}'}) == b'{"after":"{\\"s\\": \\"e\\\\u00e9\\"}"}'


def test_the_connect_schemas_have_jsonconverters_member_order():
    schema = json.dumps(connect_schemas.envelope_schema("p.db.c"), separators=(",", ":"))
    assert ('{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"removedFields"}'
            in schema)
    assert ',"optional":false,"name":"io.debezium.connector.mongo.Source","version":1,"field":"source"}' in schema
    transaction = json.dumps(connect_schemas.transaction_value_schema(), separators=(",", ":"))
    assert ('"optional":true,"name":"event.collection","version":1},"optional":true,"field":"data_collections"}'
            in transaction)


def test_java_string_hash_codes():
    assert string_hash("hello") == 99162322
    assert string_hash("emo😀") == (((ord("e") * 31 + ord("m")) * 31 + ord("o")) * 31 * 31 + 0xD83D * 31 + 0xDE00)


def _ended(tracker: TransactionTracker, transaction: str, names: list[str]) -> list[str]:
    for name in names:
        tracker.on_event(transaction, name, 0)
    return [name for name, _ in tracker.end(0).data_collections]


def test_data_collections_come_in_debeziums_hash_map_order():
    # as Debezium 3.6.1 listed them in END records of bench.compat's workload (here in the order first seen)
    p = "compat_e3402cf6a8"
    assert _ended(TransactionTracker(), "t", [f"{p}.docs", f"{p}.ünïcødé", f"{p}.sep\u2028x", f"{p}.emo😀"]) == [
        f"{p}.ünïcødé", f"{p}.emo😀", f"{p}.sep\u2028x", f"{p}.docs"]
    assert _ended(TransactionTracker(), "t", [f"{p}.ctl\x01name", f"{p}.ünïcødé"]) == [
        f"{p}.ünïcødé", f"{p}.ctl\x01name"]
    p = "compat_933d3c92d1"
    assert iteration_order([f"{p}.docs", f"{p}.ünïcødé", f"{p}.sep\u2028x", f"{p}.emo😀"]) == [
        f"{p}.emo😀", f"{p}.sep\u2028x", f"{p}.docs", f"{p}.ünïcødé"]


def test_a_map_that_grew_keeps_its_capacity_for_later_transactions():
    tracker = TransactionTracker()
    assert _ended(tracker, "t0", ["db.c0", "db.c3"]) == ["db.c0", "db.c3"]  # a table of 16
    _ended(tracker, "t1", [f"db.x{i}" for i in range(13)])  # the 13th entry doubles the table to 32
    assert _ended(tracker, "t2", ["db.c0", "db.c3"]) == ["db.c3", "db.c0"]  # clear() kept 32


def _event(inc: int, millis: int, txn: int | None) -> ChangeRecord:
    raw = {
        "_id": {"_data": f"82{inc:04d}"}, "operationType": "insert", "clusterTime": Timestamp(1700000000, inc),
        "wallTime": datetime.datetime(2023, 11, 14, 22, 13, 20, millis * 1000), "ns": {"db": "d", "coll": "c"},
        "documentKey": {"_id": 1}, "fullDocument": {"_id": 1},
    }
    if txn is not None:
        raw["lsid"], raw["txnNumber"] = {"id": "s"}, Int64(txn)
    return ChangeRecord.from_change_event(raw)


def test_begin_and_end_carry_the_events_source_ts_ms():
    config = ConnectorConfig.from_properties({"name": "c", "topic.prefix": "p", "mongodb.connection.string": "mongodb://h",
                                              "provide.transaction.metadata": "true"})
    transformer = Transformer(config, "rs0", clock=lambda: 1800000000.0)
    begin = json.loads(transformer.transform(_event(1, 906, txn=1))[0].value)
    end = json.loads(transformer.transform(_event(2, 934, txn=None))[0].value)
    assert (begin["status"], begin["ts_ms"]) == ("BEGIN", 1700000000906)
    assert (end["status"], end["ts_ms"]) == ("END", 1700000000934)  # the next event's, as Debezium's
