"""The compiled JSON string writers find the bytes they must escape eight at a time (connectors/csrc/plain_bytes.h).
Every character they treat apart (controls, the quote, the backslash, DEL, UTF-8 of two to four bytes, a code point
the Java driver escapes), at every offset of a word and of the tail after the last whole word, comes out as the
Python writers write it: MongoDB's documents (writer.c) and their text inside a change value (change_event.c), and
MariaDB's row strings (json_text.h; PostgreSQL's in tests/postgres/test_pgrows.py). And the MongoDB value writer's
buffers, kept from one call to the next, leave nothing of a large document in what it writes after it."""

from __future__ import annotations

import bson
import orjson

from connectors.events.json_converter import string_json
from connectors.mongodb import rawjson
from connectors.mongodb.events import encode_envelope
from connectors.mysql import compiled_rows
from connectors.mysql.compiled_rows import WRITE_STRING
from tests.compiled_modules import require_built
from tests.unit.document_writers import require_compiled

SPECIAL = ["\x00", "\x1f", "\n", '"', "\\", "\x7f", "/", "é", "€", "\u2028", "\U0001f600"]


def strings_around_special_characters() -> list[str]:
    """Plain runs of 0-17 characters, one special character, and a plain run of 0-9 after it."""
    return [("p" * before) + special + ("s" * after)
            for special in SPECIAL for before in range(18) for after in range(10)] + ["x" * n for n in range(34)]


def test_mongodb_documents_and_their_text_in_a_value_are_written_as_python_writes_them():
    require_compiled()
    prefix = b'{"version":"1","connector":"mongodb","name":"n","ts_ms":'
    for text in strings_around_special_characters():
        raw = bson.encode({"_id": 1, "s": text})
        expected = rawjson.python_document_json(raw)
        assert rawjson.compiled.document_json(raw, True) == expected, repr(text)
        value, key = rawjson.compiled.snapshot_value(raw, prefix, True, 1, "false", "db", "coll")
        assert encode_envelope(expected) in value, repr(text)
        assert orjson.loads(value)["after"] == expected


def test_mariadb_row_strings_are_written_as_python_writes_them():
    require_built(compiled_rows.compiled, "connectors/mysql/_binrows")
    writers = (("c", '"c":', WRITE_STRING, string_json),)
    for text in strings_around_special_characters():
        assert compiled_rows.write_row({"c": text}, writers) == "{" + '"c":' + string_json(text) + "}", repr(text)


def test_values_written_after_a_large_document_are_those_written_before_it():
    """The compiled writer keeps its buffers between calls and gives back one a large document grew past 1 MB
    (change_event.c `keep_buffer`): what it writes next is unchanged."""
    require_compiled()
    prefix = b'{"version":"1","connector":"mongodb","name":"n","ts_ms":'
    small, large = bson.encode({"_id": 1, "s": 'a"b'}), bson.encode({"_id": 2, "s": "x" * 3_000_000})
    first = rawjson.compiled.snapshot_value(small, prefix, True, 1, "false", "db", "coll")
    value, _ = rawjson.compiled.snapshot_value(large, prefix, True, 1, "false", "db", "coll")
    assert orjson.loads(value)["after"] == rawjson.python_document_json(large)
    assert rawjson.compiled.snapshot_value(small, prefix, True, 1, "false", "db", "coll") == first
    assert orjson.loads(first[0])["after"] == rawjson.python_document_json(small)
