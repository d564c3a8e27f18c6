"""The stream's filter after a snapshot whose chunks were read in read views of their own (docs/mariadb.md,
"Chunks on the Celery snapshot queue").

The stream starts at P0, the position of the pipeline's own view. A chunk k read by a task in its own consistent
snapshot holds its rows' state at a later position P_k, so the stream drops every row change of a transaction
that starts before P_k whose key lies in chunk k's range: the chunk's rows already include it (or the row was gone
by P_k and the consumer never saw it). Everything else passes. Once the stream reaches the last P_k nothing is
dropped any more and the filter is no longer written with the offset.

Only chunks of integer keys are filtered: Python compares those exactly as the server does (strings under a
collation it could not). Positions compare by (binlog file sequence number, offset), so a rotation between P0 and
P_k is ordered right; a change whose binlog file is unknown is placed by its GTID.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import Any

from connectors.core.errors import ConnectorError
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


@dataclass(frozen=True)
class ChunkRange:
    """[lower, upper) of a table's key (upper included for a table's last chunk), read at `read`."""

    lower: tuple
    upper: tuple
    upper_inclusive: bool
    read: ReadPoint

    def holds(self, key: tuple) -> bool:
        return self.lower <= key and (key <= self.upper if self.upper_inclusive else key < self.upper)


@dataclass(frozen=True)
class TableRanges:
    key: tuple[str, ...]
    ranges: tuple[ChunkRange, ...]  # disjoint, in key order (the plan's)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_lowers", [r.lower for r in self.ranges])

    def range_of(self, key: tuple) -> ChunkRange | None:
        """The range holding `key` (found by bisection: a plan can have thousands of chunks)."""
        index = bisect_right(self._lowers, key) - 1
        if index >= 0 and self.ranges[index].holds(key):
            return self.ranges[index]
        return None

    def key_of(self, row: dict | None) -> tuple | None:
        if row is None:
            return None
        key = tuple(row.get(column) for column in self.key)
        return key if all(isinstance(v, int) for v in key) else None

    def read_later(self, row: dict | None, file: str | None, pos: int | None, gtid: str | None) -> bool:
        """Whether a chunk read after this change holds `row`'s key (the change is then in the chunk already)."""
        key = self.key_of(row)
        found = self.range_of(key) if key is not None else None
        return found is not None and found.read.includes(file, pos, gtid)


@dataclass(frozen=True)
class SnapshotOverlap:
    """Chunk ranges per table ("db.table") read after the stream's start, and the last of their positions."""

    tables: dict[str, TableRanges]
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
        drop_before = table.read_later(change.before, start.file, start.pos, change.gtid)
        drop_after = table.read_later(change.after, start.file, start.pos, change.gtid)
        if change.op == "c":
            return None if drop_after else change
        if change.op == "d":
            return None if drop_before else change
        if drop_before and drop_after:
            return None
        if drop_before:
            return replace(change, op="c", before=None)
        if drop_after:
            return replace(change, op="d", after=None)
        return change

    # -- JSON (kept in the offset record) ----------------------------------------------------------------------

    def to_json(self) -> dict:
        return {
            "until": self.until.to_json(),
            "tables": {name: {"key": list(t.key), "ranges": [
                [list(r.lower), list(r.upper), r.upper_inclusive, r.read.to_json()] for r in t.ranges]}
                for name, t in self.tables.items()},
        }

    @classmethod
    def from_json(cls, value: dict | None) -> SnapshotOverlap | None:
        if not value:
            return None
        tables = {name: TableRanges(tuple(t["key"]), tuple(
            ChunkRange(tuple(lower), tuple(upper), bool(inclusive), ReadPoint.from_json(read))
            for lower, upper, inclusive, read in t["ranges"])) for name, t in value["tables"].items()}
        return cls(tables, ReadPoint.from_json(value["until"]))


def overlap_of(start: ReadPoint, collections: list) -> SnapshotOverlap | None:
    """The filter for a snapshot that starts streaming at `start`, from its CollectionProgress list (chunks whose
    `reads` entry says they were read at a later position of their own, with the key they were read by)."""
    tables: dict[str, TableRanges] = {}
    latest = start
    for collection in collections:
        key: tuple[str, ...] | None = None
        ranges = []
        last = collection.chunk_count - 1
        for index, read in sorted(collection.reads.items()):
            if not read.get("key") or not read.get("file"):
                continue
            point = ReadPoint.from_json(read)
            if point.place <= start.place:
                continue  # read at the stream's start: nothing to drop
            if key is not None and tuple(read["key"]) != key:
                raise ConnectorError(f"the chunks of {collection.namespace} were read by different keys "
                                     f"({key} and {tuple(read['key'])}); the table changed during the snapshot")
            key = tuple(read["key"])
            ranges.append(ChunkRange(tuple(collection.bounds[index]), tuple(collection.bounds[index + 1]),
                                     index == last, point))
            if point.place > latest.place:
                latest = point
        if ranges:
            tables[collection.namespace] = TableRanges(key, tuple(ranges))
    return SnapshotOverlap(tables, latest) if tables else None


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
