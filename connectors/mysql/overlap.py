"""The stream's filter after a snapshot whose chunks were read in read views of their own (docs/mariadb.md,
"Chunks on the Celery snapshot queue").

The stream starts at P0, the position of the pipeline's own view. A chunk k read by a task in its own consistent
snapshot holds its rows' state at a later position P_k, so the stream drops every row change of a transaction
that starts before P_k whose key lies in chunk k's range: the chunk's rows already include it (or the row was gone
by P_k and the consumer never saw it). Everything else passes. Once the stream reaches the last P_k nothing is
dropped any more and the filter is no longer written with the offset.

Only chunks of integer keys are filtered (connectors/core/snapshot/overlap.py). Positions compare by (binlog file
sequence number, offset), so a rotation between P0 and P_k is ordered right; a change whose binlog file is unknown
is placed by its GTID.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from connectors.core.errors import ConnectorError
from connectors.core.snapshot.overlap import KeyRanges, integer_key, passing_op, ranges_read_later
from connectors.mysql.gtid import MariaGtidPosition, MysqlGtidSet


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


def read_later(table: KeyRanges, row: dict | None, file: str | None, pos: int | None, gtid: str | None) -> bool:
    """Whether a chunk read after this change holds `row`'s key (the change is then in the chunk already)."""
    read = table.read_of(integer_key(row.get(column) for column in table.key) if row is not None else None)
    return read is not None and read.includes(file, pos, gtid)


@dataclass(frozen=True)
class SnapshotOverlap:
    """Chunk ranges per table ("db.table") read after the stream's start, and the last of their positions."""

    tables: dict[str, KeyRanges]  # their read points are ReadPoints
    until: ReadPoint

    def passed(self, file: str | None, pos: int | None) -> bool:
        """True once a stream position is at or after every chunk's read position: nothing more to drop."""
        return file is not None and pos is not None and BinlogPlace.of(file, pos) >= self.until.place

    def apply(self, change: Any) -> Any:
        """`change` (a binlog RowChange) as the stream must pass it: None when the chunks hold it already; a key
        change half of which they hold becomes the other half (a create or a delete)."""
        table = self.tables.get(f"{change.schema.database}.{change.schema.table}")
        if table is None:
            return change
        start = change.position
        op = passing_op(change.op, read_later(table, change.before, start.file, start.pos, change.gtid),
                        read_later(table, change.after, start.file, start.pos, change.gtid))
        if op is None or op == change.op:
            return None if op is None else change
        return replace(change, op="c", before=None) if op == "c" else replace(change, op="d", after=None)

    # -- JSON (kept in the offset record) ----------------------------------------------------------------------

    def to_json(self) -> dict:
        return {"until": self.until.to_json(),
                "tables": {name: t.to_json(ReadPoint.to_json) for name, t in self.tables.items()}}

    @classmethod
    def from_json(cls, value: dict | None) -> SnapshotOverlap | None:
        if not value:
            return None
        tables = {name: KeyRanges.from_json(t, ReadPoint.from_json) for name, t in value["tables"].items()}
        return cls(tables, ReadPoint.from_json(value["until"]))


def overlap_of(start: ReadPoint, collections: list) -> SnapshotOverlap | None:
    """The filter for a snapshot that starts streaming at `start`, from its CollectionProgress list (chunks whose
    `reads` entry says they were read at a later position of their own, with the key they were read by)."""
    tables, latest = ranges_read_later(collections, start.place,
                                       lambda read: ReadPoint.from_json(read) if read.get("file") else None,
                                       lambda point: point.place)
    if not tables:
        return None
    return SnapshotOverlap(tables, latest)


class ActiveOverlap:
    """The filter of the stream one pipeline runs now (set when its reader opens, shared with its builders),
    forgotten once the stream passed it."""

    def __init__(self) -> None:
        self._current: SnapshotOverlap | None = None
        self._passed = True

    @property
    def current(self) -> SnapshotOverlap | None:
        return self._current

    @current.setter
    def current(self, overlap: SnapshotOverlap | None) -> None:
        self._current, self._passed = overlap, overlap is None

    def apply(self, change: Any) -> Any:
        if self._passed:
            return change
        overlap = self._current
        start = change.position
        if overlap.passed(start.file, start.pos):
            # only the builder stops looking: an offset of an earlier position still being committed keeps it
            self._passed = True
            return change
        return overlap.apply(change)

    def kept_at(self, file: str | None, pos: int | None) -> SnapshotOverlap | None:
        """The filter to store with an offset at file/pos (None once that position passed it)."""
        overlap = self.current
        return None if overlap is None or overlap.passed(file, pos) else overlap
