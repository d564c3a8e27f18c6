"""MongoDB's BSON comparison order on the client, for `_id` chunk boundaries of mixed types.

The `_id` index orders values first by *type bracket* (MinKey < null < numbers < strings < objects < arrays <
binary < ObjectId < booleans < dates < timestamps < regular expressions < … < MaxKey), then within the bracket.
A query operator such as `$gt` or `$lt` only matches values of its operand's bracket, so `{_id: {$gt: 5}}` never
returns a string `_id`. Chunk queries therefore keep each range inside one bracket and name whole brackets in
between with `$type` (see `chunks.range_query`).

`sort_key(value)` gives a Python value ordered exactly like the server orders `_id` values (no collation): it
sorts sampled boundaries when the server has no `splitVector`.
"""

from __future__ import annotations

import datetime
import math
import re
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from bson import Binary, Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS
from bson.raw_bson import RawBSONDocument

# (bracket, `$type` aliases matching it), in index order.
BRACKETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("minKey", ("minKey",)),
    ("undefined", ("undefined",)),
    ("null", ("null",)),
    ("number", ("double", "int", "long", "decimal")),
    ("string", ("string", "symbol")),
    ("object", ("object",)),
    ("array", ("array",)),
    ("binData", ("binData",)),
    ("objectId", ("objectId",)),
    ("bool", ("bool",)),
    ("date", ("date",)),
    ("timestamp", ("timestamp",)),
    ("regex", ("regex",)),
    ("dbPointer", ("dbPointer",)),
    ("javascript", ("javascript",)),
    ("javascriptWithScope", ("javascriptWithScope",)),
    ("maxKey", ("maxKey",)),
)
BRACKET_INDEX = {name: index for index, (name, _) in enumerate(BRACKETS)}
MIN_KEY = BRACKET_INDEX["minKey"]
MAX_KEY = BRACKET_INDEX["maxKey"]


def bracket(value: Any) -> int:
    """The index in `BRACKETS` of the type bracket `value` sorts in."""
    if value is None:
        return BRACKET_INDEX["null"]
    if isinstance(value, bool):  # before int: bool is an int subclass
        return BRACKET_INDEX["bool"]
    if isinstance(value, int | float | Decimal128 | Int64 | Decimal):
        return BRACKET_INDEX["number"]
    if isinstance(value, str):
        return BRACKET_INDEX["string"]
    if isinstance(value, ObjectId):
        return BRACKET_INDEX["objectId"]
    if isinstance(value, Mapping | DBRef | RawBSONDocument):
        return BRACKET_INDEX["object"]
    if isinstance(value, list | tuple):
        return BRACKET_INDEX["array"]
    if isinstance(value, bytes | Binary | uuid.UUID):
        return BRACKET_INDEX["binData"]
    if isinstance(value, datetime.datetime | DatetimeMS):
        return BRACKET_INDEX["date"]
    if isinstance(value, Timestamp):
        return BRACKET_INDEX["timestamp"]
    if isinstance(value, Regex | re.Pattern):
        return BRACKET_INDEX["regex"]
    if isinstance(value, Code):
        return BRACKET_INDEX["javascriptWithScope" if value.scope is not None else "javascript"]
    if isinstance(value, MinKey):
        return MIN_KEY
    if isinstance(value, MaxKey):
        return MAX_KEY
    raise TypeError(f"no BSON type bracket for {type(value).__name__}")


def type_aliases(first: int, last: int) -> list[str]:
    """`$type` aliases of the brackets first..last (inclusive); empty when first > last."""
    return [alias for index in range(max(first, 0), min(last, MAX_KEY) + 1) for alias in BRACKETS[index][1]]


def _number(value: Any) -> tuple:
    if isinstance(value, Decimal128):
        value = value.to_decimal()
    if isinstance(value, Decimal):
        if value.is_nan():
            return (0,)
        return (1, value)
    if isinstance(value, float) and math.isnan(value):
        return (0,)  # NaN sorts below every other number
    return (1, value)


def _millis(value: Any) -> int:
    if isinstance(value, DatetimeMS):
        return int(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    return int((value - datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)) / datetime.timedelta(milliseconds=1))


def sort_key(value: Any) -> tuple:
    """A tuple whose Python ordering is the server's `_id` order (binary string comparison, no collation)."""
    index = bracket(value)
    name = BRACKETS[index][0]
    if name == "number":
        return (index, *_number(value))
    if name == "string":
        return (index, value.encode("utf-8", "surrogatepass"))
    if name == "object":
        if isinstance(value, RawBSONDocument):
            value = dict(value.items())
        elif isinstance(value, DBRef):
            value = value.as_doc()
        return (index, tuple((bracket(item), str(key).encode(), sort_key(item)) for key, item in value.items()))
    if name == "array":
        return (index, tuple((bracket(item), sort_key(item)) for item in value))
    if name == "binData":
        if isinstance(value, uuid.UUID):
            return (index, 16, 4, value.bytes)
        subtype = value.subtype if isinstance(value, Binary) else 0
        return (index, len(value), subtype, bytes(value))
    if name == "objectId":
        return (index, value.binary)
    if name == "bool":
        return (index, bool(value))
    if name == "date":
        return (index, _millis(value))
    if name == "timestamp":
        return (index, value.time, value.inc)
    if name == "regex":
        flags = value.flags if isinstance(value, Regex) else value.flags
        return (index, str(value.pattern), str(flags))
    if name.startswith("javascript"):
        return (index, str(value))
    return (index,)
