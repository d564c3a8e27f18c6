"""What the mapping needs from the catalog: a type's description (enums, domains, arrays, extension types) and a
table's columns with nullability and primary key. Works on any DB-API cursor with %s parameters (psycopg2 or
psycopg 3)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from connectors import ConnectorError
from connectors.core.columns import ColumnRules
from connectors.postgres.types import BUILTIN_ARRAYS, BUILTIN_NAMES, ColumnType, builtin

_TYPE = """
SELECT t.typname, t.typtype, t.typelem, t.typcategory, t.typbasetype, t.typtypmod,
       ARRAY(SELECT e.enumlabel::text FROM pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder)
FROM pg_type t WHERE t.oid = %s
"""


def describe_type(cursor, oid: int, type_modifier: int = -1) -> ColumnType:
    if oid in BUILTIN_NAMES or oid in BUILTIN_ARRAYS:
        return builtin(oid, type_modifier)
    cursor.execute(_TYPE, (oid,))
    row = cursor.fetchone()
    if row is None:
        raise LookupError(f"type OID {oid} is not in pg_type")
    name, kind, element, category, base, base_typmod, labels = row
    kind = kind.decode() if isinstance(kind, bytes) else kind
    category = category.decode() if isinstance(category, bytes) else category
    if category == "A" and element:
        return ColumnType(oid, type_modifier, name, kind, element=describe_type(cursor, element, type_modifier))
    if kind == "d":
        return ColumnType(oid, type_modifier, name, kind, base=describe_type(cursor, base, base_typmod))
    return ColumnType(oid, type_modifier, name, kind, enum_labels=tuple(labels or ()))


@dataclass(frozen=True)
class TableColumn:
    name: str
    type: ColumnType
    not_null: bool
    primary_key_position: int | None  # 1-based position in the primary key, None when not part of it
    default: str | None = None  # the DEFAULT expression (pg_get_expr), None without one (or a generated column)


_COLUMNS = """
SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull, array_position(i.indkey::int2[], a.attnum),
       CASE WHEN a.attgenerated = '' THEN pg_get_expr(d.adbin, d.adrelid) END
FROM pg_attribute a
LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""


def table_columns(cursor, relation_id: int) -> list[TableColumn]:
    cursor.execute(_COLUMNS, (relation_id,))
    rows = cursor.fetchall()
    return [
        TableColumn(name, describe_type(cursor, type_oid, typmod), not_null, None if pk is None else pk + 1, default)
        for name, type_oid, typmod, not_null, pk, default in rows
    ]


_ATTRIBUTES = """
SELECT a.attname, a.attgenerated <> '' FROM pg_attribute a
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""
_COLUMN_LIST = """
SELECT pr.prattrs::int2[] IS NOT NULL, ARRAY(SELECT a.attname FROM pg_attribute a
                                            WHERE a.attrelid = pr.prrelid AND a.attnum = ANY (pr.prattrs::int2[]))
FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid
WHERE p.pubname = %s AND pr.prrelid = %s
"""


def published_columns(cursor, publication: str, relation_id: int) -> list[str]:
    """The columns pgoutput sends for a table, in the table's order, so that snapshot rows have the stream's shape:
    the publication's column list when it has one (PostgreSQL 15+), else every column but the generated ones
    (PostgreSQL 18 sends those too when the publication has publish_generated_columns = stored)."""
    cursor.execute("SELECT current_setting('server_version_num')::int")
    version = cursor.fetchone()[0]
    cursor.execute(_ATTRIBUTES, (relation_id,))
    columns = cursor.fetchall()
    if version >= 150000:
        cursor.execute(_COLUMN_LIST, (publication, relation_id))
        row = cursor.fetchone()
        if row is not None and row[0]:
            listed = set(row[1])
            return [name for name, _ in columns if name in listed]
    generated_published = False
    if version >= 180000:
        cursor.execute("SELECT pubgencols = 's' FROM pg_publication WHERE pubname = %s", (publication,))
        row = cursor.fetchone()
        generated_published = bool(row and row[0])
    return [name for name, generated in columns if generated_published or not generated]


_COLUMN_NAMES = """
SELECT a.attname FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""


def key_column_problems(cursor, rules: ColumnRules, tables: Iterable[tuple[str, str]]) -> list[str]:
    """What is wrong with `message.key.columns` for these (schema, table): a named column the table does not have,
    or does not capture (column.include/exclude.list). Found at start-up rather than at the table's first change."""
    problems = []
    for schema, table in tables:
        if rules.key_for(f"{schema}.{table}") is None:
            continue
        cursor.execute(_COLUMN_NAMES, (schema, table))
        captured = [name for (name,) in cursor.fetchall() if rules.captures(f"{schema}.{table}.{name}")]
        try:
            rules.key_of(f"{schema}.{table}", captured)
        except ConnectorError as error:
            problems.append(str(error))
    return problems
