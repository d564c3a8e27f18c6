"""Strings that are not valid UTF-8, kept byte for byte, as a real mongod keeps them.

mongod stores and returns string bytes as clients sent them. The emulator decodes BSON with the `surrogateescape`
error handler (each byte that is not UTF-8 becomes a lone surrogate U+DC80..U+DCFF) and encodes such strings back
to the same bytes: `encode` is `bson.encode`, except for a document holding such a string (or key), which
pymongo's encoder refuses; that document is encoded here, element by element, with every other value encoded by
pymongo.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

import bson
from bson import CodecOptions
from bson.codec_options import DatetimeConversion
from bson.raw_bson import RawBSONDocument

KEEP_BYTES = "surrogateescape"
# Dates outside datetime's years 1-9999 (a real mongod stores any 64-bit date) decode as DatetimeMS.
CODEC = CodecOptions(document_class=dict, tz_aware=False, datetime_conversion=DatetimeConversion.DATETIME_AUTO,
                     unicode_decode_error_handler=KEEP_BYTES)
_I32 = struct.Struct("<i")


def encode(doc: Mapping, top_level: bool = True, codec_options: CodecOptions = CODEC) -> bytes:
    """`bson.encode(doc)` (top-level documents with `_id` first), keeping the bytes of strings read with CODEC."""
    try:
        return bson.encode(doc, codec_options=codec_options) if top_level else _in_order(doc, codec_options)
    except UnicodeEncodeError:
        return _document(doc, top_level, codec_options)


def _in_order(doc: Mapping, codec_options: CodecOptions) -> bytes:
    return bson.encode({"": doc}, codec_options=codec_options)[4 + 1 + 1:-1]


def _cstring(text: str) -> bytes:
    return text.encode("utf-8", KEEP_BYTES) + b"\x00"


def _document(doc: Mapping, top_level: bool, codec_options: CodecOptions) -> bytes:
    if isinstance(doc, RawBSONDocument):
        return doc.raw
    keys = list(doc)
    if top_level and "_id" in doc:
        keys.remove("_id")
        keys.insert(0, "_id")
    body = b"".join(_element(str(key), doc[key], codec_options) for key in keys)
    return _I32.pack(len(body) + 5) + body + b"\x00"


def _element(key: str, value, codec_options: CodecOptions) -> bytes:
    if isinstance(value, str):
        data = value.encode("utf-8", KEEP_BYTES)
        return b"\x02" + _cstring(key) + _I32.pack(len(data) + 1) + data + b"\x00"
    if isinstance(value, Mapping) and not isinstance(value, RawBSONDocument):
        return b"\x03" + _cstring(key) + encode(value, False, codec_options)
    if isinstance(value, (list, tuple)):
        items = {str(index): item for index, item in enumerate(value)}
        return b"\x04" + _cstring(key) + encode(items, False, codec_options)
    single = bson.encode({"k": value}, codec_options=codec_options)  # type byte, b"k\x00", the value, b"\x00"
    return single[4:5] + _cstring(key) + single[7:-1]
