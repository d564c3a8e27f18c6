"""Raw BSON documents to Debezium's strict Extended JSON (`extjson.document_json`) without decoding them to dicts.

The compiled module ``_rawjson`` (rawjson.c, built by scripts/install.sh) writes the text straight from the BSON
bytes; what it does not write itself (decimal128, code, DBPointer, binary subtype 2, DBRef-shaped documents, repeated
names, invalid UTF-8) it hands back, and the document is decoded and written by `extjson`, as it is for every document
when the module is not built. Both paths write the same bytes (tests/unit/test_rawjson.py).
"""

from __future__ import annotations

import re
from typing import Any

import bson
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument

from connectors.mongodb import extjson

# How the sources decode documents (connectors/mongodb/client.py): dates outside datetime's range as DatetimeMS.
DECODE_OPTIONS = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO)
# What the change stream reads: the event's fields decoded, its documents left raw (see `RawDocument`).
RAW_OPTIONS = CodecOptions(document_class=RawBSONDocument, datetime_conversion=DatetimeConversion.DATETIME_AUTO)


def escape_table(pattern: re.Pattern[str]) -> bytes:
    """One bit per BMP code point from U+007F that ``pattern`` (extjson's escaped characters) matches."""
    bits = bytearray(0x10000 // 8)
    for code in range(0x7F, 0x10000):
        if pattern.match(chr(code)):
            bits[code >> 3] |= 1 << (code & 7)
    return bytes(bits)


try:
    from connectors.mongodb import _rawjson as compiled
except ImportError:
    compiled = None
else:
    compiled.set_escape_table(escape_table(extjson.JAVA_ONLY))


def python_document_json(data: bytes | memoryview, *, bare_non_finite: bool = True) -> str:
    """The text of raw BSON ``data`` by the Python path: decoded, then `extjson.document_json`."""
    return extjson.document_json(bson.decode(data, DECODE_OPTIONS), bare_non_finite=bare_non_finite)


def document_json(data: bytes | memoryview, *, bare_non_finite: bool = True) -> str:
    """`extjson.document_json` of the document whose BSON bytes are ``data`` (``RawBSONDocument.raw``)."""
    if compiled is not None:
        text = compiled.document_json(data, bare_non_finite)
        if text is not None:
            return text
    return python_document_json(data, bare_non_finite=bare_non_finite)


# --- change events read raw ----------------------------------------------------------------------------------------

# The documents of a change event written as they came (never decoded when nothing needs their values).
RAW_DOCUMENT_FIELDS = frozenset({"fullDocument", "fullDocumentBeforeChange"})


def raw_stream_options(client_options: CodecOptions) -> CodecOptions | None:
    """The codec options a change stream reads with to keep its documents raw; None (decode as the client does)
    without the compiled writer, or when the client decodes differently from DECODE_OPTIONS (its own UUID or date
    handling), since `decoded` and the writers assume those."""
    if compiled is None or client_options != DECODE_OPTIONS:
        return None
    return RAW_OPTIONS


def decoded(document: Any) -> Any:
    """A raw document (or list) decoded as the client decodes; anything else as it is."""
    kind = type(document)
    if kind is RawBSONDocument:
        return bson.decode(document.raw, DECODE_OPTIONS)
    if kind is list:
        return [decoded(item) for item in document]
    return document


def event_with_raw_documents(event: RawBSONDocument) -> dict[str, Any]:
    """A change event read with RAW_OPTIONS as the dict a decoding stream returns, but for its full documents, which
    stay RawBSONDocument (`document_json` writes them from their bytes)."""
    return {name: value if name in RAW_DOCUMENT_FIELDS else decoded(value) for name, value in event.items()}
