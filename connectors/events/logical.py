"""The logical types Kafka Connect and Debezium name, as schema factories (names, versions and parameters as
Debezium's connectors write them)."""

from __future__ import annotations

from connectors.events.schema import Schema, array, bytes_, float64, int32, primitive, struct

# Kafka Connect's own logical types
DECIMAL = "org.apache.kafka.connect.data.Decimal"
CONNECT_DATE = "org.apache.kafka.connect.data.Date"
CONNECT_TIME = "org.apache.kafka.connect.data.Time"
CONNECT_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"

# Debezium's
DATE = "io.debezium.time.Date"
TIME = "io.debezium.time.Time"
MICRO_TIME = "io.debezium.time.MicroTime"
NANO_TIME = "io.debezium.time.NanoTime"
TIMESTAMP = "io.debezium.time.Timestamp"
MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"
NANO_TIMESTAMP = "io.debezium.time.NanoTimestamp"
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
ZONED_TIME = "io.debezium.time.ZonedTime"
MICRO_DURATION = "io.debezium.time.MicroDuration"
INTERVAL = "io.debezium.time.Interval"
YEAR = "io.debezium.time.Year"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
JSON = "io.debezium.data.Json"
XML = "io.debezium.data.Xml"
UUID = "io.debezium.data.Uuid"
ENUM = "io.debezium.data.Enum"
ENUM_SET = "io.debezium.data.EnumSet"
BITS = "io.debezium.data.Bits"
LTREE = "io.debezium.data.Ltree"
TSVECTOR = "io.debezium.data.Tsvector"
POINT = "io.debezium.data.geometry.Point"

DECIMAL_PRECISION_PARAMETER = "connect.decimal.precision"


def decimal(scale: int, precision: int | None = None, optional: bool = False) -> Schema:
    """Kafka Connect's Decimal: bytes holding the unscaled two's-complement value; `scale` is a parameter."""
    parameters = {"scale": scale}
    if precision is not None:
        parameters[DECIMAL_PRECISION_PARAMETER] = precision
    return primitive("bytes", optional=optional, name=DECIMAL, version=1, parameters=parameters)


def connect_date(optional: bool = False) -> Schema:
    return primitive("int32", optional=optional, name=CONNECT_DATE, version=1)


def connect_time(optional: bool = False) -> Schema:
    return primitive("int32", optional=optional, name=CONNECT_TIME, version=1)


def connect_timestamp(optional: bool = False) -> Schema:
    return primitive("int64", optional=optional, name=CONNECT_TIMESTAMP, version=1)


def named(type_: str, name: str, optional: bool = False, **parameters) -> Schema:
    """A Debezium semantic type of version 1 (all of Debezium's are)."""
    return primitive(type_, optional=optional, name=name, version=1, parameters=parameters or None)


def variable_scale_decimal(optional: bool = False) -> Schema:
    return struct(
        [("scale", int32()), ("value", bytes_())],
        name=VARIABLE_SCALE_DECIMAL,
        version=1,
        doc="Variable scaled decimal",
        optional=optional,
    )


def enum(allowed: list[str], optional: bool = False) -> Schema:
    return named("string", ENUM, optional, allowed=",".join(allowed))


def bits(length: int, optional: bool = False) -> Schema:
    return named("bytes", BITS, optional, length=length)


def point(optional: bool = False) -> Schema:
    """Debezium's geometry Point: the coordinates, and the point as WKB (no SRID: PostgreSQL's point has none)."""
    return struct(
        [("x", float64()), ("y", float64()), ("wkb", bytes_(optional=True)), ("srid", int32(optional=True))],
        name=POINT,
        version=1,
        doc="Geometry (POINT)",
        optional=optional,
    )


def array_of(items: Schema, optional: bool = False) -> Schema:
    return array(items, optional=optional)
