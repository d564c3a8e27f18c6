"""Debezium's schema change events (`include.schema.changes=true`): one event per DDL statement of a captured
database on the topic `<topic.prefix>`, key `{databaseName}`, value `{source, ts_ms, databaseName, schemaName, ddl,
tableChanges}`.

`tableChanges` describes the tables a `CREATE`, `ALTER` or `RENAME TABLE` leaves (type `CREATE` / `ALTER`, a
renamed table as one `ALTER` of its new name, ids `"<db>"."<table>"`) and the table a `DROP TABLE` removes (type
`DROP`, `table: null`, as Debezium's; one event per table, its `ddl` rewritten to ``DROP TABLE `db`.`table` `` as
Debezium's parser does). `TRUNCATE` has no schema change event (only the table's truncate event). `source.pos` is
where the statement's own event starts. Column facts are those Debezium's parser takes from the declared type
(`COLUMN_TYPE`): `length` is the number in its parentheses (a display width for integer types), none without one.
The structure is read from `information_schema` when the event is built: while the connector catches up behind
later DDL on the same table, it shows the later structure (Debezium's own DDL parser is not reproduced); rows always
carry the schema of their binlog table map.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

from connectors.events import json_converter
from connectors.events import schema as s
from connectors.events.schema import Schema
from connectors.kafka.sink import OutMessage
from connectors.mysql.binlog import SchemaStatement
from connectors.mysql.config import MySqlConfig
from connectors.mysql.connection import connect
from connectors.mysql.defaults import default_expression
from connectors.mysql.envelope import VERSION, source_schema

_NAME = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_QUALIFIED = rf"({_NAME})(?:\s*\.\s*({_NAME}))?"
_CREATE = re.compile(
    rf"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{_QUALIFIED}", re.I)
_ALTER = re.compile(rf"^\s*ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?TABLE\s+(?:IF\s+EXISTS\s+)?{_QUALIFIED}", re.I)
_DROP = re.compile(r"^(\s*DROP\s+(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+EXISTS\s+)?)(.*?)(\s+(?:RESTRICT|CASCADE))?\s*;?\s*$",
                   re.I | re.S)
_TRUNCATE = re.compile(rf"^\s*TRUNCATE\s+(?:TABLE\s+)?{_QUALIFIED}", re.I)
_RENAME = re.compile(r"^\s*RENAME\s+TABLES?\s+(.*)$", re.I | re.S)
_RENAME_TO = re.compile(rf"\bRENAME\s+(?!(?:COLUMN|INDEX|KEY|CONSTRAINT)\b)(?:(?:TO|AS)\s+)?{_QUALIFIED}", re.I)
_TO = re.compile(rf"{_QUALIFIED}\s+TO\s+{_QUALIFIED}", re.I)
_ITEM = re.compile(_QUALIFIED)

# java.sql.Types of MySQL data types as Debezium's DDL parser resolves them (its column jdbcType)
_JDBC = {
    "bit": -7, "tinyint": 5, "smallint": 5, "mediumint": 4, "int": 4, "integer": 4, "bigint": -5, "float": 6,
    "double": 8, "decimal": 3, "char": 1, "varchar": 12, "tinytext": 12, "text": 12, "mediumtext": 12,
    "longtext": 12, "json": 12, "binary": -2, "varbinary": -3, "tinyblob": 2004, "blob": 2004, "mediumblob": 2004,
    "longblob": 2004, "date": 91, "time": 92, "datetime": 93, "timestamp": 2014, "year": 4, "enum": 1, "set": 1,
}


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _qualified(first: str, second: str | None, default_db: str) -> tuple[str, str]:
    return (_unquote(first), _unquote(second)) if second else (default_db, _unquote(first))


def affected_tables(ddl: str, default_db: str) -> list[tuple[str, str, str]]:
    """(change type, database, table) of each table a statement creates, alters, renames or drops."""
    text = re.sub(r"/\*.*?\*/", " ", ddl, flags=re.S)
    if m := _CREATE.match(text):
        return [("CREATE", *_qualified(m.group(1), m.group(2), default_db))]
    if m := _ALTER.match(text):
        renamed = _RENAME_TO.search(text, m.end())  # ALTER TABLE a RENAME TO b: an ALTER of b, as RENAME TABLE
        if renamed:
            return [("ALTER", *_qualified(renamed.group(1), renamed.group(2), default_db))]
        return [("ALTER", *_qualified(m.group(1), m.group(2), default_db))]
    if m := _DROP.match(text):
        return [("DROP", *_qualified(i.group(1), i.group(2), default_db)) for i in _ITEM.finditer(m.group(2))]
    if m := _RENAME.match(text):
        out = []
        for pair in _TO.finditer(m.group(1)):
            out.append(("ALTER", *_qualified(pair.group(3), pair.group(4), default_db)))
        return out
    return []


def truncated_table(ddl: str, default_db: str) -> tuple[str, str] | None:
    """(database, table) a TRUNCATE statement empties; None for any other statement."""
    m = _TRUNCATE.match(re.sub(r"/\*.*?\*/", " ", ddl, flags=re.S))
    return _qualified(m.group(1), m.group(2), default_db) if m else None


def _drop_parts(ddl: str) -> tuple[str, str]:
    """A DROP TABLE statement's text before its table list and after it (RESTRICT / CASCADE)."""
    m = _DROP.match(re.sub(r"/\*.*?\*/", " ", ddl, flags=re.S))
    return (m.group(1), m.group(3) or "") if m else ("DROP TABLE ", "")


def _quoted(database: str, table: str) -> str:
    return ".".join("`" + name.replace("`", "``") + "`" for name in (database, table))


def _column_schema() -> Schema:
    return s.struct(
        [("name", s.string()), ("jdbcType", s.int32()), ("nativeType", s.int32(optional=True)),
         ("typeName", s.string()), ("typeExpression", s.string(optional=True)),
         ("charsetName", s.string(optional=True)), ("length", s.int32(optional=True)),
         ("scale", s.int32(optional=True)), ("position", s.int32()), ("optional", s.boolean(optional=True)),
         ("autoIncremented", s.boolean(optional=True)), ("generated", s.boolean(optional=True)),
         ("comment", s.string(optional=True)), ("defaultValueExpression", s.string(optional=True)),
         ("enumValues", s.array(s.string(), optional=True))],
        name="io.debezium.connector.schema.Column", version=1,
    )


def _table_schema() -> Schema:
    return s.struct(
        [("defaultCharsetName", s.string(optional=True)),
         ("primaryKeyColumnNames", s.array(s.string(), optional=True)),
         ("columns", s.array(_column_schema())), ("comment", s.string(optional=True))],
        name="io.debezium.connector.schema.Table", version=1, optional=True,
    )


def value_schema(mariadb: bool) -> Schema:
    change = s.struct([("type", s.string()), ("id", s.string()), ("table", _table_schema())],
                      name="io.debezium.connector.schema.Change", version=1)
    package = "mariadb" if mariadb else "mysql"
    return s.struct(
        [("source", source_schema(mariadb)), ("ts_ms", s.int64()), ("databaseName", s.string(optional=True)),
         ("schemaName", s.string(optional=True)), ("ddl", s.string(optional=True)),
         ("tableChanges", s.array(change))],
        name=f"io.debezium.connector.{package}.SchemaChangeValue", version=1,
    )


def key_schema(mariadb: bool) -> Schema:
    package = "mariadb" if mariadb else "mysql"
    return s.struct([("databaseName", s.string())], name=f"io.debezium.connector.{package}.SchemaChangeKey",
                    version=1)


class SchemaChanges:
    """Builds the schema change events of DDL statements read from the binlog."""

    def __init__(self, config: MySqlConfig):
        self.config = config
        self.key_schema = key_schema(config.mariadb)
        self.value_schema = value_schema(config.mariadb)

    def messages(self, statement: SchemaStatement, snapshot: str = "false", row: int = 0) -> list[OutMessage]:
        """The schema change records of a statement (`snapshot`: the source block's marker, "true" for the
        statements a snapshot writes, which are not filtered; `row`: the source block's, the row number of the last
        captured row before it, as Debezium's offset context leaves it): one per table a DROP TABLE removes, else
        one."""
        if truncated_table(statement.ddl, statement.database) is not None:
            return []  # Debezium writes the table's truncate event only
        changes = affected_tables(statement.ddl, statement.database)
        if snapshot != "false":  # Debezium's snapshot writes the schema of every database, captured or not
            captured = changes
        else:
            captured = [c for c in changes if self.config.captures_table(c[1], c[2])]
            if changes and not captured:
                return []
            if not changes and not self.config.captures_database(statement.database):
                return []
        if captured and captured[0][0] == "DROP":
            prefix, suffix = _drop_parts(statement.ddl)
            return [self._message(statement, snapshot, [change], f"{prefix}{_quoted(change[1], change[2])}{suffix}",
                                  row) for change in captured]
        return [self._message(statement, snapshot, captured, statement.ddl, row)]

    def _message(self, statement: SchemaStatement, snapshot: str, captured: list[tuple[str, str, str]],
                 ddl: str, row: int) -> OutMessage:
        table_changes = list(self._describe(captured))
        database = captured[0][1] if captured else statement.database
        position = statement.start or statement.position
        source = {
            "version": VERSION, "connector": "mariadb" if self.config.mariadb else "mysql",
            "name": self.config.topic_prefix, "ts_ms": statement.ts_sec * 1000, "snapshot": snapshot,
            "db": database, "sequence": None, "ts_us": statement.ts_sec * 1_000_000,
            "ts_ns": statement.ts_sec * 1_000_000_000, "table": ",".join(c[2] for c in captured) or None,
            "server_id": statement.server_id, "gtid": statement.gtid, "file": position.file or "",
            "pos": position.pos or 0, "row": row, "thread": None, "query": None,
        }
        value = {"source": source, "ts_ms": int(time.time() * 1000), "databaseName": database, "schemaName": None,
                 "ddl": ddl, "tableChanges": table_changes}
        key = {"databaseName": database}
        return OutMessage(self.config.topic_prefix, self._encode(self.key_schema, key, self.config.key_schemas),
                          self._encode(self.value_schema, value, self.config.value_schemas))

    @staticmethod
    def _encode(schema: Schema, value: dict, schemas_enable: bool) -> bytes:
        return json_converter.envelope(schema, value, schemas_enable).encode()

    def _describe(self, changes: list[tuple[str, str, str]]) -> Iterator[dict]:
        if not changes:
            return
        connection = connect(self.config.connection)
        try:
            for kind, database, table in changes:
                ident = f'"{database}"."{table}"'
                if kind == "DROP":
                    yield {"type": "DROP", "id": ident, "table": None}
                    continue
                # None: gone again by now (a later DDL)
                yield {"type": kind, "id": ident, "table": _structure(connection, database, table)}
        finally:
            connection.close()


_DECLARED_LENGTH = re.compile(r"^\w+\((\d+)")  # int(11), varchar(20), decimal(10,3), datetime(6), year(4)
def _structure(connection, database: str, table: str) -> dict | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, CHARACTER_SET_NAME, CHARACTER_MAXIMUM_LENGTH, "
            "NUMERIC_SCALE, ORDINAL_POSITION, IS_NULLABLE, EXTRA, "
            "COLUMN_COMMENT, COLUMN_DEFAULT, COLUMN_KEY FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (database, table))
        rows = cursor.fetchall()
        if not rows:
            return None
        cursor.execute(
            "SELECT c.CHARACTER_SET_NAME, t.TABLE_COMMENT FROM information_schema.TABLES t JOIN "
            "information_schema.COLLATION_CHARACTER_SET_APPLICABILITY c ON c.COLLATION_NAME = t.TABLE_COLLATION "
            "WHERE t.TABLE_SCHEMA = %s AND t.TABLE_NAME = %s", (database, table))
        found = cursor.fetchone()
        cursor.execute(
            "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION", (database, table))
        primary = [r[0] for r in cursor.fetchall()]
    columns = []
    for (name, data_type, column_type, charset, char_length, scale, position, nullable, extra,
         comment, default, _key) in rows:
        data_type = data_type.lower()
        listed = data_type in ("enum", "set")
        declared = _DECLARED_LENGTH.match(column_type)
        length = char_length if listed else (int(declared.group(1)) if declared else None)
        enum_values = re.findall(r"'(?:[^']|'')*'", column_type) if listed else None
        auto_increment = "auto_increment" in (extra or "").lower()
        type_name = data_type.upper() + (" UNSIGNED" if "unsigned" in column_type.lower() else "")
        columns.append({
            "name": name, "jdbcType": _JDBC.get(data_type, 1111), "nativeType": None,
            "typeName": type_name, "typeExpression": type_name, "charsetName": charset,
            "length": int(length) if length is not None and length < 2**31 else None,
            "scale": int(scale) if scale is not None and data_type == "decimal" else None,
            "position": int(position), "optional": nullable == "YES", "autoIncremented": auto_increment,
            # Debezium's parser marks an AUTO_INCREMENT column generated too
            "generated": auto_increment or "generated" in (extra or "").lower() or "virtual" in (extra or "").lower(),
            "comment": comment or None, "defaultValueExpression": default_expression(default),
            "enumValues": enum_values,  # quoted, as declared
        })
    return {"defaultCharsetName": found[0] if found else None, "primaryKeyColumnNames": primary,
            "columns": columns, "comment": (found[1] or None) if found else None}
