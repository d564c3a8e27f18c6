"""A column's default value in its field schema, as Debezium's PostgreSQL connector puts it there
(PostgresDefaultValueConverter): the DEFAULT expression (`pg_get_expr`) of a column of a type it has a parser for is
read as a literal (`'…'::type` or a bare `42`, `true`), a function call or CURRENT_TIMESTAMP-like keyword as the
type's placeholder (`nextval(…)` → 0, `now()` → the epoch, `gen_random_uuid()` → the zero UUID), `NULL::…` as no
default; the value then goes through the column's converter. Types without a parser (domains, arrays, ranges,
network types, bytea, money, point, bit strings longer than one bit…) get no default, nor does an unconstrained
numeric under `precise` (a struct: Kafka Connect cannot hold it as a default). JsonConverter then writes the default
for a null value (`replace.null.with.default`), and a key-only `before` carries it."""

from __future__ import annotations

import decimal
import re
from typing import Any

from connectors.events.schema import NO_DEFAULT
from connectors.postgres.types import NUMERIC, ColumnMapping, ColumnType, numeric_precision_scale

_LITERAL = re.compile(r"'(.*?)'")
_FUNCTION = re.compile(r"^[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)")
_CURRENT_DATE_TIMES = {"current_timestamp", "current_time", "current_date", "localtime", "localtimestamp"}
_TRIMMED = {"bit", "varbit", "bool", "numeric", "float4", "float8", "int2", "int4", "int8", "uuid", "date", "time",
            "timestamp", "timestamptz", "interval"}
# type name → (placeholder of a generated default, null for `NULL::…`, the text the column's converter reads)
_PLACEHOLDERS = {
    "bool": "false", "bpchar": "", "varchar": "", "text": "", "numeric": "0.0", "float4": "0.0", "float8": "0.0",
    "int2": "0", "int4": "0", "int8": "0", "json": "{}", "jsonb": "{}", "xml": "",
    "uuid": "00000000-0000-0000-0000-000000000000", "date": "1970-01-01", "time": "00:00",
    "timestamp": "1970-01-01", "timestamptz": "1970-01-01", "interval": "00:00:00", "bit": "00",
}


def _extracted(expression: str, placeholder: str) -> str | None:
    if _FUNCTION.search(expression) or expression.lower() in _CURRENT_DATE_TIMES:
        return placeholder
    if "'" not in expression:
        return None if expression.startswith("NULL::") else expression
    return _LITERAL.search(expression).group(1)


def _as_text(type_name: str, value: str, column_type: ColumnType) -> str | None:
    """The extracted default as the text form pgoutput sends (what the column's converter reads)."""
    if type_name == "bool":
        return "t" if value.lower() == "true" else "f"  # Java's Boolean.parseBoolean
    if type_name == "time" and value.count(":") == 1:
        return value + ":00"
    if value in ("infinity", "-infinity"):
        return value
    if type_name in ("timestamp", "timestamptz") and " " not in value and "T" not in value:
        value += " 00:00:00"
    if type_name == "timestamptz" and not re.search(r"[+-]\d\d(:\d\d)?$", value):
        value += "+00"  # a timestamp without an offset is read in UTC
    if type_name == "numeric":
        precision_scale = numeric_precision_scale(column_type.type_modifier)
        number = decimal.Decimal(value)
        if precision_scale is not None and precision_scale[1] > -number.as_tuple().exponent:
            number = number.quantize(decimal.Decimal(1).scaleb(-precision_scale[1]))  # the column's scale
        return format(number, "f")
    return value


def column_default(column_type: ColumnType, expression: str | None, mapping: ColumnMapping) -> Any:
    """The field schema's default of a column with DEFAULT `expression` (NO_DEFAULT: none)."""
    if expression is None or column_type.element is not None:
        return NO_DEFAULT
    type_name = column_type.name
    if column_type.kind == "e":
        suffix = "::" + type_name
        if expression.endswith(suffix) and expression.startswith("'"):
            text = expression[: -len(suffix)]
            return text[1:-1] if text.endswith("'") else NO_DEFAULT
        return NO_DEFAULT
    if type_name not in _PLACEHOLDERS or column_type.kind == "d":
        return NO_DEFAULT
    if type_name in _TRIMMED:
        expression = expression.strip()
    try:
        value = _extracted(expression, _PLACEHOLDERS[type_name])
        if value is None:
            return NO_DEFAULT
        if type_name == "bit":
            if len(value) != 1 or mapping.schema.type != "boolean":
                return NO_DEFAULT
            return value == "1"
        if column_type.oid == NUMERIC and mapping.schema.type == "struct":
            return NO_DEFAULT  # a VariableScaleDecimal: Debezium drops a struct default
        converted = mapping.convert(_as_text(type_name, value, column_type))
    except (ValueError, ArithmeticError, AttributeError):
        return NO_DEFAULT  # as Debezium: an expression it cannot read gives no default
    return NO_DEFAULT if converted is None else converted
