"""Kafka Connect's schema model (org.apache.kafka.connect.data.Schema), as immutable values.

A `Schema` has a type (`int8` … `struct`), optionality, an optional logical name, version, doc, ordered string
parameters and a default. Values that go with a schema are plain Python values: ints, floats, bools, str, bytes,
`decimal.Decimal` for the Decimal logical type, lists for arrays, dicts for maps and structs (field name → value).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

PRIMITIVE_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes")
TYPES = (*PRIMITIVE_TYPES, "array", "map", "struct")


class SchemaError(ValueError):
    """A schema that Kafka Connect would refuse, or a value that does not fit its schema."""


class _NoDefault:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class Field:
    name: str
    schema: Schema


@dataclass(frozen=True)
class Schema:
    type: str
    optional: bool = False
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: tuple[tuple[str, str], ...] | None = None
    default: Any = NO_DEFAULT
    fields: tuple[Field, ...] = ()
    items: Schema | None = None  # array elements and map values (Kafka Connect's valueSchema)
    keys: Schema | None = None  # map keys

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise SchemaError(f"unknown Kafka Connect schema type {self.type!r}; expected one of {', '.join(TYPES)}")
        if self.type == "array" and self.items is None:
            raise SchemaError("an array schema needs an element schema")
        if self.type == "map" and (self.keys is None or self.items is None):
            raise SchemaError("a map schema needs a key schema and a value schema")
        if self.type == "struct":
            names = [f.name for f in self.fields]
            duplicates = sorted({n for n in names if names.count(n) > 1})
            if duplicates:
                raise SchemaError(f"struct {self.name or ''} has duplicate field(s) {duplicates}")

    def as_optional(self) -> Schema:
        return self if self.optional else replace(self, optional=True)

    def as_required(self) -> Schema:
        return replace(self, optional=False) if self.optional else self

    def with_default(self, default: Any) -> Schema:
        return replace(self, default=default)

    def with_parameters(self, parameters: Iterable[tuple[str, str]]) -> Schema:
        """These parameters after the schema's own, as Kafka Connect's SchemaBuilder.parameter adds them (a
        LinkedHashMap: a name already there keeps its place and takes the new value); none: the schema itself."""
        merged = dict(self.parameters or ())
        merged.update(parameters)
        if merged == dict(self.parameters or ()):
            return self
        return replace(self, parameters=tuple(merged.items()))

    def with_name(self, name: str | None, version: int | None = None) -> Schema:
        return replace(self, name=name, version=version)

    @property
    def params(self) -> dict[str, str]:
        return dict(self.parameters or ())

    def field(self, name: str) -> Field:
        for candidate in self.fields:
            if candidate.name == name:
                return candidate
        raise KeyError(name)

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]


def _parameters(parameters: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...] | None:
    if parameters is None:
        return None
    return tuple((str(k), str(v)) for k, v in parameters.items())


def primitive(
    type_: str,
    *,
    optional: bool = False,
    name: str | None = None,
    version: int | None = None,
    parameters: Mapping[str, Any] | None = None,
    default: Any = NO_DEFAULT,
    doc: str | None = None,
) -> Schema:
    if type_ not in PRIMITIVE_TYPES:
        raise SchemaError(f"{type_!r} is not a primitive Kafka Connect type")
    return Schema(type_, optional, name, version, doc, _parameters(parameters), default)


def int8(optional: bool = False) -> Schema:
    return Schema("int8", optional)


def int16(optional: bool = False) -> Schema:
    return Schema("int16", optional)


def int32(optional: bool = False) -> Schema:
    return Schema("int32", optional)


def int64(optional: bool = False) -> Schema:
    return Schema("int64", optional)


def float32(optional: bool = False) -> Schema:
    return Schema("float32", optional)


def float64(optional: bool = False) -> Schema:
    return Schema("float64", optional)


def boolean(optional: bool = False) -> Schema:
    return Schema("boolean", optional)


def string(optional: bool = False) -> Schema:
    return Schema("string", optional)


def bytes_(optional: bool = False) -> Schema:
    return Schema("bytes", optional)


def array(items: Schema, *, optional: bool = False, name: str | None = None, version: int | None = None) -> Schema:
    return Schema("array", optional, name, version, items=items)


def map_(keys: Schema, values: Schema, *, optional: bool = False, name: str | None = None) -> Schema:
    return Schema("map", optional, name, keys=keys, items=values)


def struct(
    fields: Iterable[Field | tuple[str, Schema]],
    *,
    name: str | None = None,
    optional: bool = False,
    version: int | None = None,
    doc: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Schema:
    built = tuple(f if isinstance(f, Field) else Field(f[0], f[1]) for f in fields)
    return Schema("struct", optional, name, version, doc, _parameters(parameters), fields=built)
