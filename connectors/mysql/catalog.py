"""Tables and columns as `information_schema` describes them, in the shape the binlog's table map gives
(`binlog.TableSchema` / `ColumnInfo`), and rows read by SELECT in the value forms the binlog reader decodes, so a
snapshot row and a streamed row of the same table map to the same schema and values."""

from __future__ import annotations

import re
import uuid
from dataclasses import replace
from typing import NamedTuple

from pymysqlreplication.constants import FIELD_TYPE

from connectors.mysql.binlog import ZERO_DATE, ColumnInfo, TableSchema
from connectors.mysql.types import SelectedTimestamp

_TYPES = {
    "tinyint": FIELD_TYPE.TINY, "smallint": FIELD_TYPE.SHORT, "mediumint": FIELD_TYPE.INT24,
    "int": FIELD_TYPE.LONG, "bigint": FIELD_TYPE.LONGLONG, "float": FIELD_TYPE.FLOAT, "double": FIELD_TYPE.DOUBLE,
    "decimal": FIELD_TYPE.NEWDECIMAL, "bit": FIELD_TYPE.BIT, "year": FIELD_TYPE.YEAR, "enum": FIELD_TYPE.ENUM,
    "set": FIELD_TYPE.SET, "date": FIELD_TYPE.DATE, "time": FIELD_TYPE.TIME2, "datetime": FIELD_TYPE.DATETIME2,
    "timestamp": FIELD_TYPE.TIMESTAMP2, "char": FIELD_TYPE.STRING, "varchar": FIELD_TYPE.VARCHAR,
    "binary": FIELD_TYPE.STRING, "varbinary": FIELD_TYPE.VARCHAR, "json": FIELD_TYPE.JSON,
    **dict.fromkeys(("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
                     "geometrycollection"), FIELD_TYPE.GEOMETRY),
}
_GEOMETRY_TYPES = {name: code for code, name in enumerate((
    "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
    "geometrycollection"))}
_BLOBS = {"tinyblob": 1, "blob": 2, "mediumblob": 3, "longblob": 4}
_TEXTS = {"tinytext": 1, "text": 2, "mediumtext": 3, "longtext": 4}
_BINARY = {"binary", "varbinary", *_BLOBS}
# MariaDB's types the binlog's table map shows as BINARY(n): information_schema's DATA_TYPE -> n
BINARY_LOOKALIKES = {"uuid": 16, "inet4": 4, "inet6": 16}


def base_tables(connection) -> list[tuple[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
            "AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') "
            "ORDER BY TABLE_SCHEMA, TABLE_NAME"
        )
        return [(db, table) for db, table in cursor.fetchall()]


def table_schema(connection, database: str, table: str) -> TableSchema:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, CHARACTER_OCTET_LENGTH, "
            "NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, COLUMN_KEY, COLLATION_NAME, COLUMN_DEFAULT "
            "FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (database, table),
        )
        rows = cursor.fetchall()
        cursor.execute(
            "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX", (database, table),
        )
        key_order = tuple(row[0] for row in cursor.fetchall())
    return TableSchema(database, table, tuple(_column(*row) for row in rows), key_order, defaults_known=True)


def _column(name, data_type, column_type, nullable, charset, octets, precision, scale, fsp, key,
            collation, default) -> ColumnInfo:
    data_type = data_type.lower()
    code = _TYPES.get(data_type)
    length_size = None
    if data_type in _BLOBS or data_type in _TEXTS:
        code, length_size = FIELD_TYPE.BLOB, _BLOBS.get(data_type) or _TEXTS[data_type]
    if data_type in BINARY_LOOKALIKES:  # as the table map shows them; types.mapping tells them by data_type
        code, octets, charset = FIELD_TYPE.STRING, BINARY_LOOKALIKES[data_type], "binary"
    if code is None:
        code = -1  # mapped by types.mapping into a clear error naming the column
    listed = tuple(v.replace("''", "'") for v in re.findall(r"'((?:[^']|'')*)'", column_type)) \
        if data_type in ("enum", "set") else ()
    return ColumnInfo(
        name=name, type_code=code, nullable=nullable == "YES", unsigned="unsigned" in column_type.lower(),
        charset="binary" if data_type in _BINARY else charset, collation=collation, max_length=octets,
        precision=precision if data_type == "decimal" else None, scale=scale if data_type == "decimal" else None,
        fsp=fsp if data_type in ("time", "datetime", "timestamp") else None,
        bits=precision if data_type == "bit" else None, length_size=length_size,
        enum_values=listed if data_type == "enum" else (), set_values=listed if data_type == "set" else (),
        primary=key == "PRI", type_name=column_type,
        geometry_type=_GEOMETRY_TYPES.get(data_type), default=default,
        data_type=data_type if data_type in BINARY_LOOKALIKES else None,
    )


class CatalogColumn(NamedTuple):
    """What information_schema tells of a column that a binlog table map does not."""

    default: str | None  # COLUMN_DEFAULT
    data_type: str | None  # DATA_TYPE of MariaDB's UUID, INET4 and INET6 (BINARY(n) in the table map), else None


def column_catalog(connection, database: str, table: str) -> dict[str, CatalogColumn]:
    """{column: its CatalogColumn} of a table as information_schema shows it now (empty: no such table)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT COLUMN_NAME, COLUMN_DEFAULT, DATA_TYPE FROM information_schema.COLUMNS "
                       "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s", (database, table))
        return {name: CatalogColumn(default, data_type.lower() if data_type.lower() in BINARY_LOOKALIKES else None)
                for name, default, data_type in cursor.fetchall()}


def may_be(column: ColumnInfo, data_type: str) -> bool:
    """Whether a table map's column has the shape the binary look-alike `data_type` shows there (BINARY(n))."""
    return column.type_code == FIELD_TYPE.STRING and column.max_length == BINARY_LOOKALIKES[data_type]


def with_catalog(schema: TableSchema, catalog: dict[str, CatalogColumn]) -> TableSchema:
    """A table map's schema with its columns' defaults and binary look-alike types (`column_catalog`), matched by
    name; a BINARY(n) column of the table map is taken as the look-alike only where its size is the type's."""
    columns = []
    for column in schema.columns:
        known = catalog.get(column.name)
        default, data_type = (known.default, known.data_type) if known is not None else (None, None)
        if data_type is not None and not may_be(column, data_type):
            data_type = None  # information_schema's table is no longer the table map's (a later ALTER)
        columns.append(replace(column, default=default, data_type=data_type))
    return replace(schema, columns=tuple(columns), defaults_known=True)


BINLOG_FORM_TYPES = frozenset({FIELD_TYPE.DATE, FIELD_TYPE.DATETIME2, FIELD_TYPE.TIMESTAMP2, FIELD_TYPE.BIT,
                               FIELD_TYPE.SET})


def needs_binlog_form(column: ColumnInfo) -> bool:
    """Whether `binlog_form` may change a value of the column (else pymysql's value is the binlog reader's)."""
    return column.type_code in BINLOG_FORM_TYPES or column.data_type == "uuid"


def binlog_form(column: ColumnInfo, value):
    """A value as pymysql returns it, in the form the binlog reader decodes the same column to."""
    if value is None:
        return None
    code = column.type_code
    if isinstance(value, str) and code in (FIELD_TYPE.DATE, FIELD_TYPE.DATETIME2, FIELD_TYPE.TIMESTAMP2):
        # pymysql returns a date it cannot build as its text: the zero date, and dates with a zero part
        # ('2020-00-00', allowed without NO_ZERO_IN_DATE), which the binlog reader decodes as the zero date too
        return ZERO_DATE
    if code == FIELD_TYPE.TIMESTAMP2:
        return SelectedTimestamp.of(value)
    if code == FIELD_TYPE.BIT:
        return format(int.from_bytes(value, "big"), f"0{column.bits or 1}b")
    if code == FIELD_TYPE.SET and isinstance(value, str):
        return frozenset(v for v in value.split(",") if v)
    if column.data_type == "uuid" and isinstance(value, str):
        # SELECT reads a UUID's text; the binlog holds its 16 bytes less the trailing zero bytes (as any BINARY(n)'s),
        # which the binlog reader gives as "" when none is left
        return uuid.UUID(value).bytes.rstrip(b"\0") or ""
    return value
