"""Verify's rows of a raw batch of MongoDB documents (connectors/mongodb/verify.py, docs/verify.md).

A row is what Verify compares of a document: its snapshot event's key as canonical JSON (`verify_events.key_text`)
and its `after` text (`extjson.document_json`), for a collection whose events are Debezium's envelope and carry the
documents as they are (no field rules). The compiled module's `verify_rows` writes the rows of a whole batch as the
server sent it (a raw batch cursor's bytes) without a Python call per document; what it leaves to Python (an `_id` of
another type than int, string and ObjectId, a key of other than printable ASCII, a value its writer does not write),
and every document when it is not built, `python_row` writes. Both give the same rows (tests/unit/test_verify_rows.py).
"""

from __future__ import annotations

import bson

from connectors.core.verify_events import key_text
from connectors.mongodb import extjson
from connectors.mongodb.events import encode_envelope
from connectors.mongodb.rawjson import DECODE_OPTIONS, RAW_OPTIONS, compiled


def python_row(data: bytes, bare_non_finite: bool) -> tuple[str, str]:
    """The row of the document whose BSON is ``data``: its key as the connector writes it (events.EventBuilder.key,
    without schemas) as canonical JSON, and its text."""
    document = bson.decode(data, DECODE_OPTIONS)
    key = encode_envelope({"id": extjson.key_json(document["_id"])})
    return key_text(key), extjson.document_json(document, bare_non_finite=bare_non_finite)


def python_rows(batch: bytes, bare_non_finite: bool) -> list[tuple[str, str]]:
    return [python_row(document.raw, bare_non_finite) for document in bson.decode_all(batch, RAW_OPTIONS)]


def rows_of_batch(batch: bytes, bare_non_finite: bool) -> list[tuple[str, str]]:
    """The rows of a raw batch (BSON documents one after the other), in its order."""
    if compiled is not None:
        rows = compiled.verify_rows(batch, bare_non_finite)
        if rows is not None:
            return [row if type(row) is tuple else python_row(row, bare_non_finite) for row in rows]
    return python_rows(batch, bare_non_finite)
