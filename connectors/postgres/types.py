"""Debezium's PostgreSQL type mapping: a column's type → its Kafka Connect schema, and pgoutput's text value →
the value Debezium writes for it.

`column_mapping(column_type, settings, optional)` returns a `ColumnMapping` (schema + `convert(text)`), or None for
a type Debezium leaves out of its events (unknown types unless `include.unknown.datatypes`, and the arrays Debezium
has no schema for: money[], name[], interval[], varbit[], xml[], point[]). `ColumnType` describes a type; built-in
types need only their OID, the rest (enums, domains, extension types such as hstore, citext, ltree) are described
from the catalog (`catalog.describe_type`).

The text forms are those of a session with DateStyle=ISO, IntervalStyle=postgres, bytea_output=hex, which is how
the replication connection is opened.
"""

from __future__ import annotations

import base64
import decimal
import logging
import re
import struct
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from connectors import ConnectorError
from connectors.events import logical
from connectors.events import schema as s
from connectors.events.json_converter import (
    EXACT,
    base64_json,
    big_integer_bytes,
    double_json,
    string_json,
    unscaled_bytes,
)
from connectors.events.schema import Schema
from connectors.postgres import temporal
from connectors.postgres.compiled import (
    BOOLEAN,
    CALL,
    EPOCH_DAYS,
    FIXED_SCALE,
    FLOAT64,
    INTEGER,
    STRING,
    UTC_TIMESTAMP,
)

DECIMAL_HANDLING_MODES = ("precise", "double", "string")
TIME_PRECISION_MODES = ("adaptive", "adaptive_time_microseconds", "connect")
BINARY_HANDLING_MODES = ("bytes", "base64", "base64-url-safe", "hex")
INTERVAL_HANDLING_MODES = ("numeric", "string")
HSTORE_HANDLING_MODES = ("json", "map")
VARBIT_UNBOUNDED_LENGTH = 2**31 - 1

log = logging.getLogger(__name__)


class TypeMappingError(ConnectorError, ValueError):
    """A value or setting the mapping cannot handle; the message names the column or the property (a connector
    error: the pipeline stops with it)."""


@dataclass(frozen=True)
class TypeSettings:
    """The connector properties that change how values are written (Debezium's names and defaults)."""

    decimal_handling_mode: str = "precise"
    time_precision_mode: str = "adaptive"
    binary_handling_mode: str = "bytes"
    interval_handling_mode: str = "numeric"
    hstore_handling_mode: str = "json"
    money_fraction_digits: int = 2
    include_unknown_datatypes: bool = False

    def __post_init__(self) -> None:
        for prop, value, allowed in (
            ("decimal.handling.mode", self.decimal_handling_mode, DECIMAL_HANDLING_MODES),
            ("time.precision.mode", self.time_precision_mode, TIME_PRECISION_MODES),
            ("binary.handling.mode", self.binary_handling_mode, BINARY_HANDLING_MODES),
            ("interval.handling.mode", self.interval_handling_mode, INTERVAL_HANDLING_MODES),
            ("hstore.handling.mode", self.hstore_handling_mode, HSTORE_HANDLING_MODES),
        ):
            if value not in allowed:
                raise TypeMappingError(f"{prop}={value!r} is not supported; choose one of {', '.join(allowed)}")
        if not isinstance(self.money_fraction_digits, int) or self.money_fraction_digits < 0:
            raise TypeMappingError("money.fraction.digits must be a non-negative integer")

    @classmethod
    def from_properties(cls, properties: dict[str, Any]) -> TypeSettings:
        def flag(name: str) -> bool:
            raw = str(properties.get(name, "false")).strip().lower()
            if raw not in ("true", "false"):
                raise TypeMappingError(f"{name}={properties.get(name)!r} must be true or false")
            return raw == "true"

        try:
            digits = int(properties.get("money.fraction.digits", 2))
        except (TypeError, ValueError):
            raise TypeMappingError("money.fraction.digits must be a non-negative integer") from None
        return cls(
            decimal_handling_mode=properties.get("decimal.handling.mode", "precise"),
            time_precision_mode=properties.get("time.precision.mode", "adaptive"),
            binary_handling_mode=properties.get("binary.handling.mode", "bytes"),
            interval_handling_mode=properties.get("interval.handling.mode", "numeric"),
            hstore_handling_mode=properties.get("hstore.handling.mode", "json"),
            money_fraction_digits=digits,
            include_unknown_datatypes=flag("include.unknown.datatypes"),
        )


@dataclass(frozen=True)
class ColumnType:
    """A column's type: OID and type modifier from the Relation message (or pg_attribute), and for non-built-in
    types what the catalog says (`kind` is pg_type.typtype: b base, e enum, d domain, r range, m multirange)."""

    oid: int
    type_modifier: int = -1
    name: str = ""
    kind: str = "b"
    enum_labels: tuple[str, ...] = ()  # in enumsortorder
    element: ColumnType | None = None  # for arrays
    base: ColumnType | None = field(default=None)  # for domains: the type it constrains, with the domain's typmod

    @property
    def result_oid(self) -> int:
        """The OID a query's row description gives a column of this type: a domain's is its base type's."""
        return self.base.result_oid if self.kind == "d" and self.base is not None else self.oid


@dataclass(frozen=True)
class ColumnMapping:
    schema: Schema
    convert: Callable[[str], Any]  # pgoutput text (never None) → Connect value
    # the JSON text of `convert(text)` under `schema`, written from the text without the Connect value (None: not
    # cheaper than encoding the value); it raises for a text it cannot write so (a row's writer then converts it)
    json: Callable[[str], str] | None = None


# --- built-in OIDs (pg_type.h) ---------------------------------------------------------------------------------------
BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT4, TEXT, OID = 16, 17, 18, 19, 20, 21, 23, 25, 26
JSON, XML, POINT, CIDR, FLOAT4, FLOAT8 = 114, 142, 600, 650, 700, 701
MACADDR8, MONEY, MACADDR, INET = 774, 790, 829, 869
BPCHAR, VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL, TIMETZ = 1042, 1043, 1082, 1083, 1114, 1184, 1186, 1266
BIT, VARBIT, NUMERIC, UUID, TSVECTOR, JSONB = 1560, 1562, 1700, 2950, 3614, 3802
INT4RANGE, NUMRANGE, TSRANGE, TSTZRANGE, DATERANGE, INT8RANGE = 3904, 3906, 3908, 3910, 3912, 3926

BUILTIN_NAMES = {
    BOOL: "bool", BYTEA: "bytea", CHAR: "char", NAME: "name", INT8: "int8", INT2: "int2", INT4: "int4",
    TEXT: "text", OID: "oid", JSON: "json", XML: "xml", POINT: "point", CIDR: "cidr", FLOAT4: "float4",
    FLOAT8: "float8", MACADDR8: "macaddr8", MONEY: "money", MACADDR: "macaddr", INET: "inet", BPCHAR: "bpchar",
    VARCHAR: "varchar", DATE: "date", TIME: "time", TIMESTAMP: "timestamp", TIMESTAMPTZ: "timestamptz",
    INTERVAL: "interval", TIMETZ: "timetz", BIT: "bit", VARBIT: "varbit", NUMERIC: "numeric", UUID: "uuid",
    TSVECTOR: "tsvector", JSONB: "jsonb", INT4RANGE: "int4range", NUMRANGE: "numrange", TSRANGE: "tsrange",
    TSTZRANGE: "tstzrange", DATERANGE: "daterange", INT8RANGE: "int8range",
}
# array OID → element OID, for the built-in arrays
BUILTIN_ARRAYS = {
    1000: BOOL, 1001: BYTEA, 1002: CHAR, 1003: NAME, 1016: INT8, 1005: INT2, 1007: INT4, 1009: TEXT, 1028: OID,
    199: JSON, 143: XML, 1017: POINT, 651: CIDR, 1021: FLOAT4, 1022: FLOAT8, 775: MACADDR8, 791: MONEY,
    1040: MACADDR, 1041: INET, 1014: BPCHAR, 1015: VARCHAR, 1182: DATE, 1183: TIME, 1115: TIMESTAMP,
    1185: TIMESTAMPTZ, 1187: INTERVAL, 1270: TIMETZ, 1561: BIT, 1563: VARBIT, 1231: NUMERIC, 2951: UUID,
    3643: TSVECTOR, 3807: JSONB, 3905: INT4RANGE, 3907: NUMRANGE, 3909: TSRANGE, 3911: TSTZRANGE,
    3913: DATERANGE, 3927: INT8RANGE,
}
_UNSUPPORTED_ARRAY_ELEMENTS = {MONEY, NAME, INTERVAL, VARBIT, XML, POINT}
_STRING_TYPES = {CHAR, NAME, TEXT, BPCHAR, VARCHAR, INET, CIDR, MACADDR, MACADDR8,
                 INT4RANGE, NUMRANGE, TSRANGE, TSTZRANGE, DATERANGE, INT8RANGE}
# extension types Debezium's connector maps (PostGIS, pgvector) and this one does not: never left out silently
_UNMAPPED_EXTENSION_TYPES = {"geometry", "geography", "vector", "halfvec", "sparsevec"}
_STRING_EXTENSION_TYPES = {"citext", "isbn", "isbn13", "ismn", "ismn13", "issn", "issn13", "ean13", "upc"}


def builtin(oid: int, type_modifier: int = -1) -> ColumnType:
    """The ColumnType of a built-in type or built-in array type, from its OID alone."""
    if oid in BUILTIN_ARRAYS:
        element = BUILTIN_ARRAYS[oid]
        element_type = ColumnType(element, type_modifier, BUILTIN_NAMES[element])
        return ColumnType(oid, type_modifier, "_" + BUILTIN_NAMES[element], "b", element=element_type)
    return ColumnType(oid, type_modifier, BUILTIN_NAMES.get(oid, ""))


def numeric_precision_scale(type_modifier: int) -> tuple[int, int] | None:
    """numeric(p, s) from its type modifier; None for an unconstrained numeric."""
    if type_modifier < 4:
        return None
    packed = type_modifier - 4
    scale = ((packed & 0x7FF) ^ 1024) - 1024  # an 11-bit signed scale (negative scales since PostgreSQL 15)
    return (packed >> 16) & 0xFFFF, scale


def time_precision(type_modifier: int) -> int:
    return 6 if type_modifier < 0 else type_modifier


# --- value converters ------------------------------------------------------------------------------------------------
def _bool(text: str) -> bool:
    return text == "t"


def _float(text: str) -> float:
    return float(text)


def _string(text: str) -> str:
    return text


def int_json(text: str) -> str:
    return str(int(text))


def bool_json(text: str) -> str:
    return "true" if text == "t" else "false"


def float8_json(text: str) -> str:  # the compiled twin: pgrows.c's put_double
    return double_json(float(text))


def date_json(text: str) -> str:  # the compiled twin: pgrows.c's put_epoch_days
    return str(_date(text))


# the JSON writers of the converters whose output's JSON follows from the text alone
_TEXT_JSON: dict[Callable, Callable[[str], str]] = {int: int_json, _bool: bool_json, _string: string_json}
# the writers whose texts the compiled row writer writes itself (compiled_kind); weak: a mapping's writer goes with it
_COMPILED_KINDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary(
    {int_json: (INTEGER, 0), bool_json: (BOOLEAN, 0), string_json: (STRING, 0), float8_json: (FLOAT64, 0),
     date_json: (EPOCH_DAYS, 0)})


def _fixed_scale_json(scale: int) -> Callable[[str], str]:
    """A numeric(p, s) value's JSON in decimal.handling.mode=precise (base64 of the unscaled value's minimal two's
    complement) from its text, which PostgreSQL writes with exactly s decimals: the digits are the unscaled value."""

    def write(text: str) -> str:  # the compiled twin: connectors/csrc/unscaled_decimal.h's put_decimal_text
        point = text.find(".")
        if point < 0:
            if scale:
                raise ValueError(text)
            digits = text
        elif len(text) - point - 1 == scale:
            digits = text[:point] + text[point + 1:]
        else:
            raise ValueError(text)
        if not (digits.isascii() and digits.lstrip("-").isdigit()):  # int() would also take "_", spaces, "+"
            raise ValueError(text)
        return base64_json(big_integer_bytes(int(digits)))
    _COMPILED_KINDS[write] = (FIXED_SCALE, scale)
    return write


def _zoned_timestamp_json(width: int | None) -> Callable[[str], str]:
    def write(text: str) -> str:  # the compiled twin: pgrows.c's put_utc_timestamp
        return '"' + temporal.zoned_timestamp_text(text, width) + '"'  # ISO-8601 digits: nothing to escape
    _COMPILED_KINDS[write] = (UTC_TIMESTAMP, width if width is not None else -1)
    return write


def compiled_kind(text_json: Callable[[str], str]) -> tuple[int, int]:
    """What the compiled row writer (connectors/postgres/compiled.py) writes itself of a column whose JSON
    `text_json` writes: its kind and argument (CALL: it calls `text_json`)."""
    return _COMPILED_KINDS.get(text_json, (CALL, 0))


def _bytea(text: str) -> bytes:
    if not text.startswith("\\x"):
        raise TypeMappingError("bytea values must arrive in hex (bytea_output=hex)")
    return bytes.fromhex(text[2:])


def _binary(mode: str) -> tuple[Schema, Callable[[str], Any]]:
    if mode == "bytes":
        return s.bytes_(), _bytea
    if mode == "base64":
        return s.string(), lambda text: base64.b64encode(_bytea(text)).decode("ascii")
    if mode == "base64-url-safe":
        return s.string(), lambda text: base64.urlsafe_b64encode(_bytea(text)).decode("ascii")
    return s.string(), lambda text: _bytea(text).hex()


def _bits(text: str) -> bytes:
    # BitSet.toByteArray(): the last character is bit 0, little-endian bytes, trailing zero bytes dropped
    value = int(text, 2) if text else 0
    return value.to_bytes((value.bit_length() + 7) // 8, "little")


_NUMERIC_SPECIAL = {"NaN": "NAN", "Infinity": "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY"}


def _numeric(column: str, mode: str, scale: int | None, optional: bool = True) -> Callable[[str], Any]:
    quantum = decimal.Decimal(1).scaleb(-scale) if scale is not None else None

    def convert(text: str) -> Any:
        if text in _NUMERIC_SPECIAL:
            if mode == "string":
                return _NUMERIC_SPECIAL[text]
            if mode == "double":
                return float(text)
            # as Debezium: the value it cannot convert becomes null, with a warning (a NOT NULL column cannot be)
            problem = (f"column {column} holds {text}, which decimal.handling.mode=precise cannot represent "
                       "(decimal.handling.mode=string writes it as text, double as a JSON string)")
            if not optional:
                raise TypeMappingError(f"{problem}; the column is NOT NULL, so it cannot be written as null")
            log.warning("%s: written as null", problem)
            return None
        value = decimal.Decimal(text)
        if mode == "double":
            return float(value)
        if mode == "string":
            return format(value, "f")
        if scale is None:  # io.debezium.data.VariableScaleDecimal
            value = value.normalize(EXACT)
            if value.as_tuple().exponent > 0:
                value = value.quantize(decimal.Decimal(1), context=EXACT)
            exponent = -value.as_tuple().exponent
            return {"scale": exponent, "value": unscaled_bytes(value, exponent)}
        return value.quantize(quantum, rounding=decimal.ROUND_HALF_UP, context=EXACT)

    return convert


_MONEY_JUNK = re.compile(r"[^0-9.\-]")


def _money(mode: str, digits: int) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        negative = text.startswith("-") or text.startswith("(")
        value = decimal.Decimal(_MONEY_JUNK.sub("", text).lstrip("-") or "0")
        value = -value if negative else value
        value = value.quantize(decimal.Decimal(1).scaleb(-digits), rounding=decimal.ROUND_HALF_UP, context=EXACT)
        if mode == "double":
            return float(value)
        if mode == "string":
            return format(value, "f")
        return value

    return convert


def _date(text: str) -> int:
    if text == "infinity":
        return temporal.days_from_civil(-5877611, 6, 21)  # what Debezium makes of PGStatement's infinity
    if text == "-infinity":
        return temporal.days_from_civil(-5877611, 6, 22)
    return temporal.date_days(text)


def _time(unit_us: int) -> Callable[[str], int]:
    return lambda text: temporal.time_micros(text)[0] // unit_us


def _timestamp(unit_us: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        if text == "infinity":
            return temporal.TIMESTAMP_POSITIVE_INFINITY_US // unit_us
        if text == "-infinity":
            return temporal.TIMESTAMP_NEGATIVE_INFINITY_US // unit_us
        return temporal.saturated_int64(temporal.timestamp_micros(text) // unit_us)

    return convert


def _point(text: str) -> dict:
    """PostgreSQL's `(x,y)` → Debezium's Point: the coordinates and their WKB (little-endian, type 1), no SRID."""
    if not (text.startswith("(") and text.endswith(")")):
        raise TypeMappingError(f"not a point: {text[:80]!r}")
    x_text, y_text = text[1:-1].split(",")
    x, y = float(x_text), float(y_text)
    return {"x": x, "y": y, "wkb": struct.pack("<BIdd", 1, 1, x, y), "srid": None}


def _hstore_pairs(text: str) -> dict[str, str | None]:
    pairs: dict[str, str | None] = {}
    pos, length = 0, len(text)

    def quoted(at: int) -> tuple[str, int]:
        out, i = [], at + 1
        while text[i] != '"':
            if text[i] == "\\":
                i += 1
            out.append(text[i])
            i += 1
        return "".join(out), i + 1

    while pos < length:
        while pos < length and text[pos] in " ,":
            pos += 1
        if pos >= length:
            break
        key, pos = quoted(pos)
        pos = text.index("=>", pos) + 2
        while text[pos] == " ":
            pos += 1
        if text.startswith("NULL", pos):
            pairs[key], pos = None, pos + 4
        else:
            pairs[key], pos = quoted(pos)
    return pairs


def _hstore_json(text: str) -> str:
    from connectors.events.json_converter import string_json

    items = ",".join(
        f"{string_json(k)}:{'null' if v is None else string_json(v)}" for k, v in _hstore_pairs(text).items()
    )
    return "{" + items + "}"


def parse_array(text: str) -> list[Any]:
    """A one- or more-dimensional array literal → nested lists of element texts (None for NULL)."""
    if text.startswith("["):  # explicit bounds: [0:2]={...}
        text = text[text.index("=") + 1 :]
    pos = 0

    def parse_level() -> list[Any]:
        nonlocal pos
        assert text[pos] == "{"
        pos += 1
        items: list[Any] = []
        if text[pos] == "}":
            pos += 1
            return items
        while True:
            if text[pos] == "{":
                items.append(parse_level())
            elif text[pos] == '"':
                pos += 1
                out = []
                while text[pos] != '"':
                    if text[pos] == "\\":
                        pos += 1
                    out.append(text[pos])
                    pos += 1
                pos += 1
                items.append("".join(out))
            else:
                start = pos
                while text[pos] not in ",}":
                    pos += 1
                bare = text[start:pos].strip()
                items.append(None if bare == "NULL" else bare)
            if text[pos] == ",":
                pos += 1
                continue
            pos += 1  # '}'
            return items

    try:
        return parse_level()
    except (IndexError, AssertionError):
        raise TypeMappingError(f"not an array literal: {text[:80]!r}") from None


def _array(element: ColumnMapping) -> Callable[[str], list[Any]]:
    convert = element.convert

    def walk(items: list[Any]) -> list[Any]:
        return [None if v is None else walk(v) if isinstance(v, list) else convert(v) for v in items]

    return lambda text: walk(parse_array(text))


# --- the mapping -----------------------------------------------------------------------------------------------------
def _resolve_domain(column_type: ColumnType) -> ColumnType:
    while column_type.kind == "d" and column_type.base is not None:
        column_type = column_type.base
    return column_type


def _scalar(column_type: ColumnType, settings: TypeSettings, column: str, optional: bool = True) -> tuple | None:
    """(schema, convert) or (schema, convert, json) of a column that is not an array; None when Debezium leaves it
    out."""
    oid, typmod = column_type.oid, column_type.type_modifier
    mode = settings.time_precision_mode
    if column_type.kind == "e":
        return logical.enum(list(column_type.enum_labels)), _string
    if oid in (INT2,):
        return s.int16(), int
    if oid == INT4:
        return s.int32(), int
    if oid in (INT8, OID):
        return s.int64(), int
    if oid == FLOAT4:
        return s.float32(), _float
    if oid == FLOAT8:
        return s.float64(), _float, float8_json
    if oid == BOOL:
        return s.boolean(), _bool
    if oid in _STRING_TYPES or column_type.name in _STRING_EXTENSION_TYPES:
        return s.string(), _string
    if oid in (JSON, JSONB):
        return logical.named("string", logical.JSON), _string
    if oid == XML:
        return logical.named("string", logical.XML), _string
    if oid == UUID:
        return logical.named("string", logical.UUID), _string
    if oid == TSVECTOR:
        return logical.named("string", logical.TSVECTOR), _string
    if column_type.name == "ltree":
        return logical.named("string", logical.LTREE), _string
    if column_type.name == "hstore":
        if settings.hstore_handling_mode == "json":
            return logical.named("string", logical.JSON), _hstore_json
        return s.map_(s.string(), s.string(optional=True)), _hstore_pairs
    if oid == POINT:
        return logical.point(), _point
    if oid == BYTEA:
        return _binary(settings.binary_handling_mode)
    if oid in (BIT, VARBIT):
        length = typmod if typmod > 0 else (1 if oid == BIT else VARBIT_UNBOUNDED_LENGTH)
        if length == 1:
            return s.boolean(), lambda text: text == "1"
        return logical.bits(length), _bits
    if oid == NUMERIC:
        precision_scale = numeric_precision_scale(typmod)
        decimal_mode = settings.decimal_handling_mode
        if decimal_mode == "double":
            return s.float64(), _numeric(column, "double", None)
        if decimal_mode == "string":
            return s.string(), _numeric(column, "string", None)
        if precision_scale is None:
            return logical.variable_scale_decimal(), _numeric(column, "precise", None, optional)
        precision, scale = precision_scale
        return (logical.decimal(scale, precision), _numeric(column, "precise", scale, optional),
                _fixed_scale_json(scale))
    if oid == MONEY:
        digits, decimal_mode = settings.money_fraction_digits, settings.decimal_handling_mode
        schema = {"double": s.float64(), "string": s.string()}.get(decimal_mode) or logical.decimal(digits)
        return schema, _money(decimal_mode, digits)
    if oid == DATE:
        if mode == "connect":
            return logical.connect_date(), _date, date_json
        return logical.named("int32", logical.DATE), _date, date_json
    if oid == TIME:
        precision = time_precision(typmod)
        if mode == "connect":
            return logical.connect_time(), _time(1000)
        if mode == "adaptive" and precision <= 3:
            return logical.named("int32", logical.TIME), _time(1000)
        return logical.named("int64", logical.MICRO_TIME), _time(1)
    if oid == TIMESTAMP:
        precision = time_precision(typmod)
        if mode == "connect":
            return logical.connect_timestamp(), _timestamp(1000)
        if precision <= 3:
            return logical.named("int64", logical.TIMESTAMP), _timestamp(1000)
        return logical.named("int64", logical.MICRO_TIMESTAMP), _timestamp(1)
    if oid == TIMESTAMPTZ:
        width = time_precision(typmod)
        return (logical.named("string", logical.ZONED_TIMESTAMP),
                lambda text: temporal.zoned_timestamp_text(text, width), _zoned_timestamp_json(width))
    if oid == TIMETZ:
        return logical.named("string", logical.ZONED_TIME), temporal.zoned_time_text
    if oid == INTERVAL:
        if settings.interval_handling_mode == "string":
            return logical.named("string", logical.INTERVAL), temporal.interval_iso_text
        return logical.named("int64", logical.MICRO_DURATION), temporal.interval_micro_duration
    return None


def column_mapping(
    column_type: ColumnType, settings: TypeSettings, optional: bool = True, column: str = "?"
) -> ColumnMapping | None:
    """The schema and converter of one column; None when Debezium would leave the column out (`omission_warning`
    says so); a TypeMappingError for a type Debezium maps and this connector cannot."""
    resolved = _resolve_domain(column_type)
    element = _resolve_domain(resolved.element) if resolved.element is not None else None
    if (element or resolved).name in _UNMAPPED_EXTENSION_TYPES:
        raise TypeMappingError(
            f"column {column} has type {column_type.name}, which this connector cannot write as Debezium does; "
            "leave the column out with column.exclude.list")
    if resolved.element is not None:
        element_type = _resolve_domain(resolved.element)
        if element_type.oid in _UNSUPPORTED_ARRAY_ELEMENTS:
            return None
        scalar = _scalar(element_type, settings, column)
        if scalar is None:
            if not settings.include_unknown_datatypes:
                return None
            schema, _ = _binary(settings.binary_handling_mode)
            return ColumnMapping(s.array(schema, optional=optional), _array(ColumnMapping(schema, _unknown(settings))))
        element_schema, convert = scalar[:2]
        # Debezium builds enum arrays' element schema without making it optional
        element_schema = element_schema if element_type.kind == "e" else element_schema.as_optional()
        element = ColumnMapping(element_schema, convert)
        return ColumnMapping(s.array(element.schema, optional=optional), _array(element))
    scalar = _scalar(resolved, settings, column, optional)
    if scalar is None:
        if not settings.include_unknown_datatypes:
            return None
        schema, _ = _binary(settings.binary_handling_mode)
        return ColumnMapping(schema.as_optional() if optional else schema, _unknown(settings))
    schema, convert = scalar[:2]
    json = scalar[2] if len(scalar) > 2 else _TEXT_JSON.get(convert)
    return ColumnMapping(schema.as_optional() if optional else schema, convert, json)


def omission_warning(column_type: ColumnType, column: str) -> str:
    """What to log of a column `column_mapping` leaves out (as Debezium logs it): which type, and what to do."""
    resolved = _resolve_domain(column_type)
    name = column_type.name or BUILTIN_NAMES.get(column_type.oid) or f"OID {column_type.oid}"
    if resolved.element is not None and _resolve_domain(resolved.element).oid in _UNSUPPORTED_ARRAY_ELEMENTS:
        how = "Debezium's PostgreSQL connector has no schema for this array type"
    else:
        how = "set include.unknown.datatypes=true to carry its text as bytes"
    return (f"column {column} of type {name} is left out of the change events: {how}, or name it in "
            "column.exclude.list to leave it out without this warning")


def _unknown(settings: TypeSettings) -> Callable[[str], Any]:
    """include.unknown.datatypes: the value's text as bytes, written per binary.handling.mode."""
    mode = settings.binary_handling_mode
    if mode == "bytes":
        return lambda text: text.encode("utf-8")
    if mode == "base64":
        return lambda text: base64.b64encode(text.encode("utf-8")).decode("ascii")
    if mode == "base64-url-safe":
        return lambda text: base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii")
    return lambda text: text.encode("utf-8").hex()

