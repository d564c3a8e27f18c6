"""Issue 18 end to end: documents written through the emulator and the real pipeline into Kafka carry the bytes the
MongoDB Java driver's JsonWriter (Debezium's writer) produces for the same BSON, read from MongoDB as raw BSON:
Java doubles, bare NaN/Infinity, the driver's string escaping (documents and keys), relaxed updatedFields with
", ", the 3.x source block and <db>.<collection> transaction data collections."""

from __future__ import annotations

import datetime
import json

import pymongo
import pytest
from bson import Binary, Regex
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

from connectors.core.java_hash_map import iteration_order
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import RunningConnector, connector_config, wait_for_events
from tests.oracle.java_json import KEY, RELAXED, STRICT, JavaJson, OracleUnavailable

pytestmark = pytest.mark.integration

RAW = CodecOptions(document_class=RawBSONDocument)
DOCUMENTS = [
    {"_id": 1e21, "d": [1e7, 12345678.9, 1e-4, 5e-324, 1.7976931348623157e308, -0.0, 0.001]},
    {"_id": "k\U0001F600\u2028\x7f\u0301", "nan": float("nan"), "inf": [float("inf"), float("-inf")]},
    {"_id": 3, "s": "e\u0301 \U0001F600 \u2028\u2029 \x7f \u200b \u02b0 \x01 日本 ∑ €", "\u2028name": 1},
]


@pytest.fixture(scope="module")
def java():
    try:
        oracle = JavaJson()
    except OracleUnavailable as missing:
        pytest.skip(str(missing))
    yield oracle
    oracle.close()


def test_events_carry_the_java_writers_bytes(stack, mongo_rs, unique_name, java):
    name = "b" + unique_name.replace("-", "")[-12:]
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=10_000)
    db = client[name]
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="never",
                              provide__transaction__metadata="true")
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    raw_db = client.get_database(name, codec_options=RAW)
    with raw_db.watch() as stream:
        db.items.insert_many(DOCUMENTS)
        db.items.update_one({"_id": 3}, {"$set": {
            "str": "changed", "newfield": 5, "when": datetime.datetime(2021, 6, 1), "f": 1e7,
            "bin": Binary(b"\x00" * 16, 4), "re": Regex("z", "x"), "emoji": "\U0001F600"}})
        with client.start_session() as session, session.start_transaction():
            db.items.insert_one({"_id": 10}, session=session)
            db.orders.insert_one({"_id": 11}, session=session)
        db.items.insert_one({"_id": 12})  # ends the transaction for the tracker
        changes = [stream.next() for _ in range(len(DOCUMENTS) + 4)]
    items = wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.items", len(DOCUMENTS) + 3)
    orders = wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.orders", 1)
    transactions = wait_for_events(stack.kafka_bootstrap, f"{name}.transaction", 2)
    running.finish()
    client.close()

    item_changes = [change for change in changes if change["ns"]["coll"] == "items"]
    requests = []
    for change in item_changes:
        requests.append((KEY, change["documentKey"].raw))
        if change["operationType"] == "insert":
            requests.append((STRICT, change["fullDocument"].raw))
        else:
            requests.append((RELAXED, change["updateDescription"]["updatedFields"].raw))
    expected = iter(java.write(requests))
    for record, change in zip(items, item_changes, strict=True):
        value = json.loads(record.value)
        assert json.loads(record.key)["id"] == next(expected)[len('{"_id": '):-1]
        if change["operationType"] == "insert":
            assert value["after"] == next(expected)
        else:
            assert value["updateDescription"]["updatedFields"] == next(expected)
        source = value["source"]
        assert "rs" not in source and source["ts_ms"] == source["wallTime"]
        assert (source["ts_us"], source["ts_ns"]) == (source["ts_ms"] * 1000, source["ts_ms"] * 1_000_000)

    texts = [json.loads(record.value)["after"] for record in items[: len(DOCUMENTS)]]
    assert texts[0] == ('{"_id": 1.0E21,"d": [1.0E7,1.23456789E7,1.0E-4,4.9E-324,1.7976931348623157E308,-0.0,0.001]}')
    assert '"nan": NaN,"inf": [Infinity,-Infinity]' in texts[1]
    assert json.loads(items[1].key)["id"] == '"k\\ud83d\\ude00\\u2028\\u007f\\u0301"'
    updated = json.loads(items[len(DOCUMENTS)].value)["updateDescription"]["updatedFields"]
    for member in ('"str": "changed"', '"newfield": 5', '"when": {"$date": "2021-06-01T00:00:00Z"}', '"f": 1.0E7',
                   '"bin": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAA==", "subType": "04"}}',
                   '"re": {"$regularExpression": {"pattern": "z", "options": "x"}}', '"emoji": "\\ud83d\\ude00"'):
        assert member in updated, (member, updated)
    assert updated.count(", ") == 6 + 2  # between the 7 members, and inside $binary and $regularExpression

    assert [json.loads(record.value)["transaction"] is not None for record in orders] == [True]
    end = [json.loads(record.value) for record in read_topic(stack.kafka_bootstrap, f"{name}.transaction")][-1]
    assert end["status"] == "END"
    # Debezium lists them in its HashMap's order (pinned to Debezium's own output in test_mongodb_connect_bytes)
    collections = iteration_order([f"{name}.items", f"{name}.orders"])
    assert [item["data_collection"] for item in end["data_collections"]] == collections
    assert len(transactions) >= 2
