"""Dates outside datetime's years 1-9999: a real mongod stores any 64-bit date, and so must the emulator."""

from __future__ import annotations

from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS

EXTREMES = [-(2**63), -62135596801000, -1, 0, 253402300800000, 2**63 - 1]  # int64 ends, just outside 1-9999


def test_extreme_dates_are_stored_sorted_and_streamed(coll):
    auto = coll.with_options(codec_options=CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS))
    with auto.watch() as stream:
        for i, ms in enumerate(EXTREMES):
            auto.insert_one({"_id": i, "d": DatetimeMS(ms)})
        events = [stream.next() for _ in EXTREMES]
    assert [int(event["fullDocument"]["d"]) for event in events] == EXTREMES
    found = list(auto.find({}, sort=[("d", -1)]))
    assert [int(doc["d"]) for doc in found] == sorted(EXTREMES, reverse=True)
    assert [doc["_id"] for doc in auto.find({"d": {"$gt": DatetimeMS(253402300799999)}})] == [4, 5]
    auto.update_one({"_id": 5}, {"$set": {"e": DatetimeMS(-(2**63))}})
    assert int(auto.find_one({"_id": 5})["e"]) == -(2**63)
