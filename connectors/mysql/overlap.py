"""The stream's filter after a snapshot whose chunks were read in read views of their own (docs/mariadb.md,
"Chunks on the Celery snapshot queue").

The stream starts at P0, the position of the pipeline's own view. A chunk k read by a task in its own consistent
snapshot holds its rows' state at a later position P_k, so the stream drops every row change of a transaction
that starts before P_k whose key lies in chunk k's range: the chunk's rows already include it (or the row was gone
by P_k and the consumer never saw it). Everything else passes. Once the stream reaches the last P_k nothing is
dropped any more and the filter is no longer written with the offset.

Chunks of integer keys are compared here (connectors/core/snapshot/overlap.py); chunks of string keys (read only
by a resumed snapshot's own view, marked with the order "server") are compared by the server under each column's
collation (`ServerKeyOrder`: one query a key changed before the chunks' position). Positions compare by (binlog
file sequence number, offset), so a rotation between P0 and P_k is ordered right; a change whose binlog file is
unknown is placed by its GTID.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pymysql

from connectors import ConnectorError
from connectors.core.snapshot.overlap import KeyRanges, ServerKeyLookup, integer_key, passing_op, ranges_read_later
from connectors.mysql.catalog import column_catalog, may_be
from connectors.mysql.gtid import MariaGtidPosition, MysqlGtidSet
from connectors.mysql.types import uuid_text

SERVER_ORDER = "server"  # a `reads` entry's "order" for a key only the server compares
# client and server error codes of a connection that is gone: can't connect, gone away, lost, server shutdown
LOST_CONNECTION = frozenset({1053, 2003, 2005, 2006, 2013, 2055})
_COLLATION = re.compile(r"([a-z0-9]+)_[a-z0-9_]+")  # a collation's name starts with its character set's


@dataclass(frozen=True, order=True)
class BinlogPlace:
    """A place in one server's binlog, ordered across files by their sequence number."""

    sequence: int
    pos: int

    @classmethod
    def of(cls, file: str, pos: int) -> BinlogPlace:
        return cls(file_sequence(file), int(pos))


def file_sequence(file: str) -> int:
    """`mariadb-bin.000012` -> 12 (the server numbers its binlog files in order)."""
    _, _, suffix = file.rpartition(".")
    if not suffix.isdigit():
        raise ConnectorError(f"binlog file {file!r} has no sequence number; cannot order positions across files")
    return int(suffix)


@dataclass(frozen=True)
class ReadPoint:
    """Where a chunk was read: its view's binlog position and the GTID position there."""

    file: str
    pos: int
    gtids: str = ""

    @property
    def place(self) -> BinlogPlace:
        return BinlogPlace.of(self.file, self.pos)

    def includes(self, file: str | None, pos: int | None, gtid: str | None) -> bool:
        """Whether the transaction starting at file/pos (with `gtid`) is part of this read view."""
        if file is not None and pos is not None:
            return BinlogPlace.of(file, pos) < self.place
        if gtid and self.gtids:
            if ":" in gtid:
                return MysqlGtidSet.parse(self.gtids).contains(gtid)
            return MariaGtidPosition.parse(self.gtids).contains(gtid)
        raise ConnectorError("a binlog change has neither a binlog file nor a GTID: cannot tell whether a snapshot "
                             "chunk read later already holds it")

    def to_json(self) -> dict:
        return {"file": self.file, "pos": self.pos, "gtids": self.gtids}

    @classmethod
    def from_json(cls, value: dict) -> ReadPoint:
        return cls(str(value["file"]), int(value["pos"]), str(value.get("gtids") or ""))


def read_later(read: ReadPoint | None, file: str | None, pos: int | None, gtid: str | None) -> bool:
    """Whether the chunk holding a change's row, read at `read` (None: no chunk read later holds it), was read
    after the change (which is then in the chunk already)."""
    return read is not None and read.includes(file, pos, gtid)


def key_of(table: KeyRanges, row: dict | None) -> tuple | None:
    return tuple(row.get(column) for column in table.key) if row is not None else None


class ServerKeyOrder:
    """Finds which range of a string-keyed table holds a key by asking the server (`connect()` opens a connection
    when first needed): each string column compares under its collation, as the plan's ranges were read.
    ServerKeyLookup keeps the answers; a refused query lets the change pass, a lost connection propagates."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._connection = None
        self._answers = ServerKeyLookup(lambda error: not lost_connection(error))
        # (database, table) -> its UUID columns, which a binlog table map shows as BINARY(16)
        self._uuids: dict[tuple[str, str], frozenset[str]] = {}

    def read_of(self, namespace: str, table: KeyRanges, schema: Any, key: tuple | None) -> ReadPoint | None:
        if key is not None and any(value is None for value in key):
            key = None
        return self._answers.read_of(namespace, table, key, lambda: self._range_number(schema, table, key))

    def _range_number(self, schema: Any, table: KeyRanges, key: tuple) -> int:
        try:
            if self._connection is None:
                self._connection = self._connect()
            uuids = self._uuid_columns(schema, table.key)
            # a UUID's binlog value is its bytes; the plan's bounds are its text, as SELECT gives it
            key = tuple(uuid_text(value) if name in uuids else value
                        for name, value in zip(table.key, key, strict=True))
            query, params = _range_query(self._values(schema, table.key, uuids), key, table)
            with self._connection.cursor() as cursor:
                cursor.execute(query, params)
                return cursor.fetchone()[0]
        except Exception:
            self.close()  # opened again for the next key
            raise

    def _uuid_columns(self, schema: Any, key: tuple[str, ...]) -> frozenset[str]:
        """The UUID columns of the table (asked of information_schema once, and only when a key column is a
        BINARY(16) in the table map, as a UUID shows there)."""
        by_name = {column.name: column for column in schema.columns}
        if not any(may_be(by_name[name], "uuid") for name in key):
            return frozenset()
        table = (schema.database, schema.table)
        known = self._uuids.get(table)
        if known is None:
            known = self._uuids[table] = frozenset(
                name for name, column in column_catalog(self._connection, *table).items() if column.data_type == "uuid")
        return known

    @staticmethod
    def _values(schema: Any, key: tuple[str, ...], uuids: frozenset[str]) -> list[str]:
        """Each key column's SQL for a value (%s): a string under its column's collation, a UUID's text as a UUID."""
        by_name = {column.name: column for column in schema.columns}
        values = []
        for name in key:
            column = by_name[name]
            if name in uuids:
                values.append("CAST(%s AS UUID)")
                continue
            if column.charset is None:
                values.append("%s")
                continue
            matched = _COLLATION.fullmatch(column.collation or "")
            if matched is None:
                raise ValueError(f"the collation of {name} is not known ({column.collation!r})")
            values.append(f"CONVERT(%s USING {matched.group(1)}) COLLATE {matched.group(0)}")
        return values

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception:  # noqa: BLE001, S110 - already gone
                pass


def lost_connection(error: BaseException) -> bool:
    """Whether `error` says the server could not be asked (unreachable, gone away), not that it refused a query."""
    if isinstance(error, (ConnectorError, pymysql.err.InterfaceError)):
        return True
    return isinstance(error, pymysql.err.OperationalError) and bool(error.args) and error.args[0] in LOST_CONNECTION


def _range_query(values: list[str], key: tuple, table: KeyRanges) -> tuple[str, list]:
    """SELECT the 1-based number of the range of `table` holding `key` (0: none)."""
    row = "(" + ", ".join(values) + ")"
    cases, params = [], []
    for number, chunk in enumerate(table.ranges, 1):
        cases.append(f"WHEN {row} >= {row} AND {row} {'<=' if chunk.upper_inclusive else '<'} {row} THEN {number}")
        params += [*key, *chunk.lower, *key, *chunk.upper]
    return "SELECT CASE " + " ".join(cases) + " ELSE 0 END", params


@dataclass(frozen=True)
class SnapshotOverlap:
    """Chunk ranges per table ("db.table") read after the stream's start, and the last of their positions."""

    tables: dict[str, KeyRanges]  # their read points are ReadPoints
    until: ReadPoint
    server_ordered: frozenset[str] = field(default=frozenset())  # tables of string keys (ServerKeyOrder)

    def passed(self, file: str | None, pos: int | None) -> bool:
        """True once a stream position is at or after every chunk's read position: nothing more to drop."""
        return file is not None and pos is not None and BinlogPlace.of(file, pos) >= self.until.place

    def apply(self, change: Any, server: ServerKeyOrder | None = None) -> Any:
        """`change` (a binlog RowChange) as the stream must pass it: None when the chunks hold it already; a key
        change half of which they hold becomes the other half (a create or a delete). `server` compares the keys of
        `server_ordered` tables (without it their changes pass)."""
        namespace = f"{change.schema.database}.{change.schema.table}"
        table = self.tables.get(namespace)
        if table is None:
            return change
        if namespace in self.server_ordered:
            if server is None:
                return change

            def read_of(row: dict | None) -> ReadPoint | None:
                return server.read_of(namespace, table, change.schema, key_of(table, row))
        else:
            def read_of(row: dict | None) -> ReadPoint | None:
                key = key_of(table, row)
                return table.read_of(integer_key(key) if key is not None else None)

        start = change.position
        op = passing_op(change.op, read_later(read_of(change.before), start.file, start.pos, change.gtid),
                        read_later(read_of(change.after), start.file, start.pos, change.gtid))
        if op is None or op == change.op:
            return None if op is None else change
        return replace(change, op="c", before=None) if op == "c" else replace(change, op="d", after=None)

    # -- JSON (kept in the offset record) ----------------------------------------------------------------------

    def to_json(self) -> dict:
        value: dict[str, Any] = {"until": self.until.to_json(),
                                 "tables": {name: t.to_json(ReadPoint.to_json) for name, t in self.tables.items()}}
        if self.server_ordered:
            value["server_ordered"] = sorted(self.server_ordered)
        return value

    @classmethod
    def from_json(cls, value: dict | None) -> SnapshotOverlap | None:
        if not value:
            return None
        tables = {name: KeyRanges.from_json(t, ReadPoint.from_json) for name, t in value["tables"].items()}
        return cls(tables, ReadPoint.from_json(value["until"]), frozenset(value.get("server_ordered") or ()))


def overlap_of(start: ReadPoint, collections: list) -> SnapshotOverlap | None:
    """The filter for a snapshot that starts streaming at `start`, from its CollectionProgress list (chunks whose
    `reads` entry says they were read at a later position of their own, with the key they were read by and, for
    string keys, the order "server")."""
    tables, latest = ranges_read_later(collections, start.place, _read_point, _place)
    if not tables:
        return None
    server_ordered = frozenset(c.namespace for c in collections if c.namespace in tables
                               and any(r.get("order") == SERVER_ORDER for r in c.reads.values()))
    return SnapshotOverlap(tables, latest, server_ordered)


def _read_point(read: dict) -> ReadPoint | None:
    return ReadPoint.from_json(read) if read.get("file") else None


def _place(point: ReadPoint) -> BinlogPlace:
    return point.place


class ActiveOverlap:
    """The filter of the stream one pipeline runs now (set when its reader opens, shared with its builders),
    forgotten once the stream passed it."""

    def __init__(self, connect: Callable[[], Any] | None = None) -> None:
        """`connect()`: a connection to the server, for the keys only it compares (without it their changes
        pass)."""
        self._current: SnapshotOverlap | None = None
        self._passed = True
        self._connect = connect
        self._server: ServerKeyOrder | None = None
        self._lock = threading.Lock()  # builders of several threads may share it

    @property
    def current(self) -> SnapshotOverlap | None:
        return self._current

    @current.setter
    def current(self, overlap: SnapshotOverlap | None) -> None:
        self._current, self._passed = overlap, overlap is None
        self._close_server()
        if overlap is not None and overlap.server_ordered and self._connect is not None:
            self._server = ServerKeyOrder(self._connect)

    @property
    def filtering(self) -> bool:
        """Whether `apply` may still drop or change a change (False once the stream passed the filter)."""
        return not self._passed

    def apply(self, change: Any) -> Any:
        if self._passed:
            return change
        overlap = self._current
        start = change.position
        if overlap.passed(start.file, start.pos):
            # only the builder stops looking: an offset of an earlier position still being committed keeps it
            self._passed = True
            self._close_server()
            return change
        with self._lock:
            return overlap.apply(change, self._server)

    def _close_server(self) -> None:
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.close()

    def kept_at(self, file: str | None, pos: int | None) -> SnapshotOverlap | None:
        """The filter to store with an offset at file/pos (None once that position passed it)."""
        overlap = self.current
        return None if overlap is None or overlap.passed(file, pos) else overlap
