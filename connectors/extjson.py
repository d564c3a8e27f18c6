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
from collections.abc import Mapping
from typing import Any

from bson import json_util
from bson.binary import UuidRepresentation
from bson.codec_options import DatetimeConversion
from bson.dbref import DBRef
from bson.int64 import Int64
from bson.json_util import DatetimeRepresentation, JSONMode, JSONOptions

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


def document_json(document: Mapping[str, Any]) -> str:
    """A document as Debezium writes ``after``/``before``: strict Extended JSON text."""
    return dumps_compact(to_strict(document))


def key_json(value: Any) -> str:
    """The ``_id`` as Debezium writes the key's ``id``: relaxed Extended JSON of the bare value."""
    return dumps_compact(to_relaxed(value))


def parse(text: str) -> Any:
    """Extended JSON text (either dialect) back to BSON values."""
    return json_util.loads(text, json_options=PARSE_OPTIONS)


def _non_finite_name(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"
