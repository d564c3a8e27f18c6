"""Raw BSON documents to Debezium's strict Extended JSON (`extjson.document_json`) without decoding them to dicts.

The compiled module ``_rawjson`` (csrc/*.c, built by scripts/install.sh) writes the text straight from the BSON
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
from bson.timestamp import Timestamp

from connectors.mongodb import extjson
from connectors.mongodb.java_utf8 import JAVA_REPLACE

# How the sources decode documents (connectors/mongodb/client.py): dates outside datetime's range as DatetimeMS,
# strings that are not valid UTF-8 with U+FFFD where the Java driver (Debezium) puts them.
DECODE_OPTIONS = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO,
                              unicode_decode_error_handler=JAVA_REPLACE)
# What the change stream reads: the event's fields decoded, its documents left raw (see `RawDocument`).
RAW_OPTIONS = CodecOptions(document_class=RawBSONDocument, datetime_conversion=DatetimeConversion.DATETIME_AUTO,
                           unicode_decode_error_handler=JAVA_REPLACE)


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
if compiled is not None and not all(
    hasattr(compiled, name)
    for name in ("document_json", "split_event", "id_document", "event_head", "change_value", "snapshot_value",
                 "reply_events", "change_messages", "update_description", "set_escape_table", "verify_rows",
                 "verify_event", "verify_key")
):
    compiled = None  # built from older sources: scripts/build_extensions.py rebuilds it
if compiled is not None:
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
RAW_DOCUMENT_FIELDS = ("fullDocument", "fullDocumentBeforeChange")


class RawChangeEvent:
    """A change stream event kept as its BSON bytes: the reader builds one per event of a reply (`reply_events`), the
    pipeline places it by its `head` and `raw_events` writes its Kafka messages from `raw`, without decoding it.

    ``head`` is the compiled module's `event_head` of the bytes, read when the event was built: ``(operationType, db,
    coll, resume token, (time, increment), updateDescription as BSON)``, None where absent (the token a ``{"_data":
    …}`` dict, or its BSON when it holds more); ``head`` is None when they cannot be read so (then `event` has them).
    `event` is the dict a decoding stream returns, but for its full documents, left raw (RawBSONDocument). It is
    decoded each time it is asked for: only the paths the compiled writer leaves to Python ask for it.
    """

    __slots__ = ("raw", "head")

    def __init__(self, raw: bytes, head: tuple | None):
        self.raw = raw
        self.head = head

    @classmethod
    def of(cls, raw: bytes) -> RawChangeEvent:
        """The event whose BSON is ``raw``."""
        return cls(raw, compiled.event_head(raw))

    @property
    def resume_token(self) -> Any:
        """The event's ``_id`` (its resume token), decoded as a decoding stream gives it."""
        head = self.head
        if head is None or head[3] is None:
            return self.event.get("_id")
        if type(head[3]) is bytes:  # a token of other fields than _data
            return bson.decode(head[3], DECODE_OPTIONS)
        return head[3]

    @property
    def cluster_time(self) -> Timestamp | None:
        head = self.head
        if head is None:
            return self.event.get("clusterTime")
        return Timestamp(*head[4]) if head[4] is not None else None

    @property
    def operation_type(self) -> str | None:
        head = self.head
        return self.event.get("operationType") if head is None else head[0]

    @property
    def event(self) -> dict[str, Any]:
        parts = compiled.split_event(self.raw)
        if parts is None:
            return bson.decode(self.raw, DECODE_OPTIONS)
        rest, full_document, before = parts
        event = bson.decode(rest, DECODE_OPTIONS)
        if full_document is not None:
            event["fullDocument"] = RawBSONDocument(full_document, RAW_OPTIONS)
        if before is not None:
            event["fullDocumentBeforeChange"] = RawBSONDocument(before, RAW_OPTIONS)
        return event

    def get(self, name: str, default: Any = None) -> Any:
        """A field of `event` (the resume token and the operation read from `head`, without decoding)."""
        if name == "_id":
            return self.resume_token
        if name == "operationType" and self.head is not None:
            return self.head[0]
        return self.event.get(name, default)

    def __getitem__(self, name: str) -> Any:
        value = self.get(name, _ABSENT)
        if value is _ABSENT:
            raise KeyError(name)
        return value

    def __repr__(self) -> str:
        return f"RawChangeEvent(head={self.head!r})"


_ABSENT = object()


def reply_events(reply: RawBSONDocument) -> tuple[list[RawChangeEvent], dict[str, Any]] | None:
    """The events of a change stream reply (`RawChangeEvent`), and its cursor document without its batch (id, ns,
    postBatchResumeToken) decoded; None when the reply is not one the compiled module reads."""
    split = compiled.reply_events(reply.raw, RawChangeEvent)
    if split is None:
        return None
    events, cursor = split
    return events, bson.decode(cursor, DECODE_OPTIONS)


def _decodes_as_sources(client_options: CodecOptions) -> bool:
    """Whether a client decodes as DECODE_OPTIONS, but for invalid UTF-8 (a client takes only Python's own error
    handlers: its documents are read raw and decoded with DECODE_OPTIONS, so the Java driver's rule applies)."""
    return client_options.with_options(unicode_decode_error_handler=JAVA_REPLACE) == DECODE_OPTIONS


def raw_stream_options(client_options: CodecOptions) -> CodecOptions | None:
    """The codec options a change stream reads with to keep its events raw (`RawChangeEvent`); None (decode as the
    client does) without the compiled writer, or when the client decodes differently from DECODE_OPTIONS (its own
    UUID or date handling), since `decoded` and the writers assume those."""
    if compiled is None or not _decodes_as_sources(client_options):
        return None
    return RAW_OPTIONS


def decoded(document: Any) -> Any:
    """A raw document decoded as the client decodes; anything else as it is."""
    if isinstance(document, RawBSONDocument):
        return bson.decode(document.raw, DECODE_OPTIONS)
    return document


# --- snapshot documents read raw -----------------------------------------------------------------------------------


def raw_snapshot_options(client_options: CodecOptions) -> CodecOptions | None:
    """The codec options a snapshot reads documents with to keep them raw (RawBSONDocument); None (decode as the
    client does) as for `raw_stream_options`."""
    if compiled is None or not _decodes_as_sources(client_options):
        return None
    return RAW_OPTIONS


def document_key(document: Any) -> dict[str, Any]:
    """``{"_id": …}`` of a document, decoded as the client decodes (without decoding a raw document's other fields)."""
    if type(document) is RawBSONDocument:
        key = compiled.id_document(document.raw)
        if key is not None:
            return bson.decode(key, DECODE_OPTIONS)
        return {"_id": decoded(document)["_id"]}
    return {"_id": document["_id"]}
