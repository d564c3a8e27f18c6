"""A table's row schema and the conversion of a pgoutput tuple into that row's Connect value. `RowMapper(schema_name,
columns, settings)` takes the columns in table order (name, type, optional) and leaves out those Debezium leaves out
(no mapping) and those `column.include/exclude.list` leave out, masking string columns, hashing character ones
(cut to their declared length) and truncating character ones as `column.mask.with.N.chars` / `column.mask.hash.*`
/ `column.truncate.to.N.chars` say (one rule a column, in that order); `value(tuple)` converts one
Insert/Update/Delete tuple. An unchanged TOASTed value (not sent by the server) becomes
`unavailable.value.placeholder`: the placeholder text for string columns (masked or hashed as the column is), its
UTF-8 bytes for bytes columns (written per binary.handling.mode), a one-element list for arrays of those. A masked or
hashed column's field schema has the parameter `masked`, a truncated one `truncateLength` when its declared length is
unknown or longer (`ColumnRules.string_rule`); the key schema takes the row schema's fields, parameters included.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from connectors.core.columns import ColumnRules
from connectors.events import json_converter, logical
from connectors.events import schema as s
from connectors.events.schema import Schema
from connectors.postgres.compiled import compiled
from connectors.postgres.defaults import column_default
from connectors.postgres.pgoutput import UNCHANGED_TOAST
from connectors.postgres.types import (
    BPCHAR,
    CHAR,
    MONEY,
    NAME,
    NUMERIC,
    POINT,
    TEXT,
    TIMESTAMPTZ,
    TIMETZ,
    VARCHAR,
    XML,
    ColumnMapping,
    ColumnType,
    TypeMappingError,
    TypeSettings,
    column_mapping,
    compiled_kind,
    omission_warning,
)

log = logging.getLogger(__name__)

DEFAULT_UNAVAILABLE_VALUE = "__debezium_unavailable_value"


@dataclass(frozen=True)
class RowColumn:
    name: str
    type: ColumnType
    optional: bool = True
    default: str | None = None  # the DEFAULT expression: the field schema's default (defaults.column_default)


class RowMapper:
    def __init__(
        self,
        schema_name: str,
        columns: Sequence[RowColumn],
        settings: TypeSettings,
        unavailable_value: str = DEFAULT_UNAVAILABLE_VALUE,
        column_rules: ColumnRules | None = None,
        table: str = "",
    ):
        """`column_rules` (column.include/exclude.list, masks, hashes, truncation) apply to `<table>.<column>`."""
        self._mappings: list[tuple[int, str, ColumnMapping]] = []
        self._fallbacks: dict[str, object] = {}  # the columns whose fallback is not their schema type's zero
        masks: dict[str, str] = {}  # column -> what it shows for an unchanged TOASTed value
        for position, column in enumerate(columns):
            qualified = f"{table}.{column.name}"
            if column_rules is not None and not column_rules.captures(qualified):
                continue
            mapping = column_mapping(column.type, settings, column.optional, column.name)
            if mapping is None:
                log.warning("%s", omission_warning(column.type, qualified if table else column.name))
                continue
            default = column_default(column.type, column.default, mapping)
            if default is not s.NO_DEFAULT:
                mapping = ColumnMapping(mapping.schema.with_default(default), mapping.convert, mapping.json)
            if column_rules is not None and mapping.schema.type == "string":
                # a mask: any string value (json, uuid… too), what it names is never sent; a hash: the character
                # types; a truncation: those and xml (as Debezium's: json, uuid… stay whole)
                rule = column_rules.string_rule(qualified, mapping.convert, hashable=_hashable(column.type),
                                                truncatable=_character(column.type),
                                                length=_declared_length(column.type))
                if rule is not None:
                    # a mask's value is no longer the logical type's
                    schema = s.string(optional=mapping.schema.optional) if rule.kind == "mask" else mapping.schema
                    mapping = ColumnMapping(schema.with_parameters(rule.parameters), rule.convert)
                    if rule.kind != "truncate":
                        # as Debezium's: the placeholder goes through the mask or hash too (a cut or clear one
                        # would read as data)
                        masks[column.name] = rule.convert(unavailable_value)
            self._mappings.append((position, column.name, mapping))
            fallback = _fallback(column.type, mapping)
            if fallback is not None:
                self._fallbacks[column.name] = fallback
        self.column_count = len(columns)
        self.schema: Schema = s.struct(
            [(name, mapping.schema) for _, name, mapping in self._mappings], name=schema_name, optional=True
        )
        # a masked column shows its mask even when the server did not send the value (nothing to hide, but the
        # column always reads masked); a truncated one keeps the whole placeholder, which a cut one would not be
        self._placeholders = {name: masks.get(name, _placeholder(mapping.schema, unavailable_value))
                              for _, name, mapping in self._mappings}

    def fallback(self, name: str):
        """What Debezium writes in a NOT NULL column a row does not carry (a key-only `before`) when it is not the
        column's schema type's plain zero (`""`, 0, false): see `_fallback`. None for the others."""
        return self._fallbacks.get(name)

    @property
    def column_names(self) -> list[str]:
        return [name for _, name, _ in self._mappings]

    @property
    def positions(self) -> frozenset[int]:
        """The positions (in `columns`) whose values make the row: the others are never looked at."""
        return frozenset(position for position, _, _ in self._mappings)

    def value(self, values: Sequence) -> dict:
        if len(values) != self.column_count:
            raise TypeMappingError(f"{self.schema.name}: a tuple of {len(values)} columns for {self.column_count}")
        row = {}
        for position, name, mapping in self._mappings:
            raw = values[position]
            if raw is None:
                row[name] = None
            elif raw is UNCHANGED_TOAST:
                row[name] = self._placeholders[name]
            else:
                try:
                    row[name] = mapping.convert(raw)
                except TypeMappingError:
                    raise
                except (ValueError, ArithmeticError, IndexError) as error:
                    raise TypeMappingError(f"{self.schema.name}.{name}: cannot convert {raw[:80]!r}: {error}") from None
        return row

    def text_writer(self, struct: Schema, use_compiled: bool = True) -> Callable[[Sequence], str]:
        """The JSON text of `struct` (this row's schema, or a key's: fields named as this row's columns) for a
        tuple: `json_converter.compiled(struct)` of the row `value(tuple)` makes, written from the tuple's texts
        without that row (converting and then encoding a five-column row cost 7.5 µs, this writer 3). A tuple it
        cannot write so (a null in a required column, a value its column's JSON writer does not take) goes the
        long way, which raises what `value` raises. The compiled module (connectors/postgres/compiled.py) runs
        the loop, and writes integers, strings and booleans itself, unless not `use_compiled`."""
        columns, compiled_columns = self._writer_columns(struct)
        whole = json_converter.compiled(struct)
        names = struct.field_names
        count = self.column_count
        unchanged = UNCHANGED_TOAST

        def long_way(values: Sequence) -> str:
            row = self.value(values)
            return whole({name: row[name] for name in names})

        def write(values: Sequence) -> str:
            if len(values) != count:
                return long_way(values)
            parts = []
            try:
                for position, prefix, text_json, null, placeholder in columns:
                    raw = values[position]
                    if raw is None:
                        text = null
                    elif raw is unchanged:
                        text = placeholder
                    else:
                        text = text_json(raw)
                    parts.append(prefix + text)  # None (no JSON without the row) raises TypeError
            except Exception:  # noqa: BLE001 - the long way converts the row, and raises what is wrong with it
                return long_way(values)
            return "{" + "".join(parts) + "}"

        if compiled is None or not use_compiled:
            return write
        write_row = compiled.write_row

        def write_compiled(values: Sequence) -> str:
            """`write`, by the compiled module for a tuple (what pgoutput and psycopg give)."""
            if type(values) is not tuple:
                return write(values)
            text = write_row(values, compiled_columns, count)
            return text if text is not None else long_way(values)
        return write_compiled

    def event_writer(self, struct: Schema, use_compiled: bool = True) -> Callable[[tuple, Sequence, int], bytes]:
        """A streamed change's event value from its transaction's parts (`EnvelopeWriter.streamed_parts`), its tuple
        and its LSN: the UTF-8 of `f"{parts[0]}{row}{parts[1]}{lsn}{parts[2]}{lsn}{parts[3]}"`, `row` as
        `text_writer(struct)` writes it. The compiled module writes the whole value in one call (no row text, no
        joined str to encode), unless not `use_compiled`; what it does not write goes this Python way."""
        row_text = self.text_writer(struct, use_compiled)

        def write(parts: tuple, values: Sequence, lsn: int) -> bytes:
            return f"{parts[0]}{row_text(values)}{parts[1]}{lsn}{parts[2]}{lsn}{parts[3]}".encode()

        if compiled is None or not use_compiled:
            return write
        write_event = compiled.write_event
        compiled_columns = self._writer_columns(struct)[1]
        count = self.column_count

        def write_compiled(parts: tuple, values: Sequence, lsn: int) -> bytes:
            value = write_event(parts, values, compiled_columns, count, lsn)  # None for a list: not a tuple
            return value if value is not None else write(parts, values, lsn)
        return write_compiled

    def bytes_writer(self, struct: Schema, head: str = "", tail: str = "",
                     use_compiled: bool = True) -> Callable[[Sequence], bytes]:
        """The UTF-8 of `head + text_writer(struct)(values) + tail` for a tuple (a message key, with what the key
        converter writes around it): by the compiled module in one call, unless not `use_compiled`; what it does
        not write goes this Python way."""
        row_text = self.text_writer(struct, use_compiled)

        def write(values: Sequence) -> bytes:
            return f"{head}{row_text(values)}{tail}".encode()

        if compiled is None or not use_compiled:
            return write
        write_text = compiled.write_text
        compiled_columns = self._writer_columns(struct)[1]
        count = self.column_count

        def write_compiled(values: Sequence) -> bytes:
            text = write_text(head, values, compiled_columns, count, tail)  # None for a list: not a tuple
            return text if text is not None else write(values)
        return write_compiled

    def compiled_columns(self, struct: Schema) -> tuple[tuple[tuple, ...], int] | None:
        """`struct`'s columns as the compiled writers take them (`write_event`, `write_text`, `write_run`) and the
        tuple's column count; None without the compiled module."""
        if compiled is None:
            return None
        return self._writer_columns(struct)[1], self.column_count

    def _writer_columns(self, struct: Schema) -> tuple[list[tuple], tuple[tuple, ...]]:
        """`struct`'s columns for the row writers: (position, prefix, text JSON writer, null text, placeholder
        text) for the Python loop, and the compiled module's (position, prefix, kind, argument, writer, null text,
        placeholder text)."""
        by_name = {name: (position, mapping) for position, name, mapping in self._mappings}
        columns = []
        for index, field in enumerate(struct.fields):
            position, mapping = by_name[field.name]
            encode = json_converter.compiled(field.schema)
            columns.append((position, ("," if index else "") + json_converter.string_json(field.name) + ":",
                            _text_json(mapping, encode), _json_or_none(encode, None),
                            _json_or_none(encode, self._placeholders[field.name])))
        compiled_columns = tuple((position, prefix, *compiled_kind(text_json), text_json, null, placeholder)
                                 for position, prefix, text_json, null, placeholder in columns)
        return columns, compiled_columns


def _text_json(mapping: ColumnMapping, encode: Callable[[object], str]) -> Callable[[str], str]:
    if mapping.json is not None:
        return mapping.json
    convert = mapping.convert
    return lambda text: encode(convert(text))


def _json_or_none(encode: Callable[[object], str], value) -> str | None:
    """`encode(value)`, or None where it raises (a null in a required field)."""
    try:
        return encode(value)
    except Exception:  # noqa: BLE001 - any refusal: that value then takes the long way
        return None


# the text of Debezium's fallback value (JdbcValueConverters.convertValue's) for the types whose zero is not plain
_FALLBACK_TEXTS = {NUMERIC: "0", MONEY: "0", POINT: "(0,0)"}
_FALLBACK_VALUES = {TIMESTAMPTZ: "1970-01-01T00:00:00Z", TIMETZ: "00:00:00Z"}


def _fallback(column_type: ColumnType, mapping: ColumnMapping):
    """Debezium's converters' fallback for a null in a NOT NULL column (JdbcValueConverters.convertValue's and
    PostgresValueConverter's), where it is not the schema type's plain zero: an empty list for an array, an empty map
    or `{}` for hstore, 0 in the column's decimal form for numeric and money, the point (0,0), the epoch or midnight
    in UTC for timestamptz and timetz, a zero ISO interval. None: the plain zero."""
    schema = mapping.schema
    oid = _underlying(column_type).oid
    if schema.type == "array":
        return []
    if schema.type == "map":
        return {}
    if oid in _FALLBACK_TEXTS:
        return mapping.convert(_FALLBACK_TEXTS[oid])
    if oid in _FALLBACK_VALUES:
        return _FALLBACK_VALUES[oid]
    if schema.name == logical.INTERVAL:
        return "P0Y0M0DT0H0M0S"
    if _underlying(column_type).name == "hstore":
        return "{}"
    return None

# the character types (JDBC CHAR, VARCHAR, SQLXML) Debezium's column.truncate.to.N.chars applies to
_CHARACTER_TYPES = frozenset({TEXT, VARCHAR, BPCHAR, CHAR, NAME, XML})


def _character(column_type: ColumnType) -> bool:
    return _underlying(column_type).oid in _CHARACTER_TYPES


# the types Debezium's column.mask.hash applies to (JDBC CHAR and VARCHAR; not SQLXML)
_HASHED_TYPES = frozenset({TEXT, VARCHAR, BPCHAR, CHAR, NAME})


def _hashable(column_type: ColumnType) -> bool:
    return _underlying(column_type).oid in _HASHED_TYPES


def _declared_length(column_type: ColumnType) -> int | None:
    """varchar(n) / char(n) (also through a domain): n; "char": 1; others none."""
    column_type = _underlying(column_type)
    if column_type.oid == CHAR:
        return 1
    if column_type.oid in (VARCHAR, BPCHAR) and column_type.type_modifier >= 4:
        return column_type.type_modifier - 4  # the typmod counts the 4-byte varlena header
    return None


def _underlying(column_type: ColumnType) -> ColumnType:
    while column_type.kind == "d" and column_type.base is not None:  # a domain: its base type
        column_type = column_type.base
    return column_type


def _placeholder(schema: Schema, text: str):
    if schema.type == "array":
        inner = _placeholder(schema.items, text)
        return None if inner is None else [inner]
    if schema.type == "string":
        return text
    if schema.type == "bytes" and schema.name is None:
        return text.encode("utf-8")
    return None
