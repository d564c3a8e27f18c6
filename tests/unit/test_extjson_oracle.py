"""Our Extended JSON against the MongoDB Java driver's JsonWriter (the writer Debezium uses), byte for byte, over
random documents of every BSON type: ids of every type, strings from every Unicode category, doubles from edge
cases and random bits. One JVM serves the whole run (tests/oracle/java_json.py).

Code points that Python 3.11's unicodedata (Unicode 14) does not know but a newer JVM does are not generated: see
docs/events.md (the one documented difference)."""

from __future__ import annotations

import math
import random
import struct
import sys
import unicodedata

import bson
import pytest
from bson import Binary, Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS

from connectors.mongodb import extjson, rawjson
from tests.oracle.java_json import KEY, RELAXED, STRICT, JavaJson, OracleUnavailable
from tests.unit.document_writers import PATHS, require_compiled

DECODE = CodecOptions(tz_aware=False, datetime_conversion=DatetimeConversion.DATETIME_AUTO)
VALUES_PER_RUN = 100_000


@pytest.fixture(scope="module")
def java():
    try:
        oracle = JavaJson()
    except OracleUnavailable as missing:
        pytest.skip(str(missing))
    yield oracle
    oracle.close()


def _code_points_by_category() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for code in range(sys.maxunicode + 1):
        category = unicodedata.category(chr(code))
        if category == "Cs":
            continue  # a lone surrogate is not UTF-8, so never in BSON
        if category == "Cn" and code < 0x10000 and not (0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE):
            continue  # may be assigned by the JVM's newer Unicode; noncharacters stay unassigned for ever
        found.setdefault(category, []).append(code)
    return found


CATEGORIES = _code_points_by_category()
EDGE_DOUBLES = [
    0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1e-3, math.nextafter(1e-3, 0), 1e7, math.nextafter(1e7, 0), 9999999.999999998,
    1e-4, 1e21, 1e22, 1e23, 2e23, 5e-324, -5e-324, 1e-323, 2.2250738585072014e-308, 2.225073858507201e-308,
    1.7976931348623157e308, -1.7976931348623157e308, 123456789012345678.0, 4.35, 0.3, 2.0**53, 2.0**63, 1e16,
    1e15, 123.456, 1.2345678901234567e-5, float("nan"), float("inf"), float("-inf"),
]


class Values:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.count = 0

    def string(self, longest: int = 12) -> str:
        rng = self.rng
        chars = []
        for _ in range(rng.randint(0, longest)):
            if rng.random() < 0.5:
                chars.append(chr(rng.randint(0x20, 0x7F)) if rng.random() < 0.9 else chr(rng.randint(1, 0x1F)))
            else:
                chars.append(chr(rng.choice(CATEGORIES[rng.choice(list(CATEGORIES))])))
        return "".join(chars)

    def name(self) -> str:
        name = self.string(8).replace("\x00", "")
        return rng_prefix(self.rng) + name

    def double(self) -> float:
        rng = self.rng
        pick = rng.random()
        if pick < 0.2:
            return rng.choice(EDGE_DOUBLES)
        if pick < 0.6:
            return struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if pick < 0.8:
            return rng.uniform(-1, 1) * 10 ** rng.uniform(-12, 12)
        return float(rng.randint(-(10**9), 10**9)) / 10 ** rng.randint(0, 6)

    def scalar(self):
        rng = self.rng
        self.count += 1
        kind = rng.randrange(22)
        if kind < 4:
            return self.double()
        if kind < 7:
            return self.string(20)
        if kind == 7:
            return rng.randint(-(2**31), 2**31 - 1)
        if kind == 8:
            return Int64(rng.randint(-(2**63), 2**63 - 1))
        if kind == 9:
            return Decimal128(rng.choice(["NaN", "-Infinity", "Infinity", "0", "-0", "1.5E+3", "0.001"])
                              if rng.random() < 0.3 else f"{rng.randint(-10**20, 10**20)}E{rng.randint(-60, 60)}")
        if kind == 10:
            ms = rng.choice([rng.randint(-(2**63), 2**63 - 1), rng.randint(0, 253402300799999), 0, -1,
                             253402300799999, 253402300800000, rng.randint(-(10**12), 10**12)])
            return DatetimeMS(ms)
        if kind == 11:
            return ObjectId(rng.randbytes(12))
        if kind == 12:
            subtype = rng.choice([0, 1, 3, 4, 5, 6, 7, 8, 0x80, rng.randint(0x80, 0xFF)])
            return Binary(rng.randbytes(rng.randint(0, 24)), subtype)
        if kind == 13:
            return Regex(self.string(8).replace("\x00", ""), "".join(rng.sample("imsx", rng.randint(0, 4))))
        if kind == 14:
            return Code(self.string(10).replace("\x00", ""))
        if kind == 15:
            return Code(self.string(6).replace("\x00", ""), self.document(1))
        if kind == 16:
            return Timestamp(rng.randint(0, 2**32 - 1), rng.randint(0, 2**32 - 1))
        if kind == 17:
            return rng.choice([MinKey(), MaxKey(), None, True, False])
        if kind == 18:
            return DBRef(self.string(5) or "c", self.scalar_id(), rng.choice([None, "db"]))
        if kind == 19:
            return rng.choice([1e7, 1e-4, 4.35, float("nan"), -0.0, 12345678.9])
        return self.string(3)

    def scalar_id(self):
        value = self.scalar()
        while isinstance(value, Code | DBRef) or value is None:
            value = self.scalar()
        return value

    def value(self, depth: int):
        roll = self.rng.random()
        if depth > 0 and roll < 0.12:
            return self.document(depth - 1)
        if depth > 0 and roll < 0.2:
            return [self.value(depth - 1) for _ in range(self.rng.randint(0, 4))]
        return self.scalar()

    def document(self, depth: int) -> dict:
        document = {}
        for _ in range(self.rng.randint(0, 6)):
            document[self.name()] = self.value(depth)
        return document

    def top(self) -> dict:
        rng = self.rng
        ident = self.scalar_id() if rng.random() < 0.8 else (self.document(1) or {"a": 1})
        return {"_id": ident, **self.document(3)}


def rng_prefix(rng: random.Random) -> str:
    return rng.choice(["", "", "", ":", "$", "a.", "_"])


@pytest.mark.parametrize("path", PATHS)
def test_extended_json_is_the_java_drivers_byte_for_byte(java, path):
    if path == "compiled":  # the strict text written from the raw BSON by connectors/mongodb/_rawjson
        require_compiled()
    seed = random.SystemRandom().randrange(2**32)  # a new sample each run; a failure names its seed
    values = Values(seed)
    seed_note = f"Values(seed={seed})"
    documents = []
    while values.count < VALUES_PER_RUN:
        documents.append(values.top())
    encoded = [bson.encode(document) for document in documents]
    requests = [(mode, data) for data in encoded for mode in (STRICT, RELAXED, KEY)]
    expected = java.write(requests)
    differences = []
    for position, data in enumerate(encoded):
        decoded = bson.decode(data, DECODE)
        strict, relaxed, key = expected[3 * position: 3 * position + 3]
        key = key[len('{"_id": '):-1]
        strict_text = rawjson.document_json(data) if path == "compiled" else extjson.document_json(decoded)
        ours = (strict_text, extjson.updated_fields_json(decoded), extjson.key_json(decoded["_id"]))
        for mode, theirs, mine in zip("strict relaxed key".split(), (strict, relaxed, key), ours, strict=True):
            if theirs != mine:
                differences.append(f"{mode}: {decoded!r}\n java: {theirs}\n ours: {mine}")
    assert values.count >= VALUES_PER_RUN
    assert not differences, f"{len(differences)} of {3 * len(encoded)} differ ({seed_note}); first:\n" + "\n".join(
        differences[:5])
