"""BSON value helpers: MongoDB's type order, comparison, `$type` names, copying and document keys."""

from __future__ import annotations

import datetime
import math
import re
import unicodedata
from contextvars import ContextVar
from decimal import Decimal
from uuid import UUID

import bson
from bson import CodecOptions
from bson.binary import Binary
from bson.code import Code
from bson.codec_options import DatetimeConversion
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.raw_bson import RawBSONDocument
from bson.regex import Regex
from bson.timestamp import Timestamp

from devstack.mongo import rawstrings

# Dates outside datetime's years 1-9999 as DatetimeMS, string bytes that are not UTF-8 kept (rawstrings.py).
CODEC = rawstrings.CODEC
RAW_CODEC = CodecOptions(document_class=RawBSONDocument, datetime_conversion=DatetimeConversion.DATETIME_AUTO)
MAX_BSON_SIZE = 16 * 1024 * 1024
_EPOCH = datetime.datetime(1970, 1, 1)
_MILLISECOND = datetime.timedelta(milliseconds=1)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# Per-command settings that the matcher, sorter and expression evaluator consult (set by the dispatcher).
COLLATION: ContextVar = ContextVar("collation", default=None)     # string normaliser or None
LET_VARS: ContextVar = ContextVar("let_vars", default=None)       # evaluated `let` variables


def collation_normalizer(collation):
    """A function normalising strings for comparison under `collation` (strength 1-2), or None for binary."""
    if not isinstance(collation, dict) or collation.get("locale", "simple") == "simple":
        return None
    strength = collation.get("strength", 3)
    if strength >= 3:
        return None
    if strength == 2:
        return str.casefold

    def primary(s: str) -> str:
        return "".join(c for c in unicodedata.normalize("NFD", s.casefold()) if not unicodedata.combining(c))
    return primary


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING = _Missing()


def encode(doc) -> bytes:
    return rawstrings.encode(doc)


try:
    _dict_to_bson = bson._dict_to_bson  # C (or pure Python) encoder with a `top_level` switch
    _dict_to_bson({"b": 1, "_id": 1}, False, CODEC, False)
except Exception:  # pragma: no cover - a bson without the private helper
    _dict_to_bson = None


def encode_in_order(doc: dict) -> bytes:
    """Encode without moving `_id` to the front (bson.encode does that for top-level documents)."""
    if _dict_to_bson is not None:
        try:
            return _dict_to_bson(doc, False, CODEC, False)
        except UnicodeEncodeError:
            return rawstrings.encode(doc, top_level=False)
    data = bson.encode({"": doc}, codec_options=CODEC)
    return data[4 + 1 + 1: -1]


def raw_in_order(doc: dict) -> RawBSONDocument:
    return RawBSONDocument(encode_in_order(doc))


_I32 = __import__("struct").Struct("<i")


def elements(doc: dict) -> bytes:
    """The encoded elements of a document (no length prefix, no terminator), in order."""
    return encode_in_order(doc)[4:-1]


def wrap_elements(body: bytes) -> bytes:
    return _I32.pack(len(body) + 5) + body + b"\x00"


class RawCursor:
    """A reply's `cursor` document whose batch holds already-encoded documents; written out as byte chunks
    (one copy into the wire message instead of several)."""

    def __init__(self, key: bytes, items: list[bytes], pbrt, cursor_id, ns: str):
        self.key = key
        self.items = items
        tail: dict = {}
        if pbrt is not None:
            tail["postBatchResumeToken"] = pbrt
        tail["id"] = Int64(cursor_id)
        tail["ns"] = ns
        self.fields = tail

    def get(self, name, default=None):
        return self.fields.get(name, default)

    def chunks(self) -> list[bytes]:
        items = self.items
        keys = _INDEX_KEYS
        if len(items) > len(keys):
            keys = keys + [b"\x03" + str(i).encode() + b"\x00" for i in range(len(keys), len(items))]
        parts: list = [None] * (2 * len(items))
        parts[0::2] = keys[: len(items)]
        parts[1::2] = items
        arr_len = 5 + sum(map(len, parts))
        tail = elements(self.fields)
        head = b"\x04" + self.key + b"\x00"
        cursor_len = 4 + len(head) + arr_len + len(tail) + 1
        return [_I32.pack(cursor_len), head, _I32.pack(arr_len), *parts, b"\x00", tail, b"\x00"]

    def to_document(self) -> RawBSONDocument:
        return RawBSONDocument(b"".join(self.chunks()))


_INDEX_KEYS: list[bytes] = [b"\x03" + str(i).encode() + b"\x00" for i in range(20000)]


def raw_array(items: list[bytes]) -> bytes:
    """A BSON array document whose elements are already-encoded documents."""
    keys = _INDEX_KEYS
    if len(items) > len(keys):
        keys = keys + [b"\x03" + str(i).encode() + b"\x00" for i in range(len(keys), len(items))]
    parts = [None] * (2 * len(items))
    parts[0::2] = keys[: len(items)]
    parts[1::2] = items
    return wrap_elements(b"".join(parts))


def decode(data: bytes) -> dict:
    return bson.decode(data, codec_options=CODEC)


def copy_doc(doc: dict) -> dict:
    """A deep copy that keeps every BSON type exactly (round trip through the C codec)."""
    return bson.decode(rawstrings.encode(doc), codec_options=CODEC)


def raw(doc) -> RawBSONDocument:
    if isinstance(doc, RawBSONDocument):
        return doc
    return RawBSONDocument(rawstrings.encode(doc))


def to_plain(value):
    """RawBSONDocument (possibly nested in lists/dicts) -> plain dicts."""
    if isinstance(value, RawBSONDocument):
        return bson.decode(value.raw, codec_options=CODEC)
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    return value


def is_number(v) -> bool:
    return (isinstance(v, (int, float, Decimal128)) and not isinstance(v, bool))


# ---- type names and numbers ($type) ----------------------------------------------------------------

TYPE_ALIASES = {
    "double": 1, "string": 2, "object": 3, "array": 4, "binData": 5, "undefined": 6, "objectId": 7,
    "bool": 8, "date": 9, "null": 10, "regex": 11, "dbPointer": 12, "javascript": 13, "symbol": 14,
    "javascriptWithScope": 15, "int": 16, "timestamp": 17, "long": 18, "decimal": 19, "minKey": -1,
    "maxKey": 127,
}
TYPE_NAMES = {v: k for k, v in TYPE_ALIASES.items()}


def bson_type(v) -> int:
    if v is None:
        return 10
    if isinstance(v, bool):
        return 8
    if isinstance(v, Int64):
        return 18
    if isinstance(v, int):
        return 16 if INT32_MIN <= v <= INT32_MAX else 18
    if isinstance(v, float):
        return 1
    if isinstance(v, str):
        return 2
    if isinstance(v, (dict, RawBSONDocument, DBRef)):
        return 3
    if isinstance(v, (list, tuple)):
        return 4
    if isinstance(v, (bytes, Binary, UUID)):
        return 5
    if isinstance(v, ObjectId):
        return 7
    if isinstance(v, datetime.datetime):
        return 9
    if isinstance(v, (Regex, re.Pattern)):
        return 11
    if isinstance(v, Code):
        return 15 if v.scope is not None else 13
    if isinstance(v, Timestamp):
        return 17
    if isinstance(v, Decimal128):
        return 19
    if isinstance(v, MinKey):
        return -1
    if isinstance(v, MaxKey):
        return 127
    if hasattr(v, "__int__") and type(v).__name__ == "DatetimeMS":
        return 9
    return 3


def type_name(v) -> str:
    return TYPE_NAMES.get(bson_type(v), "object")


# ---- canonical order and comparison ------------------------------------------------------------------

_CANON = {
    -1: 0, 10: 1, 6: 1, 1: 2, 16: 2, 18: 2, 19: 2, 2: 3, 14: 3, 3: 4, 4: 5, 5: 6, 7: 7, 8: 8, 9: 9, 17: 10,
    11: 11, 12: 12, 13: 13, 15: 14, 127: 100,
}


def canon(v) -> int:
    if v is MISSING:
        return 1
    return _CANON[bson_type(v)]


def _num_key(v):
    if isinstance(v, Decimal128):
        d = v.to_decimal()
        if d.is_nan():
            return (2, 0)
        if d.is_infinite():
            return (2, 1, -math.inf if d < 0 else math.inf)
        return (2, 1, d)
    if isinstance(v, float) and math.isnan(v):
        return (2, 0)
    return (2, 1, v)


def sort_key(v):
    """A Python value whose ordering is MongoDB's BSON comparison order."""
    if v is None or v is MISSING:
        return (1,)
    t = type(v)
    if t is str:
        norm = COLLATION.get()
        return (3, norm(v)) if norm is not None else (3, v)
    if t is bool:
        return (8, v)
    if t is int or t is Int64 or t is float or t is Decimal128:
        return _num_key(v)
    if t is dict or isinstance(v, dict):
        return (4, tuple((canon(x), k, sort_key(x)) for k, x in v.items()))
    if t is ObjectId:
        return (7, v.binary)
    if t is datetime.datetime:
        return (9, date_millis(v))
    if t is DatetimeMS:
        return (9, int(v))
    if t is list or t is tuple:
        return (5, tuple((canon(x), sort_key(x)) for x in v))
    if isinstance(v, RawBSONDocument):
        return sort_key(decode(v.raw))
    if isinstance(v, DBRef):
        return sort_key(v.as_doc().to_dict())
    if isinstance(v, (bytes, Binary)):
        sub = v.subtype if isinstance(v, Binary) else 0
        return (6, len(v), sub, bytes(v))
    if isinstance(v, UUID):
        return (6, 16, 4, v.bytes)
    if isinstance(v, Timestamp):
        return (10, v.time, v.inc)
    if isinstance(v, Regex):
        return (11, v.pattern, str(v.flags))
    if isinstance(v, re.Pattern):
        return (11, v.pattern, "")
    if isinstance(v, Code):
        return (13, str(v))
    if isinstance(v, MinKey):
        return (0,)
    if isinstance(v, MaxKey):
        return (100,)
    if is_number(v):
        return _num_key(v)
    return (99, repr(v))


def date_millis(v) -> int:
    """Milliseconds since the epoch of a BSON date (a datetime, naive meaning UTC, or a DatetimeMS)."""
    if type(v) is DatetimeMS:
        return int(v)
    if v.tzinfo is not None:
        v = v.replace(tzinfo=None) - v.utcoffset()
    return (v - _EPOCH) // _MILLISECOND


def compare(a, b) -> int:
    ka, kb = sort_key(a), sort_key(b)
    return (ka > kb) - (ka < kb)


def values_equal(a, b) -> bool:
    """BSON equality: 1 == 1.0 == Int64(1), but true != 1 and {a: 1} != {a: true}."""
    if type(a) is type(b) and type(a) in (str, ObjectId, bool):
        return a == b
    return sort_key(a) == sort_key(b)


def exact_equal(a, b) -> bool:
    """Binary equality (types included): what `$set` uses to detect a no-op is looser; this is for diffs."""
    try:
        return encode({"v": a}) == encode({"v": b})
    except Exception:
        return a == b


# ---- keys for hashing values by BSON equality ---------------------------------------------------------

def hash_key(v):
    """A hashable key such that two values are BSON-equal iff their keys are equal."""
    t = type(v)
    if t is str:
        return ("s", v)
    if t is ObjectId:
        return ("o", v)
    if t is bool:
        return ("b", v)
    if t is int or t is Int64:
        return ("n", int(v))
    if t is Binary:  # a session's id: what sort_key gives, without its chain of type tests
        return ("k", repr((6, len(v), v.subtype, bytes(v))))
    if t is float:
        if math.isnan(v):
            return ("nan",)
        if v.is_integer():
            return ("n", int(v))
        return ("n", v)
    if v is None or v is MISSING:
        return ("z",)
    if t is Decimal128:
        d = v.to_decimal()
        if d.is_nan():
            return ("nan",)
        if d == d.to_integral_value() and d.is_finite():
            return ("n", int(d))
        try:
            f = float(d)
            if Decimal(f) == d:
                return ("n", f)
        except (OverflowError, ValueError):
            pass
        return ("d", d.normalize())
    return ("k", repr(sort_key(v)))


# ---- misc ---------------------------------------------------------------------------------------

def to_int(v) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, Decimal128):
        d = v.to_decimal()
        if d.is_finite() and d == d.to_integral_value():
            return int(d)
    return None


def truthy(v) -> bool:
    """MongoDB's notion of a true option value (numbers non-zero, booleans)."""
    if v is None or v is MISSING:
        return False
    if isinstance(v, bool):
        return v
    if is_number(v):
        return float(v.to_decimal() if isinstance(v, Decimal128) else v) != 0
    return True


def number_value(v):
    if isinstance(v, Decimal128):
        return v.to_decimal()
    return v


def now_ms_datetime() -> datetime.datetime:
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    return now.replace(microsecond=(now.microsecond // 1000) * 1000)


def fmt_value(v) -> str:
    """Shell-like rendering used in error messages (`{ _id: 1 }`)."""
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{k}: {fmt_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[ " + ", ".join(fmt_value(x) for x in v) + " ]" if v else "[]"
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, ObjectId):
        return f"ObjectId('{v}')"
    if isinstance(v, float):
        return repr(v).replace("inf", "inf") if not v.is_integer() else f"{v:.1f}"
    return str(v)
