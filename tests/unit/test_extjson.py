"""Extended JSON: every BSON type survives document → JSON → document, and the text is Debezium's."""

from __future__ import annotations

import datetime
import json
import math
import random
import re
import uuid

import bson
import pytest
from bson import Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary, UuidRepresentation
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS

from connectors.mongodb import extjson, rawjson
from tests.unit.document_writers import PATHS, document_writer, require_compiled

# What a source decodes with: pymongo's defaults, plus dates outside Python's range kept as DatetimeMS.
SOURCE_CODEC = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO)

OID = ObjectId("596e275826f08b2730779e1f")

VALUES = {
    "object_id": OID,
    "int32": 42,
    "int32_min": -(2**31),
    "int32_max": 2**31 - 1,
    "int64": Int64(1004),
    "int64_small": Int64(1),
    "int64_min": Int64(-(2**63)),
    "int64_max": Int64(2**63 - 1),
    "double": 12.34,
    "double_integral": 10.0,
    "double_negative_zero": -0.0,
    "double_huge": 1.7976931348623157e308,
    "double_tiny": 5e-324,
    "double_nan": float("nan"),
    "double_inf": float("inf"),
    "double_minus_inf": float("-inf"),
    "decimal": Decimal128("1234.5678901234567890123456789012"),
    "decimal_nan": Decimal128("NaN"),
    "decimal_negative_zero": Decimal128("-0.00"),
    "decimal_exponent": Decimal128("1E+6144"),
    "string": "Anne",
    "string_unicode": "Kretchmar – ✓ 日本 😀",
    "string_controls": 'quote " backslash \\ newline \n tab \t nul \x00',
    "string_empty": "",
    "true": True,
    "false": False,
    "null": None,
    "binary_generic": Binary(b"kafka", 0),
    "binary_function": Binary(b"\x01\x02", 1),
    "binary_old": Binary(b"\x00\x00\x00\x02ab"[4:], 2),
    "binary_uuid_legacy": Binary(uuid.UUID("00112233-4455-6677-8899-aabbccddeeff").bytes, 3),
    "binary_uuid": Binary(uuid.UUID("00112233-4455-6677-8899-aabbccddeeff").bytes, 4),
    "binary_md5": Binary(bytes(range(16)), 5),
    "binary_encrypted": Binary(b"\x10secret", 6),
    "binary_user": Binary(b"\xff\xfe", 0x80),
    "binary_empty": Binary(b"", 0),
    "date": datetime.datetime(2019, 5, 27, 13, 58, 28, 123000),
    "date_epoch": datetime.datetime(1970, 1, 1),
    "date_before_epoch": datetime.datetime(1901, 12, 13, 20, 45, 52),
    "date_year_one": datetime.datetime(1, 1, 1),
    "date_beyond_python": DatetimeMS(253402300800000 + 1),
    "date_far_past": DatetimeMS(-62135596800000 - 1),
    "timestamp": Timestamp(1558965508, 31),
    "timestamp_zero": Timestamp(0, 0),
    "regex": Regex("^ann?e$", "i"),
    "regex_all_flags": Regex("a.b", "ilmsux"),
    "regex_no_flags": Regex("x+"),
    "min_key": MinKey(),
    "max_key": MaxKey(),
    "code": Code("function () { return 1; }"),
    "code_with_scope": Code("function () { return x; }", {"x": Int64(5), "y": [1, 2.5]}),
    "dbref": DBRef("customers", OID),
    "dbref_with_db": DBRef("customers", 1004, "inventory"),
    "nested": {"a": {"b": {"c": [Int64(1), {"d": Decimal128("1.10")}]}}},
    "array": [1, Int64(2), 3.0, "four", None, [5, [6]], {"seven": MinKey()}],
    "array_empty": [],
    "document_empty": {},
    "field.with.dots": "dotted name",
}


def round_trip_bytes(document: dict, path: str) -> tuple[bytes, bytes]:
    original = bson.encode(document)
    if path == "compiled":  # from the bytes themselves
        require_compiled()
        text = rawjson.document_json(original)
    else:
        text = extjson.document_json(bson.decode(original, codec_options=SOURCE_CODEC))
    json.loads(text)  # always valid JSON
    parsed = extjson.parse(text)
    return original, bson.encode(parsed)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", list(VALUES))
def test_every_bson_type_round_trips_losslessly(name, path):
    original, again = round_trip_bytes({"_id": 1, "value": VALUES[name]}, path)
    assert again == original


@pytest.mark.parametrize("path", PATHS)
def test_the_whole_document_round_trips(path):
    original, again = round_trip_bytes({"_id": OID, **VALUES}, path)
    assert again == original


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "identifier",
    [OID, 1004, Int64(1004), "1004", 12.34, Decimal128("1.5"), {"hi": "kafka", "nums": [10.0, 100.0]}, [1, 2]],
)
def test_compound_and_scalar_ids_round_trip_in_documents(identifier, path):
    original, again = round_trip_bytes({"_id": identifier, "x": 1}, path)
    assert again == original


@pytest.mark.parametrize("path", PATHS)
def test_strict_dialect_matches_debezium_output(path):
    document = {"_id": Int64(1004), "first_name": "Anne", "email": "annek@noanswer.org"}
    assert document_writer(path)(document) == (
        '{"_id": {"$numberLong": "1004"},"first_name": "Anne","email": "annek@noanswer.org"}'
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (42, "42"),
        (Int64(7), '{"$numberLong": "7"}'),
        (2**40, '{"$numberLong": "1099511627776"}'),
        (1.5, "1.5"),
        (10.0, "10.0"),
        # the Java driver's strict mode (what Debezium writes): bare, as Python's json, Jackson and Spark read them
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
        (1e7, "1.0E7"),
        (5e-324, "4.9E-324"),
        ("\U0001F600\u2028\x7f", '"\\ud83d\\ude00\\u2028\\u007f"'),
        (Decimal128("1.10"), '{"$numberDecimal": "1.10"}'),
        (OID, '{"$oid": "596e275826f08b2730779e1f"}'),
        (Binary(b"kafka", 0), '{"$binary": "a2Fma2E=","$type": "00"}'),
        (b"kafka", '{"$binary": "a2Fma2E=","$type": "00"}'),
        (Binary(b"\x01", 0x80), '{"$binary": "AQ==","$type": "80"}'),
        (datetime.datetime(2019, 5, 27, 13, 58, 28, 123000), '{"$date": 1558965508123}'),
        (datetime.datetime(1969, 12, 31, 23, 59, 59), '{"$date": -1000}'),
        (Timestamp(1558965508, 31), '{"$timestamp": {"t": 1558965508,"i": 31}}'),
        (Regex("^a", "im"), '{"$regex": "^a","$options": "im"}'),
        (MinKey(), '{"$minKey": 1}'),
        (MaxKey(), '{"$maxKey": 1}'),
        (Code("f()"), '{"$code": "f()"}'),
        (DBRef("c", 1), '{"$ref": "c","$id": 1}'),
        (None, "null"),
        ([1, "a"], '[1,"a"]'),
        ("日本", '"日本"'),
    ],
)
@pytest.mark.parametrize("path", PATHS)
def test_strict_representation_of_each_type(value, expected, path):
    assert document_writer(path)({"v": value}) == '{"v": ' + expected + "}"


@pytest.mark.parametrize(
    ("identifier", "expected"),
    [
        # Debezium's documented key examples (relaxed Extended JSON, compact separators).
        (1234, "1234"),
        (Int64(1004), "1004"),
        (12.34, "12.34"),
        ("1234", '"1234"'),
        ({"hi": "kafka", "nums": [10.0, 100.0, 1000.0]}, '{"hi": "kafka","nums": [10.0,100.0,1000.0]}'),
        (OID, '{"$oid": "596e275826f08b2730779e1f"}'),
        (Binary(b"kafka", 0), '{"$binary": {"base64": "a2Fma2E=","subType": "00"}}'),
        (Decimal128("1.10"), '{"$numberDecimal": "1.10"}'),
        (datetime.datetime(2019, 5, 27, 13, 58, 28, 123000), '{"$date": "2019-05-27T13:58:28.123Z"}'),
        (datetime.datetime(1900, 1, 1), '{"$date": {"$numberLong": "-2208988800000"}}'),
        (Timestamp(1, 2), '{"$timestamp": {"t": 1,"i": 2}}'),
        (MinKey(), '{"$minKey": 1}'),
        (float("nan"), '{"$numberDouble": "NaN"}'),
        (True, "true"),
    ],
)
def test_key_ids_use_relaxed_extended_json(identifier, expected):
    assert extjson.key_json(identifier) == expected


@pytest.mark.parametrize("path", PATHS)
def test_strict_json_option_writes_non_finite_doubles_as_extended_json(path):
    document = {"n": float("nan"), "i": [float("inf"), float("-inf")], "f": 1e-4}
    text = document_writer(path)(document, bare_non_finite=False)
    assert text == (
        '{"n": {"$numberDouble": "NaN"},"i": [{"$numberDouble": "Infinity"},{"$numberDouble": "-Infinity"}],'
        '"f": 1.0E-4}'
    )
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is not strict JSON"))
    assert math.isnan(extjson.parse(extjson.document_json(document))["n"])


@pytest.mark.parametrize("path", PATHS)
def test_native_uuids_are_written_as_standard_binary(path):
    value = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    text = document_writer(path)({"u": value})
    assert text == '{"u": {"$binary": "ABEiM0RVZneImaq7zN3u/w==","$type": "04"}}'
    stored = bson.encode({"u": value}, codec_options=CodecOptions(uuid_representation=UuidRepresentation.STANDARD))
    assert bson.encode(extjson.parse(text)) == stored


@pytest.mark.parametrize("path", PATHS)
def test_output_is_stable_and_keeps_field_order(path):
    document = {"z": 1, "a": {"y": Int64(2), "b": [3, {"x": OID}]}, "m": None}
    first = document_writer(path)(document)
    assert first == document_writer(path)(dict(document))
    assert [key for key in json.loads(first)] == ["z", "a", "m"]


def test_never_str_of_a_value():
    text = extjson.document_json({"oid": OID, "dec": Decimal128("2.5"), "ts": Timestamp(5, 6)})
    assert "ObjectId(" not in text and "Decimal128(" not in text and "Timestamp(" not in text


def test_raw_bson_and_son_documents_are_accepted():
    from bson.raw_bson import RawBSONDocument
    from bson.son import SON

    raw = RawBSONDocument(bson.encode({"_id": OID, "n": Int64(3)}))
    assert extjson.document_json(raw) == '{"_id": {"$oid": "596e275826f08b2730779e1f"},"n": {"$numberLong": "3"}}'
    assert extjson.document_json(SON([("b", 1), ("a", 2)])) == '{"b": 1,"a": 2}'


def test_python_regex_patterns_are_written_as_bson_regex():
    text = extjson.document_json({"r": re.compile("^a", re.IGNORECASE)})
    assert text == '{"r": {"$regex": "^a","$options": "iu"}}'


def test_relaxed_structure_for_flattened_documents():
    value = extjson.to_relaxed({"_id": OID, "n": Int64(5), "when": datetime.datetime(2020, 1, 1)})
    assert value == {"_id": {"$oid": str(OID)}, "n": 5, "when": {"$date": "2020-01-01T00:00:00Z"}}


def _random_structure(rnd: random.Random, depth: int = 0):
    """Strings full of the characters that matter to JSON text (quotes, colons, escapes), numbers at the int32,
    int64 and float formatting edges, every BSON type of VALUES, nested."""
    def text() -> str:
        return "".join(rnd.choice(['"', "\\", ":", "{", "[", ",", " ", "\n", "a", "é", "\x00", "\x1f", "\x7f",
                                   "\u2028", "😀"]) for _ in range(rnd.randint(0, 6)))

    choice = rnd.randint(0, 9 if depth < 4 else 5)
    if choice in (0, 1):
        return text()
    if choice == 2:
        return rnd.choice([0, -1, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**64, -(2**70), Int64(5)])
    if choice == 3:
        return rnd.choice([0.0, -0.0, 1e-7, 1e16, 1.5, 123456789.125, 5e-324, 1e308, float("nan"), float("-inf")])
    if choice == 4:
        return rnd.choice([True, False, None])
    if choice == 5:
        return rnd.choice(list(VALUES.values()))
    if choice in (6, 7):
        return {text(): _random_structure(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}
    return [_random_structure(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]


def _outcome(function, value) -> str:
    try:
        return function(value)
    except (TypeError, ValueError) as error:
        return f"{type(error).__name__}: {error}"


def test_fast_encoding_writes_the_text_json_writes():
    # document_json and key_json take orjson where they can; the reference is the plain writer (java_json).
    rnd = random.Random(20261123)
    documents = [{"_id": 1, name: value, "in": [value, {name: value}]} for name, value in VALUES.items()]
    documents += [{text: _random_structure(rnd) for text in ("_id", ":x", 'a"', "\\", "é")[: rnd.randint(0, 5)]}
                  for _ in range(3000)]
    documents += [{"_id": _random_structure(rnd), "v": _random_structure(rnd)} for _ in range(3000)]
    for document in documents:
        assert _outcome(extjson.document_json, document) == _outcome(
            lambda d: extjson.java_json(extjson.to_strict(d)), document)
        for identifier in (document.get("_id"), *document.values()):
            assert _outcome(extjson.key_json, identifier) == _outcome(
                lambda v: extjson.java_json(extjson.to_relaxed(v)), identifier)
