"""The initial snapshot of a MySQL / MariaDB server for the core's coordinator: one consistent read view, its
binlog position, tables split into primary-key ranges.

`capture_start` opens `START TRANSACTION WITH CONSISTENT SNAPSHOT` and reads the binlog position it matches
(connectors.mysql.snapshot); the plan and every chunk are read in that same transaction, so the rows are the
tables' state exactly at that position and streaming from it adds every later change once: no gap, no
duplicate. A view lives in one connection, so chunks are read one at a time on it (`snapshot.max.threads` gains
nothing here). Chunks of integer keys may instead be read by chunk tasks, each in a view of its own
(connectors/mysql/chunk_tasks.py; the stream then drops what they hold, connectors/mysql/overlap.py). A snapshot
resumed after a restart opens a new view for the chunks the pipeline still reads, later than the stream's start:
like a task's, each such chunk's read position is kept (`where_read`) and the stream drops what the chunk holds.
Keys with string columns are compared by the server (the stream asks it which chunk holds a key). Chunk keys never
have a nullable column (message.key.columns naming one: the primary key's ranges, or the table whole).
"""

from __future__ import annotations

import threading
import time
import weakref

from pymysqlreplication.constants import FIELD_TYPE

from connectors import ConnectorError
from connectors.core.snapshot.chunks import Chunk, Plan, snapshot_marker
from connectors.core.snapshot.executors import ChunkInterrupted
from connectors.core.snapshot.progress import SnapshotStart
from connectors.mysql import catalog, text_rows
from connectors.mysql.binlog import BinlogPosition, SchemaStatement, TableSchema
from connectors.mysql.config import MySqlConfig
from connectors.mysql.connection import connect
from connectors.mysql.envelope import SourceInfo
from connectors.mysql.overlap import SERVER_ORDER
from connectors.mysql.position import MySqlPosition
from connectors.mysql.snapshot import SnapshotPosition, start_consistent_snapshot

_INTEGERS = {FIELD_TYPE.TINY, FIELD_TYPE.SHORT, FIELD_TYPE.INT24, FIELD_TYPE.LONG, FIELD_TYPE.LONGLONG}
_CHUNKABLE = {*_INTEGERS, FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING}


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _close(connection) -> None:
    try:
        connection.close()
    except Exception:  # noqa: BLE001, S110 - already gone
        pass


def chunk_key(config: MySqlConfig, schema: TableSchema, named_keys: bool = True) -> tuple[str, ...]:
    """The columns a table's chunks are ranges of: message.key.columns (unless not `named_keys`) when they can be,
    else the primary key; () when neither can: the table is then one chunk. A nullable column cannot: a range
    `(key) >= (lower)` holds no row whose key has a NULL (a NULL lower bound, where ORDER BY puts NULLs, none at
    all)."""
    by_name = {c.name: c for c in schema.columns}

    def usable(key) -> bool:
        return bool(key) and all((by_name[k].data_type == "uuid" or (by_name[k].type_code in _CHUNKABLE
                                                                     and by_name[k].charset != "binary"))
                                 and not by_name[k].nullable for k in key)

    named = config.column_rules.key_of(f"{schema.database}.{schema.table}", [c.name for c in schema.columns]) \
        if named_keys else None
    for key in (named, schema.primary_key):
        if usable(key):
            return tuple(key)
    return ()


def comparable_key(config: MySqlConfig, schema: TableSchema) -> tuple[str, ...]:
    """The chunk key when Python orders its values exactly as the server does (integer columns, NOT NULL), else
    (): only such chunks may be read in views of their own (connectors/mysql/overlap.py)."""
    key = chunk_key(config, schema)
    by_name = {c.name: c for c in schema.columns}
    if key and all(by_name[k].type_code in _INTEGERS and not by_name[k].nullable for k in key):
        return key
    return ()


def plan_table(cursor, schema: TableSchema, key: tuple[str, ...], chunk_size: int) -> Plan:
    """Ranges of `key` of `chunk_size` rows (boundaries found by index seeks); no key: the whole table."""
    table = f"{quote(schema.database)}.{quote(schema.table)}"
    cursor.execute(f"SELECT COUNT(*) FROM {table}")  # noqa: S608 - quoted identifiers
    count = cursor.fetchone()[0]
    if not count:
        return Plan([], 0, "empty")
    if not key:
        return Plan([None, None], count, "whole table (no chunkable primary key)")
    columns = ", ".join(quote(k) for k in key)
    cursor.execute(f"SELECT {columns} FROM {table} ORDER BY {columns} LIMIT 1")  # noqa: S608
    bounds = [list(cursor.fetchone())]
    tuple_sql = f"({columns})"
    marks = "(" + ", ".join(["%s"] * len(key)) + ")"
    while True:
        cursor.execute(f"SELECT {columns} FROM {table} WHERE {tuple_sql} > {marks} "  # noqa: S608
                       f"ORDER BY {columns} LIMIT 1 OFFSET {chunk_size - 1}", bounds[-1])
        row = cursor.fetchone()
        if row is None:
            break
        bounds.append(list(row))
    order = ", ".join(f"{quote(k)} DESC" for k in key)
    cursor.execute(f"SELECT {columns} FROM {table} ORDER BY {order} LIMIT 1")  # noqa: S608
    bounds.append(list(cursor.fetchone()))
    return Plan(bounds, count, f"primary key ({', '.join(key)}) ranges")


ROW_SAMPLE = 16  # the first rows whose values row_bytes measures


def row_bytes(cursor, schema: TableSchema) -> int:
    """About how many bytes a row of the table holds (0: unknown): the larger of the server's average row length
    (InnoDB's statistics, off-page values included) and the values of its first ROW_SAMPLE rows."""
    cursor.execute("SELECT AVG_ROW_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                   (schema.database, schema.table))
    row = cursor.fetchone()
    stored = int(row[0] or 0) if row else 0
    if not schema.columns:
        return stored
    table = f"{quote(schema.database)}.{quote(schema.table)}"
    lengths = " + ".join(f"COALESCE(LENGTH({quote(column.name)}), 0)" for column in schema.columns)
    cursor.execute(f"SELECT COALESCE(AVG(n), 0) FROM (SELECT {lengths} AS n FROM {table} LIMIT {ROW_SAMPLE}) s")  # noqa: S608
    return max(stored, int(cursor.fetchone()[0]))


def chunk_select(schema: TableSchema, key: tuple[str, ...], chunk: Chunk, condition: str | None = None,
                 extra: tuple[str, ...] = ()) -> tuple[str, list]:
    """The SELECT of a chunk's rows (every column, then `extra` expressions), ANDed with `condition`."""
    table = f"{quote(schema.database)}.{quote(schema.table)}"
    names = [quote(c.name) for c in schema.columns]
    sql = f"SELECT {', '.join([*names, *extra])} FROM {table}"  # noqa: S608
    params: list = []
    where = []
    if key:
        columns = "(" + ", ".join(quote(k) for k in key) + ")"
        marks = "(" + ", ".join(["%s"] * len(key)) + ")"
        where.append(f"{columns} >= {marks} AND {columns} {'<=' if chunk.upper_inclusive else '<'} {marks}")
        params = [*chunk.lower, *chunk.upper]
    if condition:
        where.append(f"({condition})")
    if where:
        sql += " WHERE " + " AND ".join(where)
    if key:
        sql += " ORDER BY " + ", ".join(quote(k) for k in key)
    return sql, params


class MySqlSnapshotReader:
    def __init__(self, config: MySqlConfig, stop: threading.Event | None = None):
        self.config = config
        self._stop = stop  # the pipeline's: ends a wait for MySQL's global read lock
        self._lock = threading.Lock()
        self._connection = None
        self._position: SnapshotPosition | None = None
        self._schemas: dict[str, TableSchema] = {}
        # whether the view open now is the snapshot's own, at the stream's start (capture_start's); a resumed
        # snapshot's view opens later, and the stream must then drop what its chunks already hold
        self._at_stream_start = False
        self._reads: dict[int, dict] = {}  # chunk number -> where it was read (a later view's chunks)

    # -- the read view ---------------------------------------------------------------------------------------

    def _open(self) -> SnapshotPosition:
        connection = connect(self.config.connection)
        try:
            with connection.cursor() as cursor:
                cursor.execute("SET SESSION time_zone = '+00:00'")  # TIMESTAMP values in UTC, as the binlog has them
            position = start_consistent_snapshot(connection, self.config.snapshot_locking_mode,
                                                 self.config.snapshot_lock_timeout_ms / 1000, self._stop)
        except BaseException:
            _close(connection)
            raise
        self._connection, self._position = connection, position
        weakref.finalize(self, _close, connection)
        return position

    def _view(self):
        if self._connection is None:
            self._open()
        return self._connection

    def comparable_key(self, collection: str) -> tuple[str, ...]:
        """`comparable_key` of a table as this reader's view sees it."""
        with self._lock:
            return comparable_key(self.config, self._schema(collection))

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                _close(self._connection)
                self._connection = None

    # -- SnapshotReader ----------------------------------------------------------------------------------------

    def capture_start(self) -> SnapshotStart:
        with self._lock:
            position = self._open()
            self._at_stream_start = True
        read_at = int(time.time() * 1000)
        binlog = BinlogPosition(file=position.file, pos=position.position, gtids=position.gtids or None)
        return SnapshotStart(MySqlPosition(binlog, read_at // 1000), read_at,
                             {"file": position.file, "pos": position.position, "gtids": position.gtids,
                              "read_at": read_at})

    def collections(self) -> list[str]:
        with self._lock:
            tables = catalog.base_tables(self._view())
        return [f"{db}.{table}" for db, table in tables if self.config.captures_table(db, table)]

    def opening_messages(self, builder) -> list:
        """The schema change records Debezium's snapshot writes before any row, read in the snapshot's view: the
        server's character set, `DROP TABLE IF EXISTS` of every table, then per database `DROP DATABASE IF EXISTS`,
        `CREATE DATABASE`, `USE` and each table's `SHOW CREATE TABLE`; every database but the system ones, captured
        or not, as Debezium's (none when include.schema.changes is off)."""
        schema_changes = builder.schema_changes
        if schema_changes is None:
            return []
        with self._lock:
            position = self._position
            view = self._view()
            tables = catalog.base_tables(view)
            with view.cursor() as cursor:
                cursor.execute("SELECT @@character_set_server, @@collation_server")
                charset, collation = cursor.fetchone()
                cursor.execute(
                    "SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM "
                    "information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN "
                    "('mysql', 'information_schema', 'performance_schema', 'sys') ORDER BY SCHEMA_NAME")
                databases = cursor.fetchall()
                creates = {}
                for database, table in tables:
                    cursor.execute(f"SHOW CREATE TABLE {quote(database)}.{quote(table)}")
                    creates.setdefault(database, []).append(cursor.fetchone()[1])
        statements = [("", f"SET character_set_server={charset}, collation_server={collation}")]
        statements += [(database, f"DROP TABLE IF EXISTS {quote(database)}.{quote(table)}")
                       for database, table in tables]
        for database, db_charset, db_collation in databases:
            statements += [(database, f"DROP DATABASE IF EXISTS {quote(database)}"),
                           (database, f"CREATE DATABASE {quote(database)} CHARSET {db_charset} COLLATE {db_collation}"),
                           (database, f"USE {quote(database)}"),
                           *((database, ddl) for ddl in creates.get(database, ()))]
        binlog = BinlogPosition(file=position.file, pos=position.position, gtids=position.gtids or None)
        now = int(time.time())
        return [message for database, ddl in statements
                for message in schema_changes.messages(SchemaStatement(database, ddl, None, binlog, now, 0), "true")]

    def _schema(self, collection: str) -> TableSchema:
        schema = self._schemas.get(collection)
        if schema is None:
            database, _, table = collection.partition(".")
            schema = catalog.table_schema(self._view(), database, table)
            self._schemas[collection] = schema
        return schema

    def _key(self, schema: TableSchema) -> tuple[str, ...]:
        return chunk_key(self.config, schema)

    def plan(self, collection: str, chunk_size: int) -> Plan:
        with self._lock:
            schema = self._schema(collection)
            with self._view().cursor() as cursor:
                return plan_table(cursor, schema, self._key(schema), chunk_size)

    def row_bytes(self, collection: str) -> int:
        with self._lock:
            schema = self._schema(collection)
            with self._view().cursor() as cursor:
                return row_bytes(cursor, schema)

    def read_chunk(self, builder, chunk: Chunk, read_at, filter, mark_last: bool, stop):  # noqa: A002
        with self._lock:
            schema = self._schema(chunk.namespace)
            key = self._key(schema) if chunk.lower is not None else ()
            sql, params = chunk_select(schema, key, chunk)
            connection = self._view()
            position = self._position
            rows = text_rows.select(connection, sql, params)
            if not self._at_stream_start:
                self._note_read(schema, chunk, position)
            if mark_last:
                connection.commit()
                _close(connection)
                self._connection = None
        events = builder.table_events(schema)
        messages: list = []
        names = [c.name for c in schema.columns]
        # columns whose values pymysql gives in another form than the binlog reader (binlog_form changes them)
        converted = [(i, c) for i, c in enumerate(schema.columns) if catalog.needs_binlog_form(c)]
        # a chunk's events differ only in their rows and `source.snapshot` (its first and last rows' markers): the
        # rest of each is written once per marker (TableEvents.streamed_parts); the chunk's events share `ts_ms`
        now = time.time_ns()
        parts: dict[str, tuple[str, str, str, str]] = {}
        last = len(rows) - 1
        for number, row in enumerate(rows):
            if stop is not None and number % 1024 == 0 and stop.is_set():
                raise ChunkInterrupted(chunk.label)
            after = dict(zip(names, row, strict=True))
            for i, column in converted:
                after[column.name] = catalog.binlog_form(column, row[i])
            marker = snapshot_marker(chunk, mark_last, number == 0, number == last) \
                if number == 0 or number == last else "true"
            made = parts.get(marker)
            if made is None:
                source = SourceInfo(schema.database, schema.table, int(read_at or 0), 0, position.file,
                                    position.position, 0, marker)
                made = parts[marker] = events.streamed_parts("r", source, now)
            events.append_streamed(messages, made, "r", None, after, 0)
        return messages, len(rows)

    def _note_read(self, schema: TableSchema, chunk: Chunk, position: SnapshotPosition) -> None:
        """Keeps where a chunk was read in a view later than the stream's start, as a chunk task's marker does
        (connectors/mysql/overlap.py): for a key of NOT NULL columns; one with a string column is compared by the
        server (order "server"). Otherwise the stream brings that chunk's rows' changes since its start after their
        reads again (docs/mariadb.md)."""
        if chunk.lower is None:
            return
        read = {"file": position.file, "pos": position.position, "gtids": position.gtids}
        key = comparable_key(self.config, schema)
        if key:
            self._reads[chunk.number] = {**read, "key": list(key)}
            return
        key = chunk_key(self.config, schema)  # never nullable
        if key:
            self._reads[chunk.number] = {**read, "key": list(key), "order": SERVER_ORDER}

    def resume(self, progress) -> None:
        """A resumed snapshot opens its new view when it reads its first chunk (`_view`), which notes where."""

    def where_read(self, chunk: Chunk) -> dict | None:
        with self._lock:
            return self._reads.pop(chunk.number, None)

    def chunk_failure(self, error: BaseException, chunk: Chunk, remote: bool) -> BaseException | None:
        if isinstance(error, ConnectorError):
            return error
        return ConnectorError(f"snapshot of {chunk.label} failed: {error}")
