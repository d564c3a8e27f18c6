"""Debezium's MySQL/MariaDB type mapping: binlog column + decoded value -> Kafka Connect schema and JSON value.

Plain data for now (connect type, logical name, parameters, value); it is to be expressed with the shared schema
model of `connectors/events/` once that lands. The binlog's table map tells the physical type, signedness,
charset, precision/scale, fsp, BIT width and ENUM/SET values, but not the declared display width, so
TINYINT(1)/BOOLEAN is INT16 here, as Debezium writes it without a converter.
"""

from __future__ import annotations

import base64
import ctypes
import datetime
import decimal
import json
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from pymysqlreplication.constants import FIELD_TYPE

from connectors import ConnectorError
from connectors.events import json_converter
from connectors.events import schema as s
from connectors.events.json_converter import unscaled_bytes
from connectors.events.schema import Schema
from connectors.mysql.binlog import ZERO_DATE, ColumnInfo
from connectors.mysql.defaults import default_expression, default_value

MODES = {
    "decimal.handling.mode": ("precise", "double", "string"),
    "time.precision.mode": ("adaptive_time_microseconds", "connect"),
    "bigint.unsigned.handling.mode": ("long", "precise"),
    "binary.handling.mode": ("bytes", "base64", "base64-url-safe", "hex"),
}
EPOCH = datetime.datetime(1970, 1, 1)
EPOCH_DAY = datetime.date(1970, 1, 1)


@dataclass(frozen=True)
class TypeOptions:
    decimal_handling_mode: str = "precise"
    time_precision_mode: str = "adaptive_time_microseconds"
    bigint_unsigned_handling_mode: str = "long"
    binary_handling_mode: str = "bytes"

    def __post_init__(self):
        for prop, value in (("decimal.handling.mode", self.decimal_handling_mode),
                            ("time.precision.mode", self.time_precision_mode),
                            ("bigint.unsigned.handling.mode", self.bigint_unsigned_handling_mode),
                            ("binary.handling.mode", self.binary_handling_mode)):
            if value not in MODES[prop]:
                raise ConnectorError(f"{prop}={value!r} is not supported; use one of {', '.join(MODES[prop])}")

    @classmethod
    def from_config(cls, config: dict) -> TypeOptions:
        return cls(
            decimal_handling_mode=config.get("decimal.handling.mode", "precise"),
            time_precision_mode=config.get("time.precision.mode", "adaptive_time_microseconds"),
            bigint_unsigned_handling_mode=config.get("bigint.unsigned.handling.mode", "long"),
            binary_handling_mode=config.get("binary.handling.mode", "bytes"),
        )


@dataclass(frozen=True)
class FieldSchema:
    """A Kafka Connect field schema: type, optional, logical name, version, parameters and default."""

    type: str  # int16, int32, int64, float32, float64, boolean, string, bytes, struct
    optional: bool
    name: str | None = None
    version: int | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    struct: Schema | None = None  # a struct's whole schema (connectors.events.schema)
    default: object = s.NO_DEFAULT  # the Connect value of the column's DEFAULT

    def to_json(self, field_name: str) -> dict:
        """As JsonConverter writes a struct field's schema."""
        if self.struct is not None:
            return {**json.loads(json_converter.schema_json(self.struct)), "field": field_name}
        out: dict = {"type": self.type, "optional": self.optional}
        if self.name:
            out["name"] = self.name
        if self.version is not None:
            out["version"] = self.version
        if self.parameters:
            out["parameters"] = dict(self.parameters)
        if self.default is not s.NO_DEFAULT:
            out["default"] = json.loads(json_converter.value_json(self.as_schema(), self.default))
        out["field"] = field_name
        return out

    def as_schema(self) -> Schema:
        """The field's schema (connectors.events.schema)."""
        return self.struct or s.primitive(self.type, optional=self.optional, name=self.name, version=self.version,
                                          parameters=self.parameters or None, default=self.default)


def java_long(value: int) -> int:
    """BIGINT UNSIGNED in Debezium's long mode: values above 2^63-1 wrap around as Java's long does."""
    return value - (1 << 64) if value >= (1 << 63) else value


@dataclass(frozen=True)
class ColumnMapping:
    column: ColumnInfo
    schema: FieldSchema
    _convert: Callable[[object], object]

    @property
    def convert_function(self) -> Callable[[object], object]:
        """What `value` applies to a value that is not None."""
        return self._convert

    def value(self, raw):
        """The Connect value (bytes stay bytes, Decimal stays Decimal) for a decoded binlog value."""
        if raw is None:
            return None
        return self._convert(raw)

    def json_value(self, raw):
        """The value as JsonConverter writes it in a payload (bytes and decimals base64)."""
        return to_json(self.schema, self.value(raw))


def to_json(schema: FieldSchema, value):
    if value is None:
        return None
    if schema.type == "bytes":
        if isinstance(value, decimal.Decimal):
            value = unscaled_bytes(value, int(schema.parameters["scale"]))
        return base64.b64encode(value).decode("ascii")
    return value


def mapping(column: ColumnInfo, options: TypeOptions = TypeOptions()) -> ColumnMapping:
    """The column's schema and converter; its schema has the column's DEFAULT (`column.default`, information_schema's
    text) converted as Debezium does (connectors/mysql/defaults.py), which a NOT NULL column's zero dates also take."""
    plain = _mapping(column, options, s.NO_DEFAULT)
    expression = default_expression(column.default)
    if expression is None or column.data_type == "uuid":  # Debezium's schema has no default for a UUID column
        return plain
    value = default_value(column, expression)
    try:
        default = plain.value(value)
    except (ValueError, ArithmeticError, KeyError, OverflowError):
        default = None  # a text the converter cannot read: no default, as in Debezium
    return plain if default is None else _mapping(column, options, default)


def _mapping(column: ColumnInfo, options: TypeOptions, default) -> ColumnMapping:
    """MariaDB's JSON is LONGTEXT with a json_valid() check: a plain string, as in Debezium's MariaDB connector
    (only MySQL's binary JSON is `io.debezium.data.Json`)."""
    def of(type_, convert, name=None, parameters=None, version=None):
        if name and version is None:
            version = 1
        return ColumnMapping(column, FieldSchema(type_, column.nullable, name, version, parameters or {},
                                                 default=default), convert)

    if column.data_type == "uuid":
        return of("string", uuid_text, UUID)
    if column.data_type is not None:  # INET4, INET6: Debezium's DDL parser fails on them (docs/mariadb.md)
        raise UnmappedType(column.name)
    code = column.type_code
    if code == FIELD_TYPE.TINY:
        return of("int16", int)
    if code == FIELD_TYPE.SHORT:
        return of("int32" if column.unsigned else "int16", int)
    if code == FIELD_TYPE.INT24:
        return of("int32", int)
    if code == FIELD_TYPE.LONG:
        return of("int64" if column.unsigned else "int32", int)
    if code == FIELD_TYPE.LONGLONG:
        if column.unsigned and options.bigint_unsigned_handling_mode == "precise":
            return of("bytes", decimal.Decimal, "org.apache.kafka.connect.data.Decimal",
                      {"scale": "0", "connect.decimal.precision": "20"})
        # Debezium's long mode: values above 2^63-1 wrap around as Java's long does
        return of("int64", java_long)
    if code == FIELD_TYPE.FLOAT:
        return of("float32", _float32)
    if code == FIELD_TYPE.DOUBLE:
        return of("float64", float)
    if code == FIELD_TYPE.NEWDECIMAL:
        return _decimal(column, options, of)
    if code == FIELD_TYPE.BIT:
        if column.bits == 1:
            return of("boolean", lambda v: v == "1")
        length = column.bits or 1
        return of("bytes", lambda v: int(v, 2).to_bytes((length + 7) // 8, "little"), "io.debezium.data.Bits",
                  {"length": str(length)})
    if code == FIELD_TYPE.YEAR:
        return of("int32", lambda v: 0 if v == 1900 else int(v), "io.debezium.time.Year")
    if code == FIELD_TYPE.ENUM:
        return of("string", str, "io.debezium.data.Enum", {"allowed": ",".join(column.enum_values)})
    if code == FIELD_TYPE.SET:
        order = {v: i for i, v in enumerate(column.set_values)}
        return of("string", lambda v: ",".join(sorted(v, key=order.__getitem__)), "io.debezium.data.EnumSet",
                  {"allowed": ",".join(column.set_values)})
    if code == FIELD_TYPE.JSON:
        return of("string", _json_text, "io.debezium.data.Json")
    if code in (FIELD_TYPE.DATE, FIELD_TYPE.NEWDATE):
        return _date(column, options, of, default)
    if code in (FIELD_TYPE.TIME, FIELD_TYPE.TIME2):
        return _time(column, options, of)
    if code in (FIELD_TYPE.DATETIME, FIELD_TYPE.DATETIME2):
        return _datetime(column, options, of, default)
    if code in (FIELD_TYPE.TIMESTAMP, FIELD_TYPE.TIMESTAMP2):
        return _timestamp(column, of, default)
    if code in (FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING, FIELD_TYPE.BLOB):
        if _is_binary(column):
            pad = column.max_length if code == FIELD_TYPE.STRING else None
            return _binary(options, of, pad)
        return of("string", text_value)
    if code == FIELD_TYPE.GEOMETRY and column.geometry_type == POINT_TYPE:
        return ColumnMapping(column, FieldSchema("struct", column.nullable, POINT, 1,
                                                 struct=point_schema(column.nullable)), _point)
    if code == FIELD_TYPE.GEOMETRY:
        return ColumnMapping(column, FieldSchema("struct", column.nullable, GEOMETRY, 1,
                                                 struct=geometry_schema(column.nullable)), _geometry)
    raise UnmappedType(column.name)


UUID = "io.debezium.data.Uuid"
GEOMETRY = "io.debezium.data.geometry.Geometry"
POINT = "io.debezium.data.geometry.Point"
POINT_TYPE = 1  # a POINT column's geometry type in the table map (and information_schema's "point")


class UnmappedType(ConnectorError):
    """A column of a type the connector has no mapping for; TableEvents names its table."""

    def __init__(self, column: str):
        super().__init__(f"column {column!r} has a type this connector does not map")
        self.column = column


def geometry_schema(optional: bool) -> Schema:
    """Debezium's spatial struct: the value's WKB and its SRID."""
    return s.struct([("wkb", s.bytes_()), ("srid", s.int32(optional=True))], name=GEOMETRY, version=1,
                    doc="Geometry", optional=optional)


def point_schema(optional: bool) -> Schema:
    """Debezium's POINT struct: its coordinates beside the WKB and SRID."""
    return s.struct([("x", s.float64()), ("y", s.float64()), ("wkb", s.bytes_(optional=True)),
                     ("srid", s.int32(optional=True))], name=POINT, version=1, doc="Geometry (POINT)",
                    optional=optional)


def _point(value) -> dict:
    geometry = _geometry(value)
    wkb = geometry["wkb"]
    x, y = struct.unpack("<dd" if wkb[0] == 1 else ">dd", wkb[5:21])
    return {"x": x, "y": y, **geometry}


def _geometry(value) -> dict:
    """MySQL's internal geometry (a 4-byte little-endian SRID, then WKB) as Debezium's struct; SRID 0: null."""
    data = bytes(value)
    srid = int.from_bytes(data[:4], "little")
    return {"wkb": data[4:], "srid": srid or None}


def uuid_text(value) -> str:
    """A UUID column's value as Debezium writes it: the lower-case 8-4-4-4-12 text. The binlog reader's value is its 16
    bytes less the trailing zero bytes ("" when none is left, as the library gives an empty binary string), padded
    back on the right here; catalog.binlog_form gives a snapshot's value the same form."""
    data = b"" if value == "" else bytes(value)
    return str(uuid.UUID(bytes=data.ljust(16, b"\0")))


def _is_binary(column: ColumnInfo) -> bool:
    return column.charset == "binary"


# the most bytes a character takes, by character set (others: one), to turn CHAR/VARCHAR byte lengths into n
_BYTES_PER_CHARACTER = {"utf8mb4": 4, "utf8mb3": 3, "utf8": 3, "ucs2": 2, "utf16": 4, "utf16le": 4, "utf32": 4,
                        "big5": 2, "gbk": 2, "gb2312": 2, "gb18030": 4, "sjis": 2, "cp932": 2, "ujis": 3,
                        "eucjpms": 3, "euckr": 2}


def is_character(column: ColumnInfo) -> bool:
    """CHAR, VARCHAR and the TEXT types (not their binary forms): what Debezium's column.mask.hash hashes."""
    return column.type_code in (FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING, FIELD_TYPE.BLOB) \
        and not _is_binary(column)


def declared_length(column: ColumnInfo) -> int | None:
    """CHAR(n) / VARCHAR(n): n (the binlog and information_schema give bytes); TEXT types: None."""
    if column.type_code == FIELD_TYPE.BLOB or not column.max_length:
        return None
    if column.collation:  # utf8mb4_general_ci: utf8mb4
        width = _BYTES_PER_CHARACTER.get(column.collation.partition("_")[0].lower(), 1)
    else:  # a binlog collation the reader does not know (MariaDB 11's uca1400 ones): the codec; utf8 is most likely
        width = 4 if column.charset == "utf8" else _BYTES_PER_CHARACTER.get((column.charset or "").lower(), 1)
    return column.max_length // width


def text_value(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


def _float32(value: float) -> float:
    """The shortest decimal that reads back as the same 32-bit float, as Java's Float.toString prints it."""
    packed = _float32_bits(value)
    for digits in range(1, 10):
        candidate = float(f"{value:.{digits}g}")
        if _float32_bits(candidate) == packed:
            return candidate
    return value


def _float32_bits(value: float) -> bytes:
    try:
        return struct.pack("<f", value)
    except OverflowError:  # struct refuses what is above FLT_MAX even where it rounds to it; C's conversion does not
        return struct.pack("<f", ctypes.c_float(value).value)


def _json_text(value) -> str:
    return json.dumps(_json_ready(value), ensure_ascii=False, separators=(",", ":"))


def _json_ready(value):
    if isinstance(value, dict):
        return {text_value(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8")
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def _decimal(column, options, of):
    scale = column.scale or 0
    if options.decimal_handling_mode == "double":
        return of("float64", float)
    if options.decimal_handling_mode == "string":
        return of("string", lambda v: format(v, "f"))
    return of("bytes", lambda v: v, "org.apache.kafka.connect.data.Decimal",
              {"scale": str(scale), "connect.decimal.precision": str(column.precision)})


def _binary(options, of, pad: int | None):
    def raw(value) -> bytes:
        data = bytes(value) if isinstance(value, bytes | bytearray) else str(value).encode("utf-8")
        if pad and len(data) < pad:
            data = data.ljust(pad, b"\x00")  # BINARY(n): the binlog drops trailing zero bytes, Debezium restores them
        return data

    mode = options.binary_handling_mode
    if mode == "base64":
        return of("string", lambda v: base64.b64encode(raw(v)).decode("ascii"))
    if mode == "base64-url-safe":
        return of("string", lambda v: base64.urlsafe_b64encode(raw(v)).decode("ascii"))
    if mode == "hex":
        return of("string", lambda v: raw(v).hex())
    return of("bytes", raw)


def _zero(column: ColumnInfo, epoch_value, default=s.NO_DEFAULT):
    """Zero dates: null when the column allows it, else its default, else the epoch (Debezium's rule: a zero date is
    read as null, and a NOT NULL column's null value as its default or the type's fallback)."""
    if column.nullable:
        return None
    return epoch_value if default is s.NO_DEFAULT else default


def _date(column, options, of, default):
    def days(value):
        if value is ZERO_DATE:
            return _zero(column, 0, default)
        return (value - EPOCH_DAY).days

    if options.time_precision_mode == "connect":
        return of("int32", days, "org.apache.kafka.connect.data.Date")
    return of("int32", days, "io.debezium.time.Date")


def _micros(delta: datetime.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _time(column, options, of):
    if options.time_precision_mode == "connect":
        return of("int32", lambda v: _micros(v) // 1000, "org.apache.kafka.connect.data.Time")
    return of("int64", _micros, "io.debezium.time.MicroTime")


def _datetime(column, options, of, default):
    def micros(value):
        if value is ZERO_DATE:
            return None
        return _micros(value - EPOCH)

    def millis(value):
        if value is ZERO_DATE:
            return _zero(column, 0, default)
        return micros(value) // 1000

    if options.time_precision_mode == "connect":
        return of("int64", millis, "org.apache.kafka.connect.data.Timestamp")
    if (column.fsp or 0) <= 3:
        return of("int64", millis, "io.debezium.time.Timestamp")
    return of("int64", lambda v: _zero(column, 0, default) if v is ZERO_DATE else micros(v),
              "io.debezium.time.MicroTimestamp")


class SelectedTimestamp(datetime.datetime):
    """A TIMESTAMP value read by SELECT (snapshots): Debezium formats those from JDBC, with the fraction's
    trailing zeros dropped, where a streamed one keeps the column's fsp digits."""

    @classmethod
    def of(cls, value: datetime.datetime) -> SelectedTimestamp:
        return cls(value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond,
                   value.tzinfo)


def _timestamp(column, of, default):
    fsp = column.fsp or 0

    def iso(value):
        # the binlog holds TIMESTAMP as seconds since the epoch (UTC); 0 is the zero value '0000-00-00 00:00:00',
        # which Debezium's binlog reader gives as the epoch, where a SELECT (a snapshot) reads null
        if value is ZERO_DATE:
            return _zero(column, "1970-01-01T00:00:00Z", default)
        if value == EPOCH:
            return _zero(column, "1970-01-01T00:00:00Z")
        text = value.strftime("%Y-%m-%dT%H:%M:%S")
        if fsp and not isinstance(value, SelectedTimestamp):
            text += "." + f"{value.microsecond:06d}"[:fsp]
        elif value.microsecond:
            text += "." + f"{value.microsecond:06d}".rstrip("0")
        return text + "Z"

    return of("string", iso, "io.debezium.time.ZonedTimestamp")
