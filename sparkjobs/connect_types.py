"""Typed Spark columns for a relational row from its Kafka Connect schema (values written with ``schemas.enable``).

A row arrives as JSON text (the ``after`` of its event); `row_columns` turns it into one column per field of the
schema's ``after`` struct, typed by the field's Connect type and logical name:

======================================================  =======================================================
Connect type / logical name                             Spark column
======================================================  =======================================================
``int8``, ``int16``, ``int32``, ``int64``               byte, short, int, long
``float32``, ``float64``, ``boolean``, ``string``       float, double, boolean, string
``bytes``                                               binary (the JSON holds base64)
``…Decimal`` (bytes, ``scale``, precision ≤ 38)         decimal(precision, scale) (the two's-complement bytes)
``…Decimal`` as text or a double                        decimal(precision, scale) / double
``io.debezium.time.Date``, ``…connect.data.Date``       date
``…time.Timestamp``, ``MicroTimestamp``,                timestamp (UTC)
``NanoTimestamp``, ``ZonedTimestamp``,
``…connect.data.Timestamp``
anything else (structs, arrays, variable-scale          string (its JSON text)
decimals, geometry, …)
======================================================  =======================================================

Without a schema (``schemas.enable`` off) every top-level field of the row is a string column (plain text for
strings, JSON text otherwise).
"""

from __future__ import annotations

import base64
import decimal
import json
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    TimestampType,
)

if TYPE_CHECKING:
    from pyspark.sql import Column

ROW_MAP = MapType(StringType(), StringType())
_PLAIN = {
    "int8": ByteType(), "int16": ShortType(), "int32": IntegerType(), "int64": LongType(), "float32": FloatType(),
    "float64": DoubleType(), "boolean": BooleanType(), "string": StringType(),
}
_DATES = ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date")
_MILLIS = ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp")
DECIMAL = "org.apache.kafka.connect.data.Decimal"


def after_fields(schema_text: str | None) -> list[dict[str, Any]] | None:
    """The fields of the ``after`` struct of an envelope's Connect schema (JSON text), or None without one."""
    if not schema_text:
        return None
    try:
        schema = json.loads(schema_text)
    except ValueError:
        return None
    for field in schema.get("fields") or []:
        if field.get("field") == "after" and field.get("type") == "struct":
            return list(field.get("fields") or [])
    return None


def spark_type(field: dict[str, Any]) -> DataType:
    kind, name = field.get("type"), field.get("name")
    if name in _DATES:
        return DateType()
    if name in _MILLIS or name in ("io.debezium.time.MicroTimestamp", "io.debezium.time.NanoTimestamp",
                                   "io.debezium.time.ZonedTimestamp"):
        return TimestampType()
    if name == DECIMAL:
        parameters = field.get("parameters") or {}
        precision = int(parameters.get("connect.decimal.precision", 38))
        scale = int(parameters.get("scale", 0))
        if precision <= 38 and 0 <= scale <= precision:
            return DecimalType(precision, scale)
        return StringType()
    if kind == "bytes":
        return BinaryType()
    return _PLAIN.get(kind, StringType())


def _decimal_from_base64(text: str | None, scale: int) -> decimal.Decimal | None:
    if text is None:
        return None
    try:
        unscaled = int.from_bytes(base64.b64decode(text), "big", signed=True)
    except ValueError:
        return None
    return decimal.Decimal(unscaled).scaleb(-scale)


def column(raw: Column, field: dict[str, Any]) -> Column:
    """The typed value of ``field`` from ``raw`` (its text in the row map)."""
    kind, name = field.get("type"), field.get("name")
    target = spark_type(field)
    if name in _DATES:
        return F.date_add(F.lit("1970-01-01").cast("date"), raw.cast("int"))
    if name in _MILLIS:
        return F.timestamp_millis(raw.cast("long"))
    if name == "io.debezium.time.MicroTimestamp":
        return F.timestamp_micros(raw.cast("long"))
    if name == "io.debezium.time.NanoTimestamp":
        return F.timestamp_micros(F.floor(raw.cast("long") / 1000).cast("long"))
    if name == "io.debezium.time.ZonedTimestamp":
        return raw.cast("timestamp")
    if isinstance(target, DecimalType) and kind == "bytes":
        scale = target.scale
        decode = F.udf(lambda text: _decimal_from_base64(text, scale), target)
        return decode(raw)
    if isinstance(target, BinaryType):
        return F.unbase64(raw)
    return raw.cast(target)


def row_columns(document: Column, fields: list[dict[str, Any]] | None, names: list[str]) -> list[Column]:
    """One column per field: typed from ``fields`` (the Connect schema's) where known, else the field's text, for
    every name in ``names``."""
    row = F.from_json(document, ROW_MAP)
    typed = {field["field"]: field for field in fields or [] if field.get("field")}
    return [(column(row[name], typed[name]) if name in typed else row[name]).alias(name) for name in names]


def column_types(fields: list[dict[str, Any]] | None, names: list[str]) -> dict[str, DataType]:
    typed = {field["field"]: field for field in fields or [] if field.get("field")}
    return {name: spark_type(typed[name]) if name in typed else StringType() for name in names}
