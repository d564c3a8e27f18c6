"""PostgreSQL's side of incremental snapshots (the DBLog algorithm is the core's: connectors.core.snapshot.incremental).

Debezium's signal table (`signal.data.collection`, columns `id`, `type`, `data`) must be in the publication: the
watermarks and the signals come back through the slot. A window's low watermark is a row inserted there with type
`snapshot-window-open`, its high watermark another with type `snapshot-window-close` (ids `<uuid>-open` and
`<uuid>-close`, as Debezium writes them; `data` names our window). The chunk is read between the two in one
statement, which sees every transaction committed before the low watermark. Any other row inserted into the table
is a request (`execute-snapshot`, `stop-snapshot`, `pause-snapshot`, `resume-snapshot`):

```sql
INSERT INTO public.dbz_signal (id, type, data) VALUES ('ad-hoc-1', 'execute-snapshot',
  '{"data-collections": ["public.orders"], "type": "incremental",
    "additional-conditions": [{"data-collection": "public.orders", "filter": "status = ''A''"}]}');
```

Chunks are primary-key ranges (snapshot.plan_table); rows are keyed by their primary key columns' text, as the
stream has them. A table without a primary key is one chunk, read again whenever a change to it arrives in its
window (a row cannot be told apart from another there).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.string import TextLoader

from connectors import ConnectorError
from connectors.core.snapshot import signal_table
from connectors.core.snapshot.chunks import Chunk, Plan
from connectors.core.snapshot.incremental import EVERY_ROW, ROW, WATERMARK_CLOSE, StreamEvent, row_event
from connectors.postgres import envelope as env
from connectors.postgres import pgoutput as p
from connectors.postgres.config import PostgresConfig
from connectors.postgres.events import VERSION, TableFilter
from connectors.postgres.snapshot import plan_table, primary_key, range_clause, row_bytes

log = logging.getLogger(__name__)

def signal_table_problem(cursor, config: PostgresConfig, *, require_published: bool = True) -> str | None:
    """What keeps `signal.data.collection` from carrying signals and watermarks (None: nothing). Before a
    configuration is saved the table may not be published yet (`require_published=False`): a `filtered` or
    `all_tables` publication gets it when the connector starts."""
    name = config.signal_data_collection
    if not name:
        return ("incremental snapshots need signal.data.collection: the connector writes its watermarks there "
                "(a <schema>.<table> with columns id varchar, type varchar, data text, in the publication)")
    schema, table = name.split(".", 1)
    cursor.execute("""
        SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped""", (schema, table))
    columns = {row[0] for row in cursor.fetchall()}
    if not columns:
        return (f"signal.data.collection {name} does not exist; create it: CREATE TABLE {name} "
                "(id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data text)")
    missing = signal_table.missing_columns_problem(name, columns)
    if missing:
        return missing
    cursor.execute("SELECT 1 FROM pg_publication_tables WHERE pubname = %s AND schemaname = %s AND tablename = %s",
                   (config.publication_name, schema, table))
    if require_published and cursor.fetchone() is None:
        return (f"signal.data.collection {name} is not in publication {config.publication_name}: its watermarks "
                f"must come back through the slot (ALTER PUBLICATION {config.publication_name} ADD TABLE {name}, "
                "or publication.autocreate.mode=filtered/all_tables)")
    cursor.execute("SELECT has_table_privilege(%s::regclass, 'INSERT')", (_qualified(schema, table),))
    if not cursor.fetchone()[0]:
        return f"the connector's user may not INSERT into signal.data.collection {name} (GRANT INSERT ON {name} …)"
    return None


class PgWatermarks:
    """connectors.core.snapshot.incremental.WatermarkSource for one slot; `pipeline`: the core pipeline (its
    `builder`, a PgEventBuilder, gives the tables' columns and turns rows into events on the pipeline's thread)."""

    chunk_type = Chunk
    transient_errors = (psycopg.OperationalError, psycopg.InterfaceError)

    def __init__(self, config: PostgresConfig, connect: Callable[[], psycopg.Connection], pipeline):
        self.config = config
        self.connect = connect  # an autocommit connection
        self.pipeline = pipeline
        self.has_signals = config.signal_data_collection is not None
        self.signal = tuple(config.signal_data_collection.split(".", 1)) if self.has_signals else None
        self.captured = TableFilter(config)
        self._conn: psycopg.Connection | None = None
        self._relations: dict[int, tuple[str, tuple[str, ...]]] = {}  # relation id -> (namespace, column names)
        self._keys: dict[str, list[tuple[str, str]]] = {}
        self._key_positions: dict[int, tuple[int, ...]] = {}
        self._closed_at: tuple[int, int] = (0, 0)  # the last high watermark's (LSN, commit time µs)

    def sql(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = self.connect()
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()

    # -- requests -------------------------------------------------------------------------------------------------

    def require_signals(self) -> None:
        """Checked on a connection of its own: the API's thread calls it."""
        with self.connect() as conn, conn.cursor() as cursor:
            problem = signal_table_problem(cursor, self.config)
        if problem:
            raise ConnectorError(problem)

    parse_filter = staticmethod(signal_table.parse_sql_condition)

    # -- the stream -----------------------------------------------------------------------------------------------

    def classify(self, change: Any) -> StreamEvent | None:
        message = getattr(change, "message", None)
        kind = type(message)
        if kind is p.Relation:
            namespace = f"{message.namespace}.{message.name}"
            self._relations[message.relation_id] = (namespace, tuple(c.name for c in message.columns))
            self._key_positions.pop(message.relation_id, None)
            if (message.namespace, message.name) != self.signal:
                return StreamEvent(ROW, EVERY_ROW, namespace)  # its columns may have changed: read the chunk again
            return None
        if kind is p.Truncate:
            for relation_id in message.relation_ids:
                known = self._relations.get(relation_id)
                if known is not None:
                    return StreamEvent(ROW, EVERY_ROW, known[0])
            return None
        if kind not in (p.Insert, p.Update, p.Delete):
            return None
        known = self._relations.get(message.relation_id)
        if known is None:
            return None
        namespace, columns = known
        if tuple(namespace.split(".", 1)) == self.signal:
            return self._signal(change, message, columns) if kind is p.Insert else None
        positions = self._positions(message.relation_id, namespace, columns)
        if not positions:
            return StreamEvent(ROW, EVERY_ROW, namespace)
        new = message.new if kind is not p.Delete else None
        old = getattr(message, "old", None)
        return row_event(namespace, _pick(new, positions) if new is not None else None,
                         _pick(old, positions) if old is not None else None)

    def _signal(self, change, message: p.Insert, columns: tuple[str, ...]) -> StreamEvent | None:
        event = signal_table.signal_event(dict(zip(columns, message.new, strict=False)))
        if event.kind == WATERMARK_CLOSE:
            self._closed_at = (change.lsn, change.commit_ts_us)
        return event

    def _positions(self, relation_id: int, namespace: str, columns: tuple[str, ...]) -> tuple[int, ...]:
        positions = self._key_positions.get(relation_id)
        if positions is None:
            names = [name for name, _ in self._key(namespace)]
            positions = tuple(columns.index(n) for n in names) if all(n in columns for n in names) else ()
            self._key_positions[relation_id] = positions
        return positions

    def _key(self, namespace: str) -> list[tuple[str, str]]:
        key = self._keys.get(namespace)
        if key is None:
            with self.sql().cursor() as cursor:
                key = self._keys[namespace] = primary_key(cursor, namespace)
        return key

    def row_key(self, collection: str, key: Any) -> Any:
        return key

    # -- collections and chunks -----------------------------------------------------------------------------------

    def matching(self, patterns: list[re.Pattern]) -> list[str]:
        with self.sql().cursor() as cursor:
            cursor.execute("SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s ORDER BY 1, 2",
                           (self.config.publication_name,))
            tables = [f"{s}.{t}" for s, t in cursor.fetchall() if self.captured(s, t)]
        return [t for t in tables if any(c.fullmatch(t) for c in patterns)]

    def estimated_rows(self, collection: str) -> int | None:
        try:
            with self.sql().cursor() as cursor:
                cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                               (_qualified(*collection.split(".", 1)),))
                row = cursor.fetchone()
        except psycopg.Error:
            return None
        return max(0, int(row[0])) if row else None

    def row_bytes(self, collection: str) -> int:
        with self.sql().cursor() as cursor:
            return row_bytes(cursor, collection)

    def plan(self, collection: str, chunk_size: int, max_chunks: int) -> Plan:
        self._keys.pop(collection, None)  # the key as it is now
        key = self._key(collection)
        with self.sql().cursor() as cursor:
            plan = plan_table(cursor, collection, chunk_size, key)
            if len(plan.bounds) - 1 > max_chunks:  # bigger chunks keep the progress in the offset record small
                plan = plan_table(cursor, collection, -(-(len(plan.bounds) - 1) * chunk_size // max_chunks), key)
        return plan

    def read_window(self, window_id: str, chunk: Chunk, filter: Any, snapshot_id: str,  # noqa: A002
                    read: Callable[[dict], None]) -> None:
        conn = self.sql()
        schema, name = chunk.namespace.split(".", 1)
        table = self._table(conn, schema, name)
        self.delete_stale_watermarks(window_id[:-32])  # the windows before this one (its id ends in 32 hex digits)
        chunk_id = uuid.uuid4().hex
        data = signal_table.window_data(window_id, snapshot_id, chunk)
        self._watermark(conn, f"{chunk_id}-open", signal_table.WINDOW_OPEN, data)
        rows: dict = {}
        if table is not None:
            key = self._key(chunk.namespace)
            wanted = table.rows.positions  # a column left out (column.exclude.list, unmapped type) is not read
            columns = [sql.Identifier(c.name) if i in wanted else sql.SQL("NULL") for i, c in enumerate(table.columns)]
            columns += [sql.SQL("{}::text AS {}").format(sql.Identifier(k), sql.Identifier(f"cdc_k{i}"))
                        for i, (k, _) in enumerate(key)]
            where, params = range_clause(key if chunk.lower is not None else [], chunk,
                                         sql.SQL(filter) if filter else None)
            query = sql.SQL("SELECT {} FROM {}.{}").format(sql.SQL(", ").join(columns), sql.Identifier(schema),
                                                           sql.Identifier(name)) + where
            width, keyed = len(table.columns), bool(key)
            try:
                with conn.transaction():  # one statement: sees everything committed before the low watermark
                    with conn.cursor(name=f"incr_{chunk_id}") as cursor:
                        for column in table.columns:
                            cursor.adapters.register_loader(column.type.result_oid, TextLoader)
                        cursor.itersize = self.config.snapshot_fetch_size
                        cursor.execute(query, params)
                        for index, row in enumerate(cursor):
                            rows[tuple(row[width:]) if keyed else index] = row[:width]
            except (psycopg.ProgrammingError, psycopg.DataError) as error:
                if not filter:
                    raise
                # the request's condition is wrong: nothing is read (the next chunks say so too)
                log.error("incremental snapshot of %s: its condition %r fails: %s", chunk.namespace, filter,
                          str(error).strip())
                rows = {}
        read(rows)
        self._watermark(conn, f"{chunk_id}-close", signal_table.WINDOW_CLOSE, data)

    def _table(self, conn, schema: str, name: str):
        builder = self.pipeline.builder
        with conn.cursor() as cursor:
            cursor.execute("SELECT %s::regclass::oid", (_qualified(schema, name),))
            relation_id = cursor.fetchone()[0]
        table = builder.tables.get(relation_id)
        return table if table is not None else builder.table(relation_id, schema, name)

    def _watermark(self, conn, row_id: str, kind: str, data: str) -> None:
        assert self.signal is not None
        conn.execute(sql.SQL("INSERT INTO {}.{} (id, type, data) VALUES (%s, %s, %s)").format(
            sql.Identifier(self.signal[0]), sql.Identifier(self.signal[1])), (row_id, kind, data))

    def emit(self, chunk: Chunk, rows: list, builder) -> list:
        schema, name = chunk.namespace.split(".", 1)
        table = next((t for t in builder.tables.values() if t is not None and (t.schema, t.name) == (schema, name)),
                     None)
        if table is None:
            table = self._table(self.sql(), schema, name)
        if table is None:
            return []
        lsn, commit_ts_us = self._closed_at
        source = env.SourceInfo(VERSION, self.config.topic_prefix, self.config.dbname, schema, name, commit_ts_us,
                                "incremental", None, lsn, None)
        messages: list = []
        builder.snapshot_rows(table, rows, 0, len(rows), source, messages)  # in one call, as a snapshot chunk's
        return messages

    def delete_stale_watermarks(self, prefix: str) -> None:
        assert self.signal is not None
        try:
            self.sql().execute(sql.SQL(
                "DELETE FROM {}.{} WHERE type IN (%s, %s) AND starts_with(data, %s)").format(
                    sql.Identifier(self.signal[0]), sql.Identifier(self.signal[1])),
                (signal_table.WINDOW_OPEN, signal_table.WINDOW_CLOSE, signal_table.windows_data_prefix(prefix)))
        except psycopg.Error as error:
            log.warning("could not delete stale watermarks from %s: %s", self.config.signal_data_collection,
                        str(error).strip())

    def describe_bound(self, value: Any) -> str:
        return json.dumps(value)


def _pick(values: tuple, positions: tuple[int, ...]) -> tuple | None:
    key = tuple(values[i] for i in positions)
    return None if any(v is None or v is p.UNCHANGED_TOAST for v in key) else key


def _qualified(schema: str, name: str) -> str:
    return '"' + schema.replace('"', '""') + '"."' + name.replace('"', '""') + '"'
