"""The compiled writer (connectors/mongodb/rawjson.c) against the Python one: the same text for every document, over
a large generated corpus of every BSON type, random nesting, random Unicode and random doubles; and what it hands
back to Python (types it does not write, malformed input) still comes out as the Python path's."""

from __future__ import annotations

import math
import random
import struct
import sys

import bson
import pytest
from bson import Binary, Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS
from bson.errors import InvalidBSON
from bson.raw_bson import RawBSONDocument

from connectors.mongodb import extjson, rawjson
from tests.unit.document_writers import compiled_document_json, require_compiled

SPECIAL_DOUBLES = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.1,
    1e-3,
    math.nextafter(1e-3, 0),
    math.nextafter(1e-3, 1),
    1e7,
    math.nextafter(1e7, 0),
    1e-4,
    1e21,
    1e22,
    1e23,
    2e23,
    5e-324,
    -5e-324,
    1e-323,
    2.2250738585072014e-308,
    2.225073858507201e-308,
    1.7976931348623157e308,
    2.0**53,
    2.0**63,
    2.0**-1074,
    2.0**1023,
    9007199254740993.0,
    123456789012345678.0,
    float("nan"),
    float("inf"),
    float("-inf"),
    -float("nan"),
]


def random_double(rng: random.Random) -> float:
    pick = rng.random()
    if pick < 0.15:
        return rng.choice(SPECIAL_DOUBLES)
    if pick < 0.45:
        return struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
    if pick < 0.55:  # subnormal
        return struct.unpack("<d", rng.getrandbits(52).to_bytes(8, "little"))[0] * rng.choice([1, -1])
    if pick < 0.65:  # powers of two, where the digits that read back are lopsided
        return math.ldexp(1.0, rng.randint(-1074, 1023)) * rng.choice([1, -1])
    if pick < 0.85:
        return rng.uniform(-1, 1) * 10 ** rng.uniform(-30, 30)
    return float(rng.randint(-(10**12), 10**12)) / 10 ** rng.randint(0, 8)


def random_text(rng: random.Random, longest: int = 12) -> str:
    chars = []
    for _ in range(rng.randint(0, longest)):
        pick = rng.random()
        if pick < 0.4:
            chars.append(chr(rng.randint(0x20, 0x7F)))
        elif pick < 0.5:
            chars.append(rng.choice('"\\/\x00\x08\x0c\n\r\t\x1f\x7f\u2028\u2029\u00ad\u0301\ufeff\ufffe'))
        elif pick < 0.6:
            chars.append(chr(rng.randint(0x1F600, 0x1F64F)))  # emoji: a surrogate pair each
        elif pick < 0.7:
            chars.append(chr(rng.randint(0x10000, sys.maxunicode)))
        else:
            code = rng.randint(0x80, 0xFFFF)
            chars.append(chr(code) if not 0xD800 <= code <= 0xDFFF else "x")
    return "".join(chars)


def random_name(rng: random.Random) -> str:
    return rng.choice(["", "", ":", "$", "_", "a."]) + random_text(rng, 6).replace("\x00", "")


def random_scalar(rng: random.Random):
    kind = rng.randrange(22)
    if kind < 4:
        return random_double(rng)
    if kind < 7:
        return random_text(rng, 24)
    if kind == 7:
        return rng.choice([rng.randint(-(2**31), 2**31 - 1), 0, -1, 2**31 - 1, -(2**31)])
    if kind == 8:
        return Int64(rng.choice([rng.randint(-(2**63), 2**63 - 1), 0, 2**63 - 1, -(2**63), 5]))
    if kind == 9:
        ms = rng.choice(
            [
                rng.randint(-(2**63), 2**63 - 1),
                rng.randint(0, 253402300799999),
                0,
                -1,
                253402300800000,
                -62135596800001,
                rng.randint(-(10**13), 10**13),
            ]
        )
        return DatetimeMS(ms)
    if kind == 10:
        return ObjectId(rng.randbytes(12))
    if kind == 11:
        subtype = rng.choice([0, 1, 3, 4, 4, 5, 6, 7, 8, 0x80, rng.randint(0x80, 0xFF)])
        return Binary(rng.randbytes(rng.choice([0, 1, 2, 3, 16, rng.randint(0, 40)])), subtype)
    if kind == 12:
        return Regex(random_text(rng, 8).replace("\x00", ""), "".join(rng.sample("ilmsux", rng.randint(0, 6))))
    if kind == 13:
        return Timestamp(rng.randint(0, 2**32 - 1), rng.randint(0, 2**32 - 1))
    if kind == 14:
        return rng.choice([MinKey(), MaxKey(), None, True, False])
    if kind == 15 and rng.random() < 0.1:  # rare types: handed back to Python
        return rng.choice(
            [
                Decimal128("1.5"),
                Code("f()"),
                Code("g()", {"x": 1}),
                Binary(b"ab", 2),
                DBRef("c", 1),
                DBRef("c", ObjectId(), "db"),
            ]
        )
    return random_text(rng, 3)


def random_value(rng: random.Random, depth: int):
    roll = rng.random()
    if depth > 0 and roll < 0.15:
        return random_document(rng, depth - 1)
    if depth > 0 and roll < 0.25:
        return [random_value(rng, depth - 1) for _ in range(rng.randint(0, 5))]
    return random_scalar(rng)


def random_document(rng: random.Random, depth: int) -> dict:
    return {random_name(rng): random_value(rng, depth) for _ in range(rng.randint(0, 7))}


def python_outcome(data: bytes, bare: bool) -> str:
    try:
        return rawjson.python_document_json(data, bare_non_finite=bare)
    except InvalidBSON as error:
        return f"InvalidBSON: {error}"


def compiled_outcome(data: bytes, bare: bool) -> str:
    try:
        return rawjson.document_json(data, bare_non_finite=bare)
    except InvalidBSON as error:
        return f"InvalidBSON: {error}"


def test_the_compiled_writer_writes_the_python_text_for_a_large_random_corpus():
    require_compiled()
    seed = random.SystemRandom().randrange(2**32)  # a new sample each run; a failure names its seed
    rng = random.Random(seed)
    written_by_c = 0
    differences = []
    for _ in range(10_000):
        document = {
            "_id": random_scalar(rng) if rng.random() < 0.8 else random_document(rng, 1),
            **random_document(rng, rng.randint(0, 4)),
        }
        data = bson.encode(document)
        for bare in (True, False):
            mine = compiled_document_json(data, bare_non_finite=bare)
            written_by_c += mine is not None
            expected = python_outcome(data, bare)
            if mine is not None and mine != expected:
                differences.append(f"{document!r} (bare={bare})\n python: {expected}\n C:      {mine}")
    assert not differences, f"{len(differences)} differ (seed {seed}); first:\n" + "\n".join(differences[:3])
    assert written_by_c > 15_000  # the corpus mostly exercises the C writer, not the fallback


def test_doubles_are_javas_double_to_string():
    require_compiled()
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    for _ in range(50):
        values = [random_double(rng) for _ in range(20_000)]
        text = compiled_document_json(bson.encode({"v": values}))
        assert text is not None
        expected = '{"v": [' + ",".join(extjson.java_double(value) for value in values) + "]}"
        if text != expected:
            mine = text[len('{"v": [') : -2].split(",")
            wrong = [(value, c) for value, c in zip(values, mine, strict=True) if c != extjson.java_double(value)]
            pytest.fail(f"seed {seed}: {wrong[:5]}")


@pytest.mark.parametrize(
    "value",
    [Decimal128("2.5"), Code("f()"), Code("f()", {"a": 1}), Binary(b"xy", 2), DBRef("c", 1), {"$ref": 5, "$id": 1}],
)
def test_rare_types_are_handed_to_python_and_come_out_the_same(value):
    data = bson.encode({"_id": 1, "v": [value]})
    assert compiled_document_json(data) is None
    assert rawjson.document_json(data) == extjson.document_json(bson.decode(data, rawjson.DECODE_OPTIONS))


def test_repeated_names_are_handed_to_python():
    # A document naming a field twice: pymongo keeps the last value at the first one's place.
    body = b"\x10a\x00\x01\x00\x00\x00\x10b\x00\x02\x00\x00\x00\x10a\x00\x03\x00\x00\x00\x00"
    data = (len(body) + 4).to_bytes(4, "little") + body
    assert compiled_document_json(data) is None
    assert rawjson.document_json(data) == '{"a": 3,"b": 2}'


@pytest.mark.parametrize(
    "encoded",
    [b"\xed\xa0\x80", b"\xc0\xaf", b"\xff", b"a\xe2\x82", b"\xf4\x90\x80\x80"],
    ids=["surrogate", "overlong", "invalid-byte", "truncated", "beyond-unicode"],
)
def test_invalid_utf8_is_the_python_paths_text(encoded):
    """The compiled writer leaves such a string to the Python path, which writes U+FFFD by the Java driver's rules
    (tests/integration/test_invalid_utf8.py holds them against the Java driver)."""
    string = len(encoded + b"\x00").to_bytes(4, "little") + encoded + b"\x00"
    body = b"\x02s\x00" + string + b"\x00"
    data = (len(body) + 4).to_bytes(4, "little") + body
    assert compiled_document_json(data) is None
    assert compiled_outcome(data, True) == python_outcome(data, True)
    assert "\ufffd" in python_outcome(data, True)


def test_malformed_bson_is_the_python_paths_error():
    require_compiled()
    data = bson.encode({"a": "text", "b": [1, 2, {"c": 1.5}]})
    for cut in range(len(data)):
        truncated = data[:cut]
        assert compiled_document_json(truncated) is None
        assert compiled_outcome(truncated, True).startswith("InvalidBSON")


def _sorted_bson(document: dict) -> bytes:
    return bson.encode(dict(sorted(document.items())))


def test_change_events_are_cut_into_decoded_fields_and_raw_full_documents():
    require_compiled()
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    for _ in range(2000):
        fields = random_document(rng, 2)
        for name in rawjson.RAW_DOCUMENT_FIELDS:
            roll = rng.random()
            if roll < 0.6:
                fields[name] = random_document(rng, 2)
            elif roll < 0.7:
                fields[name] = None
        fields["operationType"] = "update"
        order = list(fields.items())
        rng.shuffle(order)
        data = bson.encode(dict(order))
        event = rawjson.RawChangeEvent.of(data).event
        expected = bson.decode(data, rawjson.DECODE_OPTIONS)
        for name in rawjson.RAW_DOCUMENT_FIELDS:
            if isinstance(expected.get(name), dict):
                assert type(event[name]) is RawBSONDocument, seed
        assert _sorted_bson({name: rawjson.decoded(value) for name, value in event.items()}) == _sorted_bson(
            expected
        ), seed


def test_document_keys_of_raw_documents_are_those_of_decoded_ones():
    require_compiled()
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    for _ in range(2000):
        fields = list(random_document(rng, 2).items())
        fields.insert(rng.randint(0, len(fields)), ("_id", random_value(rng, 2)))
        data = bson.encode(dict(fields))
        key = rawjson.document_key(RawBSONDocument(data, rawjson.RAW_OPTIONS))
        assert bson.encode(key) == bson.encode({"_id": bson.decode(data, rawjson.DECODE_OPTIONS)["_id"]}), seed
