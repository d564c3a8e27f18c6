"""The initial snapshot of a PostgreSQL database, consistent with its slot.

`capture_start` creates the slot with an exported snapshot (`CREATE_REPLICATION_SLOT … EXPORT_SNAPSHOT`); every
table is then read in that snapshot (`SET TRANSACTION SNAPSHOT`), from any number of threads, while the
replication connection stays idle; streaming then starts on that same connection from the slot's consistent point.
A change committed while the snapshot is read is after that point: it comes through the stream, never twice.

Each table is one chunk (read whole with a server-side cursor, `snapshot.fetch.size` rows per round trip).
An exported snapshot dies with its connection, so a snapshot interrupted by a crash cannot resume in it: it starts
again (a new slot, a new snapshot), as Debezium's does; chunks committed before the crash are read again.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.string import TextLoader

from connectors.core.snapshot.chunks import Chunk, Plan
from connectors.core.snapshot.executors import ChunkInterrupted
from connectors.core.snapshot.progress import SnapshotProgress, SnapshotStart
from connectors.kafka.sink import OutMessage
from connectors.postgres import envelope as env
from connectors.postgres.events import VERSION, PgEventBuilder, TableFilter
from connectors.postgres.offsets import before
from connectors.postgres.position import Position
from connectors.postgres.replication import SESSION_SETTINGS


@dataclass
class PgSnapshotProgress(SnapshotProgress):
    """Keeps the slot's consistent point (`lsn`) and the snapshot's time (`ts_usec`) as its start."""

    lsn: int = 0
    ts_usec: int = 0

    def set_start(self, start: SnapshotStart) -> None:
        self.lsn = start.position.lsn_proc
        self.ts_usec = start.read_at

    def start_json(self) -> dict:
        return {"lsn": self.lsn, "ts_usec": self.ts_usec}

    @classmethod
    def start_from_json(cls, value: dict[str, Any]) -> dict | None:
        if not value.get("lsn") or not value.get("completed"):
            return None  # never resumed part-way: its exported snapshot is gone (see the module's docstring)
        return {"lsn": int(value["lsn"]), "ts_usec": int(value.get("ts_usec") or 0)}

    def stream_position(self) -> Position:
        return before(self.lsn)

    @property
    def read_at(self) -> int:
        return self.ts_usec


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
        self._local = threading.local()
        self._connections: list = []
        self._lock = threading.Lock()

    # -- start and plan -----------------------------------------------------------------------------------------

    def capture_start(self) -> SnapshotStart:
        created = self.partition.create_slot_with_snapshot()
        self.snapshot_name, self.lsn = created.snapshot_name, created.consistent_point
        return SnapshotStart(before(created.consistent_point), time.time_ns() // 1000)

    def collections(self) -> list[str]:
        captured = TableFilter(self.config)
        with self._connection().cursor() as cursor:
            cursor.execute("""
                SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s ORDER BY 1, 2""",
                           (self.config.publication_name,))
            return [f"{schema}.{table}" for schema, table in cursor.fetchall() if captured(schema, table)]

    def plan(self, collection: str, chunk_size: int) -> Plan:
        with self._connection().cursor() as cursor:
            cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", (_qualified(collection),))
            row = cursor.fetchone()
        return Plan([None, None], max(0, int(row[0])) if row else 0, "whole table")

    # -- reading ------------------------------------------------------------------------------------------------

    def _connection(self):
        """This thread's connection, in a REPEATABLE READ transaction that imported the exported snapshot."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = psycopg.connect(self.partition.dsn, options=session_options())
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.read_only = True  # psycopg begins the transaction before the first statement: the import
            conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(self.snapshot_name)))
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def read_chunk(self, builder: PgEventBuilder, chunk: Chunk, read_at: Any, filter: Any,  # noqa: A002
                   mark_last: bool, stop: threading.Event | None) -> tuple[list[OutMessage], int]:
        conn = self._connection()
        schema, name = chunk.namespace.split(".", 1)
        with conn.cursor() as cursor:
            cursor.execute("SELECT %s::regclass::oid", (_qualified(chunk.namespace),))
            relation_id = cursor.fetchone()[0]
        table = builder.table(relation_id, schema, name)
        if table is None:
            return [], 0
        columns = sql.SQL(", ").join(sql.Identifier(c.name) for c in table.columns)
        query = sql.SQL("SELECT {} FROM {}.{}").format(columns, sql.Identifier(schema), sql.Identifier(name))
        messages: list[OutMessage] = []
        marker = "last" if mark_last else "true"
        cursor = conn.cursor(name=f"snap_{chunk.number}")
        for column in table.columns:
            cursor.adapters.register_loader(column.type.oid, TextLoader)
        try:
            cursor.itersize = self.config.snapshot_fetch_size
            cursor.execute(query)
            rows = 0
            pending = None
            for row in cursor:
                if stop is not None and rows % 1024 == 0 and stop.is_set():
                    raise ChunkInterrupted(chunk.label)
                if pending is not None:
                    messages.append(builder.snapshot_row(table, pending, self._source(table, read_at, "true")))
                pending = row
                rows += 1
            if pending is not None:
                messages.append(builder.snapshot_row(table, pending, self._source(table, read_at, marker)))
        finally:
            cursor.close()
        return messages, rows

    def _source(self, table, read_at: int, marker: str) -> env.SourceInfo:
        return env.SourceInfo(VERSION, self.config.topic_prefix, self.config.dbname, table.schema, table.name,
                              read_at, marker, None, self.lsn, None)

    def chunk_failure(self, error: BaseException, chunk: Chunk, remote: bool) -> BaseException | None:
        return error  # the exported snapshot cannot be re-imported after a failed session: fail (and start again)

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()


def _qualified(namespace: str) -> str:
    schema, name = namespace.split(".", 1)
    return '"' + schema.replace('"', '""') + '"."' + name.replace('"', '""') + '"'
