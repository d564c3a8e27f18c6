"""BSON values to MongoDB Extended JSON text, byte for byte as Debezium's MongoDB connector writes it.

Debezium renders documents with the MongoDB Java driver's ``JsonWriter`` (``JsonSerialization``) in three settings:

* ``before``, ``after``, ``patch``, ``filter``, ``lsid``: *strict* mode, compact (``,`` between items, ``": "``
  after a name): ``{"_id": {"$numberLong": "1004"},"name": "Anne"}``, ``{"$date": <millis>}``,
  ``{"$binary": "<base64>", "$type": "00"}``, ``{"$regex": …, "$options": …}``, bare ``NaN``/``Infinity``;
* ``updateDescription.updatedFields`` (Debezium 2.5+): *relaxed* mode with the default layout (``, `` between
  items): ``{"n": 5, "d": {"$date": "2021-06-01T00:00:00Z"}}``;
* the key's ``id``: *relaxed* mode, compact.

In all of them doubles are Java's ``Double.toString`` (``1.0E7``, ``4.9E-324``), and strings keep a character as it
is only when its Unicode category is a letter (not a modifier letter), number, punctuation, symbol or the space
separator; every other character is written ``\\uXXXX`` per UTF-16 code unit (the driver's
``StrictCharacterStreamJsonWriter``): emoji as surrogate pairs, U+2028/2029, DEL, combining marks, format and control
characters escaped. ``tests/unit/test_extjson_oracle.py`` compares this module with the Java driver itself.

Categories come from Python's ``unicodedata`` (Unicode 14 on Python 3.11): a character assigned by a later Unicode
version is escaped here, whereas a JVM knowing it writes it raw.
"""

from __future__ import annotations

import base64
import datetime
import math
import re
import sys
import unicodedata
import uuid
from collections.abc import Mapping
from typing import Any

import orjson
from bson import json_util
from bson.binary import Binary, UuidRepresentation
from bson.code import Code
from bson.codec_options import DatetimeConversion
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.int64 import Int64
from bson.json_util import DatetimeRepresentation, JSONMode, JSONOptions
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_MAX_ISO_MS = 253402300799999  # 9999-12-31T23:59:59.999Z: relaxed mode writes ISO text for 1970..9999 only

# Native uuid.UUID values (a source decoding with uuidRepresentation=standard) are written as binary subtype 4.
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

# --- the driver's number and string rules ------------------------------------------------------------------------

_RAW_CATEGORIES = frozenset("Lu Ll Lt Lo Nd Nl No Zs Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So".split())


def _escaped_class() -> str:
    """A regex class of the characters beyond ASCII (and DEL) that the driver escapes."""
    ranges: list[list[int]] = []
    for code in range(0x7F, 0x10000):
        if unicodedata.category(chr(code)) in _RAW_CATEGORIES:
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    ranges.append([0x10000, sys.maxunicode])  # beyond the BMP: two UTF-16 units, each a surrogate (escaped)
    return "".join(f"\\U{low:08x}-\\U{high:08x}" if low != high else f"\\U{low:08x}" for low, high in ranges)


_ESCAPED_CLASS = _escaped_class()
# What orjson would write differently from the driver (it escapes only quotes, backslashes and C0 controls).
JAVA_ONLY = re.compile(f"[{_ESCAPED_CLASS}]")
_ALL_ESCAPED = re.compile(f'[\x00-\x1f"\\\\{_ESCAPED_CLASS}]')
_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    char = match.group()
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def java_string(text: str) -> str:
    """``text`` as a quoted JSON string, escaped as the Java driver escapes it."""
    return '"' + _ALL_ESCAPED.sub(_escape, text) + '"'


def java_double(value: float) -> str:
    """Java's ``Double.toString`` (JDK 19+: the shortest digits that read back as ``value``)."""
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7 or value == 0:
        return repr(value)  # the same digits, and Python's fixed notation is Java's in this range
    if value != value:
        return "NaN"
    if magnitude == math.inf:
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(magnitude)
    mantissa, _, exponent = text.partition("e")
    if exponent:
        digits, exp = mantissa.replace(".", ""), int(exponent)
    else:
        whole, _, fraction = mantissa.partition(".")
        if whole != "0":
            digits, exp = whole + fraction, len(whole) - 1
        else:
            significant = fraction.lstrip("0")
            digits, exp = significant, len(significant) - len(fraction) - 1
    digits = digits.rstrip("0") or "0"
    if len(digits) == 1:
        # Where one digit would do, Java picks the two-digit decimal closest to the value (5e-324 -> 4.9E-324).
        two, _, exponent = f"{magnitude:.1e}".partition("e")
        digits, exp = two.replace(".", "").rstrip("0") or "0", int(exponent)
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def _relaxed_date(millis: int) -> Any:
    if 0 <= millis <= _MAX_ISO_MS:
        seconds, ms = divmod(millis, 1000)
        moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
        fraction = f".{ms:03d}".rstrip("0") if ms else ""
        return {"$date": f"{moment:%Y-%m-%dT%H:%M:%S}{fraction}Z"}
    return {"$date": {"$numberLong": str(millis)}}


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_NAIVE_EPOCH = datetime.datetime(1970, 1, 1)
_MILLISECOND = datetime.timedelta(milliseconds=1)


def date_millis(moment: datetime.datetime | DatetimeMS) -> int:
    if isinstance(moment, DatetimeMS):
        return int(moment)
    if moment.tzinfo is None:
        return (moment - _NAIVE_EPOCH) // _MILLISECOND
    return (moment - _EPOCH) // _MILLISECOND


# --- JSON-ready structures -----------------------------------------------------------------------------------------


class Raw(str):
    """JSON text written as it is (a number or an escaped string) by `_write`."""

    __slots__ = ()


class _Fallback(Exception):
    """orjson's text cannot be made the driver's: a name needing the driver's escaping, or a string or name starting
    with a colon (in orjson's compact text its `":` would not end a name)."""


def _structure(value: Any, raw: type, relaxed: bool, bare: bool, names: bool) -> Any:
    """``value`` as a JSON-ready structure: numbers and escaped strings as ``raw`` text (orjson.Fragment for orjson,
    Raw for `_write`). ``names``: check dict names for orjson (raising _Fallback)."""
    kind = type(value)
    if kind is dict:
        if names:
            for key in value:
                if key[:1] == ":" or (not key.isascii() or "\x7f" in key) and JAVA_ONLY.search(key):
                    raise _Fallback
        return {key: _structure(item, raw, relaxed, bare, names) for key, item in value.items()}
    if kind is str:
        if names and value[:1] == ":":
            raise _Fallback
        if (not value.isascii() or "\x7f" in value) and JAVA_ONLY.search(value):
            return raw(java_string(value))
        return value
    if kind is bool or value is None:
        return value
    if kind is int:
        if relaxed or _INT32_MIN <= value <= _INT32_MAX:
            return value
        return {"$numberLong": str(value)}
    if kind is list:
        return [_structure(item, raw, relaxed, bare, names) for item in value]
    if kind is float:
        if value - value == 0 or (bare and not relaxed):  # finite, or a bare NaN/Infinity (strict mode's own)
            return raw(java_double(value))
        return {"$numberDouble": "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")}
    if kind is Int64:
        return int(value) if relaxed else {"$numberLong": str(int(value))}
    if kind is datetime.datetime or kind is DatetimeMS:
        millis = date_millis(value)
        return _relaxed_date(millis) if relaxed else {"$date": millis}
    return _other(value, raw, relaxed, bare, names)


def _strict_fast(value: Any) -> Any:
    """`_structure(value, orjson.Fragment, False, True, True)`, written out for the hot path (every before/after)."""
    kind = type(value)
    if kind is dict:
        for key in value:
            if key[:1] == ":" or (not key.isascii() or "\x7f" in key) and JAVA_ONLY.search(key):
                raise _Fallback
        return {key: _strict_fast(item) for key, item in value.items()}
    if kind is str:
        if value[:1] == ":":
            raise _Fallback
        if (not value.isascii() or "\x7f" in value) and JAVA_ONLY.search(value):
            return orjson.Fragment(java_string(value))
        return value
    if kind is bool or value is None:
        return value
    if kind is int:
        return value if _INT32_MIN <= value <= _INT32_MAX else {"$numberLong": str(value)}
    if kind is list:
        return [_strict_fast(item) for item in value]
    if kind is float:
        return orjson.Fragment(java_double(value))
    if kind is Int64:
        return {"$numberLong": str(int(value))}
    return _structure(value, orjson.Fragment, False, True, True)


def _relaxed_fast(value: Any) -> Any:
    """`_structure(value, orjson.Fragment, True, False, True)`, written out for updatedFields and keys."""
    kind = type(value)
    if kind is dict:
        for key in value:
            if key[:1] == ":" or (not key.isascii() or "\x7f" in key) and JAVA_ONLY.search(key):
                raise _Fallback
        return {key: _relaxed_fast(item) for key, item in value.items()}
    if kind is str:
        if value[:1] == ":":
            raise _Fallback
        if (not value.isascii() or "\x7f" in value) and JAVA_ONLY.search(value):
            return orjson.Fragment(java_string(value))
        return value
    if kind is int or kind is bool or value is None:
        return value
    if kind is list:
        return [_relaxed_fast(item) for item in value]
    if kind is float and value - value == 0:
        return orjson.Fragment(java_double(value))
    if kind is Int64:
        return int(value)
    return _structure(value, orjson.Fragment, True, False, True)


def _other(value: Any, raw: type, relaxed: bool, bare: bool, names: bool) -> Any:
    if isinstance(value, Code):
        code: dict[str, Any] = {"$code": _structure(str(value), raw, relaxed, bare, names)}
        if value.scope is not None:
            code["$scope"] = _structure(dict(value.scope), raw, relaxed, bare, names)
        return code
    if isinstance(value, Binary | uuid.UUID):
        data, subtype = (value.bytes, 4) if isinstance(value, uuid.UUID) else (bytes(value), value.subtype)
        encoded = base64.b64encode(data).decode()
        if relaxed:
            return {"$binary": {"base64": encoded, "subType": f"{subtype:02X}"}}
        return {"$binary": encoded, "$type": f"{subtype:02X}"}
    if isinstance(value, Timestamp):
        return {"$timestamp": {"t": value.time, "i": value.inc}}
    if isinstance(value, Mapping):
        return _structure(dict(value), raw, relaxed, bare, names)
    if isinstance(value, list | tuple):
        return [_structure(item, raw, relaxed, bare, names) for item in value]
    if isinstance(value, DBRef):
        return _structure(value.as_doc().to_dict(), raw, relaxed, bare, names)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, Int64):
        return _structure(Int64(value), raw, relaxed, bare, names)
    if isinstance(value, int):
        return _structure(int(value), raw, relaxed, bare, names)
    if isinstance(value, float):
        return _structure(float(value), raw, relaxed, bare, names)
    if isinstance(value, str):
        return _structure(str(value), raw, relaxed, bare, names)
    if isinstance(value, datetime.datetime):
        millis = date_millis(value)
        return _relaxed_date(millis) if relaxed else {"$date": millis}
    converted = json_util.default(value, RELAXED_OPTIONS if relaxed else STRICT_OPTIONS)
    return _structure(converted, raw, relaxed, bare, names)


def to_strict(value: Any, *, bare_non_finite: bool = True) -> Any:
    """The JSON-ready structure of ``value`` in Debezium's strict dialect (numbers and escaped strings as Raw)."""
    return _structure(value, Raw, False, bare_non_finite, False)


def to_relaxed(value: Any) -> Any:
    """The JSON-ready structure of ``value`` in relaxed Extended JSON (numbers and escaped strings as Raw)."""
    return _structure(value, Raw, True, False, False)


def to_relaxed_fragments(value: Any) -> Any:
    """`to_relaxed` for orjson (numbers and escaped strings as orjson.Fragment); names are left to orjson."""
    return _structure(value, orjson.Fragment, True, False, False)


# --- writing -------------------------------------------------------------------------------------------------------


def _write(structure: Any, parts: list[str], comma: str) -> None:
    """The driver's text of a structure from `to_strict`/`to_relaxed` (names followed by ``": "``)."""
    kind = type(structure)
    if kind is dict:
        parts.append("{")
        first = True
        for key, item in structure.items():
            if not first:
                parts.append(comma)
            first = False
            parts.append(java_string(key))
            parts.append(": ")
            _write(item, parts, comma)
        parts.append("}")
    elif kind is list:
        parts.append("[")
        for position, item in enumerate(structure):
            if position:
                parts.append(comma)
            _write(item, parts, comma)
        parts.append("]")
    elif kind is Raw:
        parts.append(structure)
    elif kind is str:
        parts.append(java_string(structure))
    elif structure is True:
        parts.append("true")
    elif structure is False:
        parts.append("false")
    elif structure is None:
        parts.append("null")
    elif kind is int:
        parts.append(str(structure))
    else:
        raise TypeError(f"cannot write {type(structure).__name__} as JSON")


def java_json(structure: Any, comma: str = ",") -> str:
    parts: list[str] = []
    _write(structure, parts, comma)
    return "".join(parts)


_LINE_BREAKS = re.compile(rb"\n *")
_ITEM_BREAKS = re.compile(rb",\n *")


def _orjson_text(structure: Any, comma: bytes) -> str | None:
    """What `java_json` writes, written by orjson (several times faster); None where orjson refuses the structure
    (an int over 64 bits, nesting over 255 levels).

    orjson writes `"name":value`. Where every `":` ends a name (no backslash, so no escaped quote; colon-first
    strings were refused by `_structure`) and items are separated by `,` alone, adding the space after each gives
    the driver's text; otherwise orjson's indented form does, once its line breaks (strings escape theirs) and
    indentation are removed.
    """
    try:
        if not isinstance(structure, orjson.Fragment):
            text = orjson.dumps(structure)
            if b"\\" not in text:
                if comma == b",":
                    return text.replace(b'":', b'": ').decode()
                # No escaped quote: the quotes alternate in and out of strings, so the separators are the `,` and
                # `:` found outside them (even-numbered pieces).
                pieces = text.split(b'"')
                pieces[::2] = [piece.replace(b",", b", ").replace(b":", b": ") for piece in pieces[::2]]
                return b'"'.join(pieces).decode()
        text = orjson.dumps(structure, option=orjson.OPT_INDENT_2)
    except TypeError:  # orjson.JSONEncodeError
        return None
    if comma != b",":
        text = _ITEM_BREAKS.sub(comma, text)
    return _LINE_BREAKS.sub(b"", text).decode()


def _json(value: Any, relaxed: bool, bare: bool, comma: str) -> str:
    try:
        if relaxed:
            fast = _relaxed_fast(value)
        else:
            fast = _strict_fast(value) if bare else _structure(value, orjson.Fragment, False, False, True)
        text = _orjson_text(fast, comma.encode())
    except _Fallback:
        text = None
    return text if text is not None else java_json(_structure(value, Raw, relaxed, bare, False), comma)


def document_json(document: Mapping[str, Any], *, bare_non_finite: bool = True) -> str:
    """A document as Debezium writes ``after``/``before``/``patch``/``filter``: strict mode, compact.
    ``bare_non_finite=False`` writes NaN and ±Infinity as ``{"$numberDouble": "NaN"}`` (strict JSON)."""
    return _json(document, False, bare_non_finite, ",")


def updated_fields_json(fields: Mapping[str, Any]) -> str:
    """``updateDescription.updatedFields`` as Debezium 2.5+ writes it: relaxed mode, ``", "`` between members."""
    return _json(fields, True, False, ", ")


def key_json(value: Any) -> str:
    """The ``_id`` as Debezium writes the key's ``id``: relaxed mode, compact, of the bare value."""
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is ObjectId:
        return f'{{"$oid": "{value}"}}'
    if kind is str:
        return java_string(value)
    return _json(value, True, False, ",")


def parse(text: str) -> Any:
    """Extended JSON text (either dialect, bare NaN/Infinity included) back to BSON values."""
    return json_util.loads(text, json_options=PARSE_OPTIONS)
