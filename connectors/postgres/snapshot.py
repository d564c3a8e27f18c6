"""The initial snapshot of a PostgreSQL database, consistent with its slot.

`capture_start` creates the slot with an exported snapshot (`CREATE_REPLICATION_SLOT … EXPORT_SNAPSHOT`); every
table is then read in that snapshot (`SET TRANSACTION SNAPSHOT`), from any number of threads, while the
replication connection stays idle; streaming then starts on that same connection from the slot's consistent point.
A change committed while the snapshot is read is after that point: it comes through the stream, never twice.

Tables are read in primary-key ranges of about `snapshot.chunk.size` rows (chunks, planned in the same snapshot),
`snapshot.max.threads` at a time, each thread in its own session that imported the snapshot; a table without a
primary key is one chunk. Rows come through a server-side cursor, `snapshot.fetch.size` per round trip.
An exported snapshot dies with its connection, so a snapshot interrupted by a crash or a stop resumes in a new
one: its plan, the chunks already committed and its slot (never acknowledged while the snapshot runs, so it still
starts at the consistent point) are kept, and the chunks still to read are read in the snapshot a temporary slot
exports (`resume`), whose consistent point says which transactions it holds: the stream drops those changes of
the rows these chunks hold (connectors/postgres/overlap.py; every table with a primary key). The committed chunks
are not read again (Debezium starts such a snapshot over).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.string import TextLoader

from connectors import ConnectorError
from connectors.core.snapshot.chunks import Chunk, Plan, snapshot_marker
from connectors.core.snapshot.executors import ChunkInterrupted, ChunkTask
from connectors.core.snapshot.progress import SnapshotProgress, SnapshotStart
from connectors.kafka.sink import OutMessage
from connectors.postgres import envelope as env
from connectors.postgres.events import VERSION, PgEventBuilder, TableFilter
from connectors.postgres.offsets import before
from connectors.postgres.overlap import COMPARABLE_TYPES, SERVER_ORDER, overlap_of
from connectors.postgres.pgoutput import lsn_from_text
from connectors.postgres.position import Position
from connectors.postgres.replication import SESSION_SETTINGS


@dataclass(frozen=True)
class ReadPoint:
    """What every chunk of a snapshot is read at, besides its bounds (a chunk task's `read_at`): the snapshot's
    time (`source.ts_ms` of its events), the slot's consistent point (their `source.lsn`), the name of the
    exported snapshot the chunks are read in (None: a resumed snapshot that could not export one reads in fresh
    REPEATABLE READ transactions) and, for a resumed snapshot's export, its temporary slot's consistent point
    (`view_lsn`, 0 otherwise): what the stream from `lsn` must drop of the rows read there; and the snapshot
    transaction's id (`source.txId` of its events, as Debezium's: the pipeline's reading transaction's xid)."""

    ts_usec: int
    lsn: int
    snapshot: str | None = None
    view_lsn: int = 0
    tx_id: int | None = None

    def to_json(self) -> dict:
        return {"ts_usec": self.ts_usec, "lsn": self.lsn, "snapshot": self.snapshot, "view_lsn": self.view_lsn,
                "tx_id": self.tx_id}

    @classmethod
    def from_json(cls, value: dict) -> ReadPoint:
        tx_id = value.get("tx_id")
        return cls(int(value["ts_usec"]), int(value["lsn"]), value.get("snapshot"), int(value.get("view_lsn") or 0),
                   None if tx_id is None else int(tx_id))


@dataclass
class PgSnapshotProgress(SnapshotProgress):
    """Keeps the slot's consistent point (`lsn`) and the snapshot's time (`ts_usec`) as its start. The exported
    snapshot's name lives only in the run that exported it (never in the offset): a plan loaded from the offset is
    a resumed snapshot, whose exported snapshot died with its connection (`resume` exports another)."""

    lsn: int = 0
    ts_usec: int = 0
    exported_snapshot: str | None = None
    view_lsn: int = 0  # a resumed snapshot's export's consistent point
    tx_id: int | None = None  # the snapshot transaction's xid

    def set_start(self, start: SnapshotStart) -> None:
        self.lsn = start.position.lsn_proc
        self.ts_usec = start.read_at.ts_usec
        self.exported_snapshot = start.read_at.snapshot
        self.tx_id = start.read_at.tx_id

    def start_json(self) -> dict:
        return {"lsn": self.lsn, "ts_usec": self.ts_usec, "tx_id": self.tx_id}

    @classmethod
    def start_from_json(cls, value: dict[str, Any]) -> dict | None:
        if not value.get("lsn"):
            return None
        tx_id = value.get("tx_id")
        return {"lsn": int(value["lsn"]), "ts_usec": int(value.get("ts_usec") or 0),
                "tx_id": None if tx_id is None else int(tx_id)}

    def stream_position(self) -> Position:
        position = before(self.lsn)
        position.overlap = overlap_of(self.lsn, self.collections)
        return position

    @property
    def read_at(self) -> ReadPoint:
        return ReadPoint(self.ts_usec, self.lsn, self.exported_snapshot, self.view_lsn, self.tx_id)


def _task_dumps(value: dict) -> str:
    return json.dumps({**value, "read_at": value["read_at"].to_json()})


def _task_loads(text: str) -> dict:
    value = json.loads(text)
    return {**value, "read_at": ReadPoint.from_json(value["read_at"])}


@dataclass(frozen=True)
class PgChunkTask(ChunkTask):
    """A chunk of a PostgreSQL snapshot; its `read_at` (a ReadPoint) names the exported snapshot to import."""

    dumps = staticmethod(_task_dumps)
    loads = staticmethod(_task_loads)


class ExportedSnapshotGone(ConnectorError):
    """The snapshot's exported snapshot can no longer be imported: the connection that exported it is gone (the
    pipeline stopped, died or lost its replication connection). Not retriable by the task: only the pipeline may
    decide to read the chunks left in a new snapshot (it resumes its plan when it starts again)."""


def session_options() -> str:
    return " ".join(f"-c {name}={value.replace(' ', '')}" for name, value in SESSION_SETTINGS.items())


class PgSnapshotReader:
    def __init__(self, partition, new_builder):
        """`partition`: the SlotSource (its config, dsn, and `create_slot_with_snapshot()`)."""
        self.partition = partition
        self.config = partition.config
        self.new_builder = new_builder
        self.snapshot_name: str | None = None
        self.lsn = 0
        self.view_lsn = 0  # a resumed snapshot's export's consistent point (later than `lsn`)
        self._view = None  # the replication connection that keeps that export alive
        self._local = threading.local()
        self._connections: list = []
        self._lock = threading.Lock()
        self._keys: dict[str, list[tuple[str, str]]] = {}

    # -- start and plan -----------------------------------------------------------------------------------------

    def capture_start(self) -> SnapshotStart:
        created = self.partition.create_slot_with_snapshot()
        self.snapshot_name, self.lsn = created.snapshot_name, created.consistent_point
        # Debezium stamps its snapshot transaction's xid (txid_current() there): this thread's reading transaction,
        # which imports the exported snapshot, takes one the same way
        tx_id = self._connection().execute("SELECT txid_current()").fetchone()[0]
        read_at = ReadPoint(time.time_ns() // 1000, created.consistent_point, created.snapshot_name, tx_id=tx_id)
        return SnapshotStart(before(created.consistent_point), read_at)

    def resume(self, progress: PgSnapshotProgress) -> None:
        """Exports a snapshot for the chunks a resumed plan has left (SlotSource.export_view); its chunk tasks
        import it too (`progress.read_at`)."""
        self.lsn = progress.lsn
        exported = self.partition.export_view()
        if exported is None:
            return
        self._view, created = exported
        self.snapshot_name, self.view_lsn = created.snapshot_name, created.consistent_point
        progress.exported_snapshot, progress.view_lsn = created.snapshot_name, created.consistent_point

    def collections(self) -> list[str]:
        captured = TableFilter(self.config)
        with self._connection().cursor() as cursor:
            cursor.execute("""
                SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s ORDER BY 1, 2""",
                           (self.config.publication_name,))
            return [f"{schema}.{table}" for schema, table in cursor.fetchall() if captured(schema, table)]

    def plan(self, collection: str, chunk_size: int) -> Plan:
        """Primary-key ranges of about `chunk_size` rows, found in the exported snapshot (plan_table)."""
        with self._connection().cursor() as cursor:
            return plan_table(cursor, collection, chunk_size, self.key_columns(collection))

    def row_bytes(self, collection: str) -> int:
        with self._connection().cursor() as cursor:
            return row_bytes(cursor, collection)

    def key_columns(self, collection: str) -> list[tuple[str, str]]:
        """(name, type as SQL) of the table's primary key columns, in key order."""
        with self._lock:
            known = self._keys.get(collection)
        if known is not None:
            return known
        with self._connection().cursor() as cursor:
            key = primary_key(cursor, collection)
        with self._lock:
            self._keys[collection] = key
        return key

    def _range(self, collection: str, chunk: Chunk) -> tuple[sql.Composable, list]:
        return range_clause(self.key_columns(collection), chunk)

    # -- reading ------------------------------------------------------------------------------------------------

    def _connection(self):
        """This thread's connection, in a REPEATABLE READ transaction that imported the exported snapshot (a fresh
        one when the snapshot resumed after a restart: the exported one is gone)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = psycopg.connect(self.partition.dsn, options=session_options())
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.read_only = True  # psycopg begins the transaction before the first statement: the import
            if self.snapshot_name is not None:
                import_snapshot(conn, self.snapshot_name)
            elif not self.lsn:
                self.lsn = self._slot_start(conn)
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def _slot_start(self, conn) -> int:
        """A resumed snapshot's LSN (its events' `source.lsn`): where its slot still starts, unacknowledged."""
        row = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
                           (self.config.slot_name,)).fetchone()
        return lsn_from_text(row[0]) if row and row[0] else 0

    def read_chunk(self, builder: PgEventBuilder, chunk: Chunk, read_at: ReadPoint, filter: Any,  # noqa: A002
                   mark_last: bool, stop: threading.Event | None) -> tuple[list[OutMessage], int]:
        """The chunk's events and row count. Rows come `snapshot.fetch.size` per round trip, the next fetch asked for
        before a fetched batch is written (the batch's last row is marked only once it is known to be the chunk's
        last); each batch's rows are written in one call (PgEventBuilder.snapshot_rows)."""
        conn = self._connection()
        table = self._table(builder, chunk.namespace)
        if table is None:
            return [], 0
        read = table.rows.positions  # a column left out (column.exclude.list, unmapped type) is not read
        columns = sql.SQL(", ").join(sql.Identifier(c.name) if i in read else sql.SQL("NULL")
                                     for i, c in enumerate(table.columns))
        where, params = self._range(chunk.namespace, chunk)
        query = sql.SQL("SELECT {} FROM {}.{}").format(columns, sql.Identifier(table.schema),
                                                       sql.Identifier(table.name)) + where
        messages: list[OutMessage] = []
        size = self.config.snapshot_fetch_size
        cursor = conn.cursor(name=f"snap_{chunk.number}")
        for column in table.columns:
            cursor.adapters.register_loader(column.type.result_oid, TextLoader)
        try:
            cursor.execute(query, params)
            rows = 0
            middle = self._source(table, read_at, "true")  # every row's but the chunk's first and last ones'
            batch = cursor.fetchmany(size)
            while batch:
                if stop is not None and stop.is_set():
                    raise ChunkInterrupted(chunk.label)
                following = cursor.fetchmany(size) if len(batch) == size else []
                last_batch = not following
                start, end = 0, len(batch) - 1 if last_batch else len(batch)
                if rows == 0:
                    marker = snapshot_marker(chunk, mark_last, True, last_batch and len(batch) == 1)
                    builder.snapshot_rows(table, batch, 0, 1, self._source(table, read_at, marker), messages)
                    start = 1
                if end > start:
                    builder.snapshot_rows(table, batch, start, end, middle, messages)
                if last_batch and end >= start:
                    marker = snapshot_marker(chunk, mark_last, False, True)
                    builder.snapshot_rows(table, batch, end, end + 1, self._source(table, read_at, marker), messages)
                rows += len(batch)
                batch = following
        finally:
            cursor.close()
        return messages, rows

    def _table(self, builder: PgEventBuilder, namespace: str):
        """The builder's Table of `namespace` (None: not captured), made from the catalog at the first chunk of
        the table this thread reads with this builder and kept for the snapshot's other chunks (one schema for
        every row of the snapshot, as its first chunk found it)."""
        tables = getattr(self._local, "tables", None)
        if tables is None:
            tables = self._local.tables = {}
        known = tables.get(namespace)
        if known is not None and known[0] is builder:
            return known[1]
        schema, name = namespace.split(".", 1)
        relation_id = self._connection().execute("SELECT %s::regclass::oid", (_qualified(namespace),)).fetchone()[0]
        table = builder.table(relation_id, schema, name)
        tables[namespace] = (builder, table)
        return table

    def _source(self, table, read_at: ReadPoint, marker: str) -> env.SourceInfo:
        return env.SourceInfo(VERSION, self.config.topic_prefix, self.config.dbname, table.schema, table.name,
                              read_at.ts_usec, marker, read_at.tx_id, self.lsn, None)

    def where_read(self, chunk: Chunk) -> dict | None:
        """For a chunk of a keyed table read in a resumed snapshot's export: its consistent point and the key, which
        the stream's filter needs (connectors/postgres/overlap.py); keys other than integers and uuids are
        compared by the server (order "server")."""
        if self.view_lsn <= self.lsn or chunk.lower is None:
            return None
        key = self.key_columns(chunk.namespace)
        if not key:
            return None
        read: dict = {"lsn": self.view_lsn, "key": [name for name, _ in key]}
        if any(type_sql not in COMPARABLE_TYPES for _, type_sql in key):
            read["order"] = SERVER_ORDER
        return read

    def chunk_failure(self, error: BaseException, chunk: Chunk, remote: bool) -> BaseException | None:
        """A chunk task that failed for a passing reason (its worker lost a connection, its task was lost) is sent
        again: it imports the exported snapshot anew. Anything else fails the snapshot, so does every failure of a
        thread (whose session cannot be replaced after a failure); the pipeline then starts again and resumes the
        plan in a new snapshot."""
        if remote and getattr(error, "retriable", False):
            return None
        return error

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
            view, self._view = self._view, None
        if view is not None:
            view.close()  # drops its temporary slot


def import_snapshot(conn, name: str) -> None:
    """Makes `conn`'s REPEATABLE READ transaction read in the exported snapshot `name`; ExportedSnapshotGone when
    its exporting connection is gone (PostgreSQL: "invalid snapshot identifier")."""
    try:
        conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(name)))
    except psycopg.errors.InvalidParameterValue as error:
        raise ExportedSnapshotGone(
            f"the exported snapshot {name} of this snapshot is gone ({str(error).strip()}): the connection that "
            "exported it was closed; the pipeline resumes the snapshot's plan in a new snapshot when it starts "
            "again") from None


def plan_table(cursor, collection: str, chunk_size: int, key: list[tuple[str, str]]) -> Plan:
    """Ranges of `key` (primary_key) of about `chunk_size` rows (one index scan); a table without a primary key is
    one chunk. Boundaries are the key columns' text, compared as row values (range_clause)."""
    cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", (_qualified(collection),))
    row = cursor.fetchone()
    estimated = max(0, int(row[0])) if row else 0
    if not key:
        return Plan([None, None], estimated, "whole table (no primary key)")
    columns = sql.SQL(", ").join(sql.Identifier(name) for name, _ in key)
    # aliased: ORDER BY <name> would otherwise sort by the text output column of that name
    texts = sql.SQL(", ").join(
        sql.SQL("{}::text AS {}").format(sql.Identifier(name), sql.Identifier(f"cdc_k{i}"))
        for i, (name, _) in enumerate(key))
    table = _identifier(collection)
    cursor.execute(sql.SQL(
        "SELECT {texts} FROM (SELECT {columns}, row_number() OVER (ORDER BY {columns}) AS cdc_rn FROM {table})"
        " s WHERE (cdc_rn - 1) % {size} = 0 ORDER BY cdc_rn").format(
            texts=texts, columns=columns, table=table, size=sql.Literal(chunk_size)))
    bounds = [list(r) for r in cursor.fetchall()]
    if not bounds:
        return Plan([], 0, "empty")
    cursor.execute(sql.SQL("SELECT {texts} FROM {table} ORDER BY {desc} LIMIT 1").format(
        texts=texts, table=table,
        desc=sql.SQL(", ").join(sql.SQL("{} DESC").format(sql.Identifier(name)) for name, _ in key)))
    bounds.append(list(cursor.fetchone()))
    return Plan(bounds, estimated, "primary key ranges")


ROW_SAMPLE = 16  # the first rows whose text row_bytes measures


def row_bytes(cursor, collection: str) -> int:
    """About how many bytes a row of the table holds (0: unknown): the larger of its stored size per row
    (`pg_table_size`, TOAST included, over `reltuples`: compressed values count compressed) and the text of its first
    ROW_SAMPLE rows. The sample runs in a savepoint: a refused read (a role with column privileges only) leaves the
    stored size and the transaction as they were."""
    cursor.execute("SELECT CASE WHEN reltuples > 0 THEN pg_table_size(oid) / reltuples ELSE 0 END FROM pg_class "
                   "WHERE oid = %s::regclass", (_qualified(collection),))
    row = cursor.fetchone()
    stored = int(row[0]) if row and row[0] else 0
    try:
        with cursor.connection.transaction():
            cursor.execute(sql.SQL("SELECT coalesce(avg(octet_length(s::text)), 0) FROM (SELECT * FROM {} LIMIT {}) s")
                           .format(_identifier(collection), sql.Literal(ROW_SAMPLE)))
            sampled = int(cursor.fetchone()[0])
    except psycopg.Error:
        return stored
    return max(stored, sampled)


def primary_key(cursor, collection: str) -> list[tuple[str, str]]:
    """(name, type as SQL) of the table's primary key columns, in key order (empty: none)."""
    cursor.execute("""
        SELECT a.attname, format_type(a.atttypid, a.atttypmod)
        FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = %s::regclass AND i.indisprimary
        ORDER BY array_position(i.indkey::int2[], a.attnum)""", (_qualified(collection),))
    return [(name, type_sql) for name, type_sql in cursor.fetchall()]


def range_clause(key: list[tuple[str, str]], chunk: Chunk, condition: sql.Composable | None = None,
                 ) -> tuple[sql.Composable, list]:
    """A chunk's WHERE clause (and parameters) and ORDER BY, with `condition` ANDed; a whole table (no key) has no
    range."""
    extra = sql.SQL(" AND ({})").format(condition) if condition is not None else sql.SQL("")
    if chunk.lower is None:
        return (sql.SQL(" WHERE ({})").format(condition) if condition is not None else sql.SQL("")), []
    columns = sql.SQL(", ").join(sql.Identifier(name) for name, _ in key)
    values = sql.SQL(", ").join(sql.SQL("%s::{}").format(sql.SQL(type_sql)) for _, type_sql in key)
    upper = sql.SQL("<=") if chunk.upper_inclusive else sql.SQL("<")
    clause = sql.SQL(" WHERE ({c}) >= ({v}) AND ({c}) {op} ({v}){extra} ORDER BY {c}").format(
        c=columns, v=values, op=upper, extra=extra)
    return clause, [*chunk.lower, *chunk.upper]


def _identifier(namespace: str) -> sql.Composable:
    schema, name = namespace.split(".", 1)
    return sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(name))


def _qualified(namespace: str) -> str:
    schema, name = namespace.split(".", 1)
    return '"' + schema.replace('"', '""') + '"."' + name.replace('"', '""') + '"'
