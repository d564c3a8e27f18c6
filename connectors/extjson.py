"""BSON values to MongoDB Extended JSON text, the way Debezium's MongoDB connector writes them.

Two dialects are used, as in Debezium (``JsonSerialization``):

* documents (``before``, ``after``, ``updatedFields``, ``patch``, ``filter``, ``lsid``) use the
  *strict* dialect of the Java driver: ``$numberLong`` for int64, ``{"$date": <millis>}``,
  ``{"$binary": "<base64>", "$type": "00"}``, ``{"$regex": …, "$options": …}``. Every BSON type keeps
  its type through a round trip, yet int32, doubles, strings and booleans stay plain JSON.
* the message key's ``id`` uses *relaxed* Extended JSON v2 (``"1004"``, ``{"$oid": "…"}``).

Both are written with Java's compact separators (``,`` between items, ``": "`` after a name), so a
document reads ``{"_id": {"$numberLong": "1004"},"name": "Anne"}`` exactly like Debezium's output.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import orjson
from bson import json_util
from bson.binary import UuidRepresentation
from bson.codec_options import DatetimeConversion
from bson.dbref import DBRef
from bson.int64 import Int64
from bson.json_util import DatetimeRepresentation, JSONMode, JSONOptions
from bson.objectid import ObjectId

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1

# Native uuid.UUID values (a source decoding with uuidRepresentation=standard) are written as
# binary subtype 4, the same bytes MongoDB stores.
STRICT_OPTIONS = JSONOptions(
    json_mode=JSONMode.LEGACY,
    strict_number_long=True,
    datetime_representation=DatetimeRepresentation.LEGACY,
    strict_uuid=True,
    uuid_representation=UuidRepresentation.STANDARD,
)
RELAXED_OPTIONS = JSONOptions(
    json_mode=JSONMode.RELAXED,
    uuid_representation=UuidRepresentation.STANDARD,
)
# Reading back: keep subtype-4 binaries as Binary, and dates outside Python's range as DatetimeMS,
# so that parse(dumps(doc)) encodes to the same BSON bytes as doc.
PARSE_OPTIONS = JSONOptions(
    tz_aware=True,
    uuid_representation=UuidRepresentation.UNSPECIFIED,
    datetime_conversion=DatetimeConversion.DATETIME_AUTO,
)

_SEPARATORS = (",", ": ")
_JAVA_STYLE = json.JSONEncoder(separators=_SEPARATORS, ensure_ascii=False, allow_nan=False).encode


def to_strict(value: Any) -> Any:
    """The JSON-ready structure of ``value`` in Debezium's strict dialect."""
    kind = type(value)
    # Exact-type checks first: this runs for every value of every document, and Code, for one,
    # is a str subclass that must not pass as a plain string.
    if kind is dict:
        return {key: to_strict(item) for key, item in value.items()}
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        # A Python int outside int32 is stored by BSON as int64: say so, as Debezium does.
        return value if _INT32_MIN <= value <= _INT32_MAX else {"$numberLong": str(value)}
    if kind is list:
        return [to_strict(item) for item in value]
    if kind is Int64:
        return {"$numberLong": str(int(value))}
    if kind is float:
        # The legacy dialect would print a bare NaN, which is not JSON.
        return value if math.isfinite(value) else {"$numberDouble": _non_finite_name(value)}
    return _strict_other(value)


def _strict_other(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: to_strict(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_strict(item) for item in value]
    if isinstance(value, DBRef):
        return to_strict(value.as_doc())
    if isinstance(value, Int64):
        return {"$numberLong": str(int(value))}
    if isinstance(value, int) and not isinstance(value, bool):
        return to_strict(int(value))
    if isinstance(value, float):
        return to_strict(float(value))
    return json_util.default(value, STRICT_OPTIONS)


class _ColonFirst(Exception):
    """A name or string starts with a colon: in orjson's compact text its `":` would not end a name."""


def _strict_for_orjson(value: Any) -> Any:
    """`to_strict`, with floats as fragments of Python's repr (orjson's shortest form differs: 1e-07 vs 1e-7)."""
    kind = type(value)
    if kind is dict:
        for key in value:
            if key[:1] == ":":
                raise _ColonFirst
        return {key: _strict_for_orjson(item) for key, item in value.items()}
    if kind is str:
        if value[:1] == ":":
            raise _ColonFirst
        return value
    if kind is bool or value is None:
        return value
    if kind is int:
        return value if _INT32_MIN <= value <= _INT32_MAX else {"$numberLong": str(value)}
    if kind is list:
        return [_strict_for_orjson(item) for item in value]
    if kind is Int64:
        return {"$numberLong": str(int(value))}
    if kind is float:
        return orjson.Fragment(repr(value)) if math.isfinite(value) else {"$numberDouble": _non_finite_name(value)}
    return _floats_as_fragments(_strict_other(value))


def _floats_as_fragments(structure: Any) -> Any:
    """A JSON-ready structure (json_util's output may hold raw values, such as a code scope) made ready for orjson."""
    if isinstance(structure, dict):
        for key in structure:
            if key[:1] == ":":
                raise _ColonFirst
        return {key: _floats_as_fragments(item) for key, item in structure.items()}
    if isinstance(structure, list | tuple):
        return [_floats_as_fragments(item) for item in structure]
    if isinstance(structure, float):
        if not math.isfinite(structure):
            raise TypeError("non-finite float")  # json refuses it (allow_nan=False): let it say so
        return orjson.Fragment(float.__repr__(structure))
    if isinstance(structure, str) and structure[:1] == ":":
        raise _ColonFirst
    return structure


def to_relaxed(value: Any) -> Any:
    """The JSON-ready structure of ``value`` in relaxed Extended JSON v2."""
    kind = type(value)
    if kind is dict:
        return {key: to_relaxed(item) for key, item in value.items()}
    if kind is str or kind is bool or kind is int or value is None:
        return value
    if kind is list:
        return [to_relaxed(item) for item in value]
    if isinstance(value, Mapping):
        return {key: to_relaxed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_relaxed(item) for item in value]
    if isinstance(value, DBRef):
        return to_relaxed(value.as_doc())
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    return json_util.default(value, RELAXED_OPTIONS)


def dumps_compact(structure: Any) -> str:
    """JSON text with the Java driver's separators; non-ASCII characters are kept as they are."""
    return _JAVA_STYLE(structure)


_LINE_BREAKS = re.compile(rb"\n *")


def _orjson_java_style(structure: Any) -> str | None:
    """What `dumps_compact` writes, written by orjson (several times faster); None where orjson refuses the
    structure (an int over 64 bits, a name that is not a string, a lone surrogate, nesting over 255 levels).

    orjson escapes strings as json does (ensure_ascii=False) but writes `"name":value`. Where every `":` ends a name
    (no escaped quote, and no name or string that starts with a colon, which `_strict_for_orjson` reports), adding
    the space after each gives json's text; otherwise orjson's indented form does, once its line breaks (strings
    escape theirs) and indentation are removed.
    """
    try:
        text = orjson.dumps(structure)
    except TypeError:  # orjson.JSONEncodeError
        return None
    if b"\\" in text or text.startswith(b'":'):
        return _LINE_BREAKS.sub(b"", orjson.dumps(structure, option=orjson.OPT_INDENT_2)).decode()
    return text.replace(b'":', b'": ').decode()


def document_json(document: Mapping[str, Any]) -> str:
    """A document as Debezium writes ``after``/``before``: strict Extended JSON text."""
    try:
        text = _orjson_java_style(_strict_for_orjson(document))
    except (_ColonFirst, TypeError):  # rare; for a TypeError (an unknown type) json says why
        text = None
    return text if text is not None else dumps_compact(to_strict(document))


def key_json(value: Any) -> str:
    """The ``_id`` as Debezium writes the key's ``id``: relaxed Extended JSON of the bare value."""
    kind = type(value)
    if kind is int:
        return str(value)  # what json writes for any int
    if kind is ObjectId:
        return f'{{"$oid": "{value}"}}'
    if kind is str:
        text = _orjson_java_style(value)
        if text is not None:
            return text
    return dumps_compact(to_relaxed(value))


def parse(text: str) -> Any:
    """Extended JSON text (either dialect) back to BSON values."""
    return json_util.loads(text, json_options=PARSE_OPTIONS)


def _non_finite_name(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"
