"""A string whose bytes are not valid UTF-8 (MongoDB stores what clients send): the connector writes it as
Debezium does, with U+FFFD where the MongoDB Java driver puts one, in the snapshot and in the change stream,
instead of failing on InvalidBSON. The Java driver itself (tests/oracle) gives the expected text."""

from __future__ import annotations

import json
import random
import struct

import pymongo
import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

from connectors.mongodb import rawjson
from tests.emulator.test_invalid_utf8 import INVALID, with_string
from tests.integration.pipeline_harness import RunningConnector, connector_config, values, wait_for_events
from tests.oracle.java_json import RELAXED, STRICT, JavaJson, OracleUnavailable

pytestmark = pytest.mark.integration


def test_strings_that_are_not_utf8_are_written_as_debezium_writes_them(stack, mongo_rs, unique_name):
    name = "u" + unique_name.replace("-", "")[-12:]
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=10_000)
    raw = client[name].get_collection("texts", CodecOptions(document_class=RawBSONDocument))
    raw.insert_one(with_string(1, INVALID))
    running = RunningConnector(connector_config(name, mongo_rs.uri, database__include__list=name),
                               stack.kafka_bootstrap).start()
    running.wait_streaming()
    raw.insert_one(with_string(2, INVALID))
    records = wait_for_events(stack.kafka_bootstrap, f"{name}.{name}.texts", 2)
    running.finish()
    client.close()

    events = values(records)
    assert [e["op"] for e in events] == ["r", "c"]
    text = '"caf\ufffd \ufffd \ufffd"'  # one U+FFFD per malformed sequence, as Java's decoder counts them
    assert [e["after"] for e in events] == [f'{{"_id": {i},"s": {text},"nested": {{"t": {text}}}}}' for i in (1, 2)]
    try:
        java = JavaJson()
    except OracleUnavailable as missing:
        pytest.skip(str(missing))
    try:
        assert [e["after"] for e in events] == java.write([(STRICT, with_string(i, INVALID).raw) for i in (1, 2)])
    finally:
        java.close()


# Bytes around every boundary of UTF-8's lead and continuation ranges, and ASCII.
BYTES = [0x41, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0,
         0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFF]


def _string_document(text: bytes) -> bytes:
    body = b"\x02s\x00" + struct.pack("<i", len(text) + 1) + text + b"\x00"
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def test_every_malformed_sequence_is_replaced_where_the_java_driver_replaces_it():
    """20,000 random byte strings of lead, continuation and out-of-range bytes, written by our writer and by the
    Java driver's: the same text for each."""
    try:
        java = JavaJson()
    except OracleUnavailable as missing:
        pytest.skip(str(missing))
    rng = random.Random(20261128)
    documents = [_string_document(bytes(rng.choice(BYTES) for _ in range(rng.randint(1, 8)))) for _ in range(20_000)]
    try:
        expected = java.write([(RELAXED, document) for document in documents])
    finally:
        java.close()
    different = [(document, text) for document, text in zip(documents, expected, strict=True)
                 if json.loads(rawjson.document_json(document)) != json.loads(text)]
    assert not different, different[:5]
