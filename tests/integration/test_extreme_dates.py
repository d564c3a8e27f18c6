"""Dates anywhere in int64 (a real MongoDB stores them all) go through the snapshot and the change stream into the
event instead of crashing the connector with `InvalidBSON: year … is out of range`."""

from __future__ import annotations

import json

import pymongo
import pytest
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS

from tests.integration.pipeline_harness import RunningConnector, connector_config, values, wait_for_events

pytestmark = pytest.mark.integration

EXTREMES = [-(2**63), -62135596801000, 253402300800000, 2**63 - 1]  # int64's ends, just before year 1 / after 9999


def test_int64_extreme_dates_through_snapshot_and_stream(stack, mongo_rs, unique_name):
    name = "d" + unique_name.replace("-", "")[-12:]
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=10_000,
                                 datetime_conversion=DatetimeConversion.DATETIME_MS)
    coll = client[name].get_collection("dates", CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS))
    coll.insert_many([{"_id": i, "d": DatetimeMS(ms)} for i, ms in enumerate(EXTREMES)])
    coll.insert_one({"_id": DatetimeMS(2**63 - 1), "d": [DatetimeMS(-(2**63))]})  # a date _id: in the key too
    config = connector_config(name, mongo_rs.uri, database__include__list=name)
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    coll.insert_one({"_id": 10, "d": DatetimeMS(-(2**63))})
    coll.update_one({"_id": 0}, {"$set": {"e": DatetimeMS(2**63 - 1)}})
    records = wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.dates", len(EXTREMES) + 3)
    running.finish()
    client.close()

    events = values(records)
    assert [e["op"] for e in events] == ["r"] * (len(EXTREMES) + 1) + ["c", "u"]
    assert [json.loads(e["after"])["d"] for e in events[: len(EXTREMES)]] == [{"$date": ms} for ms in EXTREMES]
    date_id = events[len(EXTREMES)]["after"]
    assert date_id == '{"_id": {"$date": 9223372036854775807},"d": [{"$date": -9223372036854775808}]}'
    assert json.loads(records[len(EXTREMES)].key) == {"id": '{"$date": {"$numberLong": "9223372036854775807"}}'}
    assert json.loads(events[-2]["after"])["d"] == {"$date": -(2**63)}
    assert json.loads(events[-1]["updateDescription"]["updatedFields"])["e"]["$date"] in (
        2**63 - 1, {"$numberLong": str(2**63 - 1)})
