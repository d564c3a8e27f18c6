"""Verify's reads of a PostgreSQL database (connectors/core/verify.py, docs/verify.md).

A view is a REPEATABLE READ transaction that exports its snapshot (`pg_export_snapshot()`); the snapshot reader
imports it, plans and reads the tables in key-ordered chunks there, writing each row's key and row JSON as the
snapshot's event carries them.
The transaction's own snapshot (`txid_current_snapshot()`) says exactly which transactions the view holds: an
event is covered when its `txId` is visible in it. The WAL write position once it has passed the insert position
read in the same statement (`written_past`) is after the commit record of every one of them, asynchronous commits
included: the connector has captured them all once its committed position passes it.
"""

from __future__ import annotations

import time

import psycopg

from connectors.core.snapshot.chunks import Chunk, Plan
from connectors.core.verify import OpenedPartition
from connectors.core.verify_events import SourceRow, key_text, read_event, row_state
from connectors.postgres import envelope
from connectors.postgres.config import PostgresConfig
from connectors.postgres.envelope import SourceInfo
from connectors.postgres.events import PgEventBuilder, Table
from connectors.postgres.pgoutput import lsn_from_text
from connectors.postgres.position import Position
from connectors.postgres.snapshot import PgSnapshotReader, ReadPoint, session_options
from connectors.postgres.source import PostgresSource, SlotSource

XID_SPAN = 1 << 32
WRITE_WAIT_S = 5.0


class TransactionSnapshot:
    """A `txid_current_snapshot()` value: `xmin:xmax:xip,…` (epoch-extended transaction ids)."""

    def __init__(self, text: str):
        xmin, xmax, xip = text.split(":")
        self.xmin, self.xmax = int(xmin), int(xmax)
        self.in_progress = {int(x) for x in xip.split(",") if x}

    def extend(self, xid: int) -> int:
        """A 32-bit transaction id (an event's `txId`) with the epoch that puts it nearest this snapshot's `xmax`
        (ids are compared modulo 2^32 within half the span, as PostgreSQL compares them)."""
        full = (self.xmax & ~(XID_SPAN - 1)) | (xid & (XID_SPAN - 1))
        if full > self.xmax + XID_SPAN // 2:
            return full - XID_SPAN
        if full < self.xmax - XID_SPAN // 2:
            return full + XID_SPAN
        return full

    def visible(self, xid: int) -> bool:
        full = self.extend(xid)
        return full < self.xmin or (full < self.xmax and full not in self.in_progress)


class RowTexts:
    """The snapshot reader's event builder for Verify: of each row read, only the key and row JSON its snapshot event
    would carry (PgEventBuilder.tuple_texts), not the whole envelope, which Verify would parse back."""

    def __init__(self, builder: PgEventBuilder):
        self.builder = builder

    def table(self, relation_id: int, schema: str, name: str) -> Table | None:
        return self.builder.table(relation_id, schema, name)

    def snapshot_row(self, table: Table, values: list, source: SourceInfo) -> SourceRow:
        key, row = self.builder.tuple_texts(table, values)
        return key_text(key), row_state(row) if row is not None else None

    def snapshot_rows(self, table: Table, rows: list, start: int, end: int, source: SourceInfo,
                      messages: list) -> None:
        """`snapshot_row` of each of rows[start:end], appended to `messages` (PgSnapshotReader.read_chunk's call)."""
        messages.extend(self.snapshot_row(table, values, source) for values in rows[start:end])


class PgView:
    read_event = staticmethod(read_event)
    read_key = staticmethod(key_text)

    def __init__(self, config: PostgresConfig, slot: SlotSource):
        self.config = config
        self.placeholder = config.unavailable_value_placeholder
        self.runs_ahead = False  # an event carries the row as its own change left it
        self._conn = psycopg.connect(slot.dsn, options=session_options())
        try:
            self._conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            self._conn.read_only = True
            exported, snapshot, inserted = self._conn.execute(
                "SELECT pg_export_snapshot(), txid_current_snapshot()::text, pg_current_wal_insert_lsn()::text"
            ).fetchone()
            wal = written_past(self._conn, inserted)
        except BaseException:
            self._conn.close()
            raise
        self.snapshot = TransactionSnapshot(snapshot)
        self.wal_lsn = lsn_from_text(wal)
        self.position = {"lsn": wal, "txid_snapshot": snapshot}
        self._reader = PgSnapshotReader(slot, slot.event_builder)
        self._reader.snapshot_name, self._reader.lsn = exported, self.wal_lsn
        self._builder = slot.event_builder()
        self._row_texts = RowTexts(self._builder)
        self._read_at = ReadPoint(0, self.wal_lsn, exported)

    def tables(self) -> list[str]:
        return self._reader.collections()

    def topic(self, table: str) -> str:
        schema, name = table.split(".", 1)
        return envelope.topic_name(self.config.topic_prefix, schema, name)

    def plan(self, table: str, chunk_size: int) -> Plan:
        return self._reader.plan(table, chunk_size)

    def row_bytes(self, table: str) -> int:
        return self._reader.row_bytes(table)

    def read_rows(self, chunk: Chunk) -> list[SourceRow]:
        rows, _ = self._reader.read_chunk(self._row_texts, chunk, self._read_at, None, False, None)
        return rows

    def covers(self, source: dict) -> bool:
        lsn = source.get("lsn")
        if source.get("snapshot", "false") != "false":
            # a snapshot read at the slot's consistent point holds what committed before it: a view at that very
            # point holds it too (on a quiet database the view's WAL position is the consistent point)
            return lsn is not None and int(lsn) <= self.wal_lsn
        if source.get("txId") is None:
            return lsn is not None and int(lsn) < self.wal_lsn
        return self.snapshot.visible(int(source["txId"]))

    def reached(self, position: Position) -> bool:
        return position.lsn_commit >= self.wal_lsn or (position.completed and position.lsn_proc >= self.wal_lsn)

    def close(self) -> None:
        self._reader.close()
        self._builder.close()
        self._conn.close()


def written_past(conn: psycopg.Connection, inserted: str) -> str:
    """The WAL write position once it has passed `inserted` (the insert position read with the snapshot): a
    transaction committed with `synchronous_commit = off` is visible before its commit record is written, and the
    connector only receives what is written. After `WRITE_WAIT_S` the write position as it is: a last record ending
    at a page boundary leaves the insert position a page header past anything the writer will write on an idle
    server, and by then the WAL writer (every `wal_writer_delay`, 200 ms by default) has written every commit."""
    target = lsn_from_text(inserted)
    deadline = time.monotonic() + WRITE_WAIT_S
    while True:
        (written,) = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        if lsn_from_text(written) >= target or time.monotonic() >= deadline:
            return written
        time.sleep(0.02)


def partitions(config: PostgresConfig) -> list[OpenedPartition]:
    source = PostgresSource(config)
    return [OpenedPartition(config, source.open(source.partitions()[0]), PgView)]



