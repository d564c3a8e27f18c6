"""MySQL / MariaDB's side of incremental snapshots (the DBLog algorithm is the core's:
connectors.core.snapshot.incremental).

Debezium's signal table (`signal.data.collection`, `<database>.<table>` with columns `id`, `type`, `data`) carries
the watermarks and the signals through the binlog: a window's low watermark is a row inserted there with type
`snapshot-window-open`, its high watermark another with type `snapshot-window-close` (ids `<uuid>-open` and
`<uuid>-close`, as Debezium writes them; `data` names our window). The chunk is read between the two in one
autocommit statement, whose consistent read sees every transaction committed before the low watermark. Any other
row inserted there is a request (`execute-snapshot`, `stop-snapshot`, `pause-snapshot`, `resume-snapshot`).

Chunks are primary-key ranges (snapshot_reader.plan_table); rows are keyed by their primary key values in the
binlog's value forms (catalog.binlog_form), as the stream has them. A table without a primary key is one chunk,
read again whenever a change to it arrives in its window; so is any chunk when DDL runs on its database.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

import pymysql

from connectors import ConnectorError, SourceUnreachable
from connectors.core.snapshot import signal_table
from connectors.core.snapshot.chunks import Chunk, Plan
from connectors.core.snapshot.incremental import EVERY_ROW, ROW, WATERMARK_CLOSE, StreamEvent, row_event
from connectors.mysql import catalog, text_rows
from connectors.mysql.binlog import RowChange, SchemaStatement, TableSchema, row_change
from connectors.mysql.config import MySqlConfig
from connectors.mysql.connection import ConnectionSettings, connect
from connectors.mysql.envelope import SourceInfo
from connectors.mysql.snapshot_reader import chunk_key, chunk_select, plan_table, quote, row_bytes

log = logging.getLogger(__name__)

def signal_table_problem(cursor, config: MySqlConfig) -> str | None:
    """What keeps `signal.data.collection` from carrying signals and watermarks (None: nothing)."""
    name = config.signal_data_collection
    if not name:
        return ("incremental snapshots need signal.data.collection: the connector writes its watermarks there "
                "(a <database>.<table> with columns id varchar, type varchar, data text)")
    database, _, table = name.partition(".")
    cursor.execute("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                   (database, table))
    columns = {row[0].lower() for row in cursor.fetchall()}
    if not columns:
        return (f"signal.data.collection {name} does not exist (or the connector's user cannot see it); create it: "
                f"CREATE TABLE {name} (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT)")
    missing = signal_table.missing_columns_problem(name, columns)
    if missing:
        return missing
    return None


def check_signal_table(config: MySqlConfig, settings: ConnectionSettings | None = None) -> str | None:
    """`signal_table_problem` on a connection of its own, with `settings` (default: the config's) (None when there
    is no signal table to check)."""
    if not config.signal_data_collection:
        return None
    connection = connect(settings or config.connection)
    try:
        with connection.cursor() as cursor:
            return signal_table_problem(cursor, config)
    finally:
        connection.close()


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes | bytearray) else value


class MySqlWatermarks:
    """connectors.core.snapshot.incremental.WatermarkSource for one server; `pipeline`: the core pipeline (its
    `builder` turns the rows into events on the pipeline's thread)."""

    chunk_type = Chunk
    transient_errors = (SourceUnreachable, pymysql.err.OperationalError, pymysql.err.InterfaceError)

    def __init__(self, config: MySqlConfig, pipeline):
        self.config = config
        self.pipeline = pipeline
        signal = config.signal_data_collection
        self.has_signals = signal is not None
        self.signal = tuple(signal.split(".", 1)) if signal else None
        self._conn = None
        self._schemas: dict[str, TableSchema] = {}
        self._reading: str | None = None  # the namespace of the window's chunk
        self._closed_at: RowChange | None = None  # the last high watermark

    def sql(self):
        if self._conn is None or not self._conn.open:
            self._conn = connect(self.config.connection)
            with self._conn.cursor() as cursor:
                cursor.execute("SET SESSION time_zone = '+00:00'")  # TIMESTAMP values in UTC, as the binlog has them
        return self._conn

    def close(self) -> None:
        if self._conn is not None and self._conn.open:
            self._conn.close()

    # -- requests -------------------------------------------------------------------------------------------------

    def require_signals(self) -> None:
        """Checked on a connection of its own: the API's thread calls it."""
        conn = connect(self.config.connection)
        try:
            with conn.cursor() as cursor:
                problem = signal_table_problem(cursor, self.config)
        finally:
            conn.close()
        if problem:
            raise ConnectorError(problem)

    parse_filter = staticmethod(signal_table.parse_sql_condition)

    # -- the stream -----------------------------------------------------------------------------------------------

    def classify(self, change: Any) -> StreamEvent | None:
        change = row_change(change)
        kind = type(change)
        if kind is SchemaStatement:
            reading = self._reading
            self._schemas.clear()  # the next read takes the tables as they are now
            if reading is not None and (not change.database or reading.split(".", 1)[0] == change.database):
                return StreamEvent(ROW, EVERY_ROW, reading)  # DDL (a truncate, a new column) on its database
            return None
        if kind is not RowChange:
            return None
        schema = change.schema
        if (schema.database, schema.table) == self.signal:
            return self._signal(change) if change.op == "c" else None
        namespace = f"{schema.database}.{schema.table}"
        key_names = schema.primary_key
        if not key_names:
            return StreamEvent(ROW, EVERY_ROW, namespace)
        return row_event(namespace, _pick(change.after, key_names), _pick(change.before, key_names))

    def _signal(self, change: RowChange) -> StreamEvent:
        event = signal_table.signal_event({k.lower(): _text(v) for k, v in (change.after or {}).items()})
        if event.kind == WATERMARK_CLOSE:
            self._closed_at = change
        return event

    def row_key(self, collection: str, key: Any) -> Any:
        return key

    # -- collections and chunks -----------------------------------------------------------------------------------

    def matching(self, patterns: list[re.Pattern]) -> list[str]:
        tables = [f"{db}.{table}" for db, table in catalog.base_tables(self.sql())
                  if self.config.captures_table(db, table)]
        return [t for t in tables if any(c.fullmatch(t) for c in patterns)]

    def _schema(self, collection: str, fresh: bool = False) -> TableSchema:
        schema = None if fresh else self._schemas.get(collection)
        if schema is None:
            database, _, table = collection.partition(".")
            schema = self._schemas[collection] = catalog.table_schema(self.sql(), database, table)
        return schema

    def estimated_rows(self, collection: str) -> int | None:
        database, _, table = collection.partition(".")
        try:
            with self.sql().cursor() as cursor:
                cursor.execute("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                               "AND TABLE_NAME = %s", (database, table))
                row = cursor.fetchone()
        except pymysql.err.MySQLError:
            return None
        return int(row[0] or 0) if row else None

    def row_bytes(self, collection: str) -> int:
        schema = self._schema(collection, fresh=True)
        with self.sql().cursor() as cursor:
            return row_bytes(cursor, schema)

    def plan(self, collection: str, chunk_size: int, max_chunks: int) -> Plan:
        schema = self._schema(collection, fresh=True)  # the table as it is now
        key = chunk_key(self.config, schema, named_keys=False)
        with self.sql().cursor() as cursor:
            plan = plan_table(cursor, schema, key, chunk_size)
            if len(plan.bounds) - 1 > max_chunks:  # bigger chunks keep the progress in the offset record small
                plan = plan_table(cursor, schema, key, -(-(len(plan.bounds) - 1) * chunk_size // max_chunks))
        return plan

    def read_window(self, window_id: str, chunk: Chunk, filter: Any, snapshot_id: str,  # noqa: A002
                    read: Callable[[dict], None]) -> None:
        self.delete_stale_watermarks(window_id[:-32])  # the windows before this one (its id ends in 32 hex digits)
        schema = self._schema(chunk.namespace)
        key = chunk_key(self.config, schema, named_keys=False) if chunk.lower is not None else ()
        identity = schema.primary_key
        chunk_id = uuid.uuid4().hex
        data = signal_table.window_data(window_id, snapshot_id, chunk)
        conn = self.sql()
        self._watermark(conn, f"{chunk_id}-open", signal_table.WINDOW_OPEN, data)
        self._reading = chunk.namespace
        query, params = chunk_select(schema, key, chunk, filter)
        rows: dict = {}
        try:
            fetched = text_rows.select(conn, query, params)
        except (pymysql.err.ProgrammingError, pymysql.err.InternalError, pymysql.err.DataError) as error:
            if not filter:
                raise
            log.error("incremental snapshot of %s: its condition %r fails: %s", chunk.namespace, filter, error)
            fetched = ()
        columns = schema.columns
        for index, values in enumerate(fetched):
            row = {c.name: catalog.binlog_form(c, v) for c, v in zip(columns, values, strict=True)}
            rows[tuple(row[k] for k in identity) if identity else index] = row
        read(rows)
        self._watermark(conn, f"{chunk_id}-close", signal_table.WINDOW_CLOSE, data)

    def _watermark(self, conn, row_id: str, kind: str, data: str) -> None:
        assert self.signal is not None
        try:
            with conn.cursor() as cursor:
                cursor.execute(f"INSERT INTO {quote(self.signal[0])}.{quote(self.signal[1])} "  # noqa: S608
                               "(id, type, data) VALUES (%s, %s, %s)", (row_id, kind, data))
        except pymysql.err.OperationalError as error:
            if error.args and error.args[0] in (1142, 1143):  # INSERT command denied
                raise ConnectorError(
                    f"incremental snapshots write their watermarks into signal.data.collection "
                    f"{self.config.signal_data_collection}, but the connector's user may not: {error.args[1]} "
                    f"(GRANT INSERT, DELETE ON {self.config.signal_data_collection} TO the connector's user)"
                ) from None
            raise

    def emit(self, chunk: Chunk, rows: list, builder) -> list:
        self._reading = None
        schema = self._schema(chunk.namespace)
        close = self._closed_at
        ts_ms, server_id = (close.ts_sec * 1000, close.server_id) if close is not None else (0, 0)
        file, pos = (close.file, close.pos) if close is not None else ("", 0)
        source = SourceInfo(schema.database, schema.table, ts_ms, server_id, file, pos, 0, "incremental")
        events = builder.table_events(schema)
        messages: list = []
        for row in rows:
            messages.extend(events.messages("r", None, row, source))
        return messages

    def delete_stale_watermarks(self, prefix: str) -> None:
        assert self.signal is not None
        stale = signal_table.windows_data_prefix(prefix)
        try:
            with self.sql().cursor() as cursor:
                cursor.execute(f"DELETE FROM {quote(self.signal[0])}.{quote(self.signal[1])} "  # noqa: S608
                               "WHERE type IN (%s, %s) AND LEFT(data, %s) = %s",
                               (signal_table.WINDOW_OPEN, signal_table.WINDOW_CLOSE, len(stale), stale))
        except pymysql.err.MySQLError as error:
            log.warning("could not delete stale watermarks from %s: %s", self.config.signal_data_collection, error)

    def describe_bound(self, value: Any) -> str:
        return json.dumps(value, default=str)


def _pick(row: dict | None, names: tuple[str, ...]) -> tuple | None:
    if row is None:
        return None
    key = tuple(row.get(n) for n in names)
    return None if any(v is None for v in key) else key
