"""Strings that are not valid UTF-8: a real mongod stores the bytes a client sends and returns them as they are
(in find, in change events, after an update of another field); the emulator used to drop the connection
(InvalidBSON while parsing the message, AutoReconnect in the client)."""

from __future__ import annotations

import struct

import bson
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

KEEP = CodecOptions(unicode_decode_error_handler="surrogateescape")
INVALID = b"caf\xe9 \xed\xa0\x80 \xff"  # Latin-1 e-acute, a UTF-8-encoded surrogate, a byte never in UTF-8


def with_string(_id: int, text: bytes) -> RawBSONDocument:
    """{_id, s: text, nested: {t: text}} with `text` as the string's bytes, whatever they are."""
    string = struct.pack("<i", len(text) + 1) + text + b"\x00"
    nested = b"\x02t\x00" + string
    body = (b"\x10_id\x00" + struct.pack("<i", _id) + b"\x02s\x00" + string
            + b"\x03nested\x00" + struct.pack("<i", len(nested) + 5) + nested + b"\x00")
    return RawBSONDocument(struct.pack("<i", len(body) + 5) + body + b"\x00")


def test_string_bytes_that_are_not_utf8_are_stored_and_returned_as_sent(coll):
    document = with_string(1, INVALID)
    raw = coll.with_options(codec_options=KEEP.with_options(document_class=RawBSONDocument))
    with raw.watch() as stream:
        raw.insert_one(document)
        raw.update_one({"_id": 1}, {"$set": {"n": 1}})
        inserted, updated = stream.next(), stream.next()
    assert inserted["fullDocument"].raw == document.raw
    found = raw.find_one({"_id": 1})
    assert bson.decode(found.raw, KEEP) == {"_id": 1, "s": INVALID.decode("utf-8", "surrogateescape"),
                                            "nested": {"t": INVALID.decode("utf-8", "surrogateescape")}, "n": 1}
    assert updated["operationType"] == "update"
    assert coll.database.command("ping")["ok"] == 1  # the connection is still there


def test_a_projection_of_only_the_id_returns_only_the_id(coll):
    """As mongod: `{_id: 1}` is an inclusion projection (the connector's snapshot planning reads bounds this way,
    and must not read, let alone decode, whole documents)."""
    coll.insert_one({"_id": 1, "s": "x", "n": 2})
    assert list(coll.find({}, {"_id": 1})) == [{"_id": 1}]
    assert list(coll.find({}, {"_id": True, "s": 1})) == [{"_id": 1, "s": "x"}]
    assert list(coll.find({}, {"_id": 0})) == [{"s": "x", "n": 2}]
