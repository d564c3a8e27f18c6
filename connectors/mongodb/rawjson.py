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
if compiled is not None and not all(
    hasattr(compiled, name)
    for name in ("document_json", "split_event", "id_document", "event_head", "change_value", "snapshot_value",
                 "set_escape_table")
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


class RawChangeEvent(RawBSONDocument):
    """The document class of a change stream that keeps its full documents raw.

    pymongo builds one for each document of a reply (the reply, its cursor, each event) and reads the event's ``_id``,
    which `head` gives without decoding the rest. The change stream reader queues the event itself: the pipeline
    places it by its `head` and `raw_events` writes its Kafka messages from the raw bytes. Where a field is read
    otherwise, a document holding fullDocument or fullDocumentBeforeChange (an event) is cut in C: its other fields
    are decoded as the client decodes, its full documents stay RawBSONDocument; RawBSONDocument's own field access
    would build a RawBSONDocument of every sub-document, which costs more than decoding them. Any other document
    behaves as a RawBSONDocument. ``event`` is the dict a decoding stream returns, but for the raw full documents.
    """

    # Defaults on the class, set on the instance when first computed: pymongo builds one per event, and an __init__
    # of our own would cost a Python call each.
    _split: dict[str, Any] | bool | None = None  # None: not yet cut; False: nothing to cut
    _head: tuple | bool | None = None  # None: not yet read; False: unreadable (malformed)
    _token: Any = None

    @property
    def head(self) -> tuple | None:
        """``(operationType, db, coll, resume token, (time, increment), updateDescription as BSON)`` read from the raw
        bytes (None where absent; the token a ``{"_data": …}`` dict, or its BSON when it holds more); None when they
        cannot be read so (then `event` has them)."""
        if self._head is None:
            self._head = compiled.event_head(self.raw) or False
        return self._head or None

    @property
    def resume_token(self) -> Any:
        """The event's ``_id`` (its resume token), decoded as a decoding stream gives it."""
        if self._token is None:
            head = self.head
            if head is None or head[3] is None:
                self._token = self.event.get("_id")
            elif type(head[3]) is bytes:  # a token of other fields than _data
                self._token = bson.decode(head[3], DECODE_OPTIONS)
            else:
                self._token = head[3]
        return self._token

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

    def _with_raw_documents(self) -> dict[str, Any] | None:
        if self._split is None:
            parts = compiled.split_event(self.raw)
            if parts is None or (parts[1] is None and parts[2] is None):
                self._split = False
            else:
                rest, full_document, before = parts
                event = bson.decode(rest, DECODE_OPTIONS)
                if full_document is not None:
                    event["fullDocument"] = RawBSONDocument(full_document, RAW_OPTIONS)
                if before is not None:
                    event["fullDocumentBeforeChange"] = RawBSONDocument(before, RAW_OPTIONS)
                self._split = event
        return self._split or None

    @property
    def event(self) -> dict[str, Any]:
        return self._with_raw_documents() or bson.decode(self.raw, DECODE_OPTIONS)

    def __getitem__(self, key: str) -> Any:
        if key == "_id" and self._split is None:
            return self.resume_token  # what pymongo reads of every event
        event = self._with_raw_documents()
        return event[key] if event is not None else super().__getitem__(key)

    def __iter__(self):
        event = self._with_raw_documents()
        return iter(event) if event is not None else super().__iter__()

    def __len__(self) -> int:
        event = self._with_raw_documents()
        return len(event) if event is not None else super().__len__()

    def items(self):
        event = self._with_raw_documents()
        return event.items() if event is not None else super().items()


RAW_EVENT_OPTIONS = DECODE_OPTIONS.with_options(document_class=RawChangeEvent)


def raw_stream_options(client_options: CodecOptions) -> CodecOptions | None:
    """The codec options a change stream reads with to keep its documents raw (its items are `RawChangeEvent`);
    None (decode as the client does) without the compiled writer, or when the client decodes differently from
    DECODE_OPTIONS (its own UUID or date handling), since `decoded` and the writers assume those."""
    if compiled is None or client_options != DECODE_OPTIONS:
        return None
    return RAW_EVENT_OPTIONS


def decoded(document: Any) -> Any:
    """A raw document decoded as the client decodes; anything else as it is."""
    if isinstance(document, RawBSONDocument):
        return bson.decode(document.raw, DECODE_OPTIONS)
    return document


# --- snapshot documents read raw -----------------------------------------------------------------------------------


def raw_snapshot_options(client_options: CodecOptions) -> CodecOptions | None:
    """The codec options a snapshot reads documents with to keep them raw (RawBSONDocument); None (decode as the
    client does) as for `raw_stream_options`."""
    if compiled is None or client_options != DECODE_OPTIONS:
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
