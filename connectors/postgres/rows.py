"""A table's row schema and the conversion of a pgoutput tuple into that row's Connect value.

`RowMapper(schema_name, columns, settings)` takes the columns in table order (name, type, optional) and leaves out
those Debezium leaves out (no mapping); `value(tuple)` converts one Insert/Update/Delete tuple. An unchanged TOASTed
value (not sent by the server) becomes `unavailable.value.placeholder`: the placeholder text for string columns, its
UTF-8 bytes for bytes columns (written per binary.handling.mode), a one-element list for arrays of those.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from connectors.events import schema as s
from connectors.events.schema import Schema
from connectors.postgres.pgoutput import UNCHANGED_TOAST
from connectors.postgres.types import ColumnMapping, ColumnType, TypeMappingError, TypeSettings, column_mapping

DEFAULT_UNAVAILABLE_VALUE = "__debezium_unavailable_value"


@dataclass(frozen=True)
class RowColumn:
    name: str
    type: ColumnType
    optional: bool = True


class RowMapper:
    def __init__(
        self,
        schema_name: str,
        columns: Sequence[RowColumn],
        settings: TypeSettings,
        unavailable_value: str = DEFAULT_UNAVAILABLE_VALUE,
    ):
        self._mappings: list[tuple[int, str, ColumnMapping]] = []
        for position, column in enumerate(columns):
            mapping = column_mapping(column.type, settings, column.optional, column.name)
            if mapping is not None:
                self._mappings.append((position, column.name, mapping))
        self.column_count = len(columns)
        self.schema: Schema = s.struct(
            [(name, mapping.schema) for _, name, mapping in self._mappings], name=schema_name, optional=True
        )
        self._placeholders = {
            name: _placeholder(mapping.schema, unavailable_value) for _, name, mapping in self._mappings
        }

    @property
    def column_names(self) -> list[str]:
        return [name for _, name, _ in self._mappings]

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


def _placeholder(schema: Schema, text: str):
    if schema.type == "array":
        inner = _placeholder(schema.items, text)
        return None if inner is None else [inner]
    if schema.type == "string":
        return text
    if schema.type == "bytes" and schema.name is None:
        return text.encode("utf-8")
    return None
