"""The stream's filter after a resumed snapshot (docs/postgres.md, "resumes its plan in a new snapshot").

The slot starts at the plan's consistent point L0; the chunks a resumed snapshot reads are read in the exported
snapshot of a temporary slot created then, at its consistent point L1 > L0: they hold every transaction whose
commit record starts before L1, and no other (pgoutput's Begin carries that commit LSN). The stream from L0 drops
the row changes of those transactions whose key lies in such a chunk's range; a key change half of which a chunk
holds passes as its other half. Once the stream's commits reach L1 nothing is dropped any more, and the filter is
no longer written with the offset. Only chunks of integer and uuid keys are filtered (COMPARABLE_TYPES); the
changes of other tables' resumed chunks come again after their reads (the state converges).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from connectors.core.snapshot.overlap import KeyRanges, passing_op, ranges_read_later

# format_type() of the key types Python orders as the server does: integers, and uuids by their canonical text
# (fixed-width lowercase hex, so its string order is the server's byte order)
COMPARABLE_TYPES = frozenset({"smallint", "integer", "bigint", "uuid"})
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class SnapshotOverlap:
    """Chunk ranges per table ("schema.table") read after the stream's start (their read points are the LSNs
    of the views they were read in), and the latest of those LSNs."""

    tables: dict[str, KeyRanges]
    until: int

    def passed(self, commit_lsn: int) -> bool:
        """True once the stream's transactions commit at or after every chunk's view: nothing more to drop."""
        return commit_lsn >= self.until

    def held(self, table: KeyRanges, key: tuple | None, commit_lsn: int) -> bool:
        read = table.read_of(key)
        return read is not None and commit_lsn < read

    def to_json(self) -> dict:
        return {"until": self.until, "tables": {name: t.to_json(int) for name, t in self.tables.items()}}

    @classmethod
    def from_json(cls, value: dict | None) -> SnapshotOverlap | None:
        if not value:
            return None
        return cls({name: KeyRanges.from_json(t, int) for name, t in value["tables"].items()}, int(value["until"]))


def overlap_of(start_lsn: int, collections: list) -> SnapshotOverlap | None:
    """The filter for a snapshot whose stream starts at `start_lsn`, from its CollectionProgress list (chunks whose
    `reads` entry has the LSN of the view they were read in, later than the start, and the key they were read by).
    The plan's boundaries are the key columns' texts."""
    tables, latest = ranges_read_later(collections, start_lsn, lambda read: read.get("lsn"), int,
                                       lambda values: tuple(key_value(v) for v in values))
    return SnapshotOverlap(tables, latest) if tables else None


def key_value(text: str) -> int | str:
    """A key column's text as Python must compare it: an integer's as an int, a uuid's as its text; ValueError or
    TypeError for anything else."""
    if type(text) is not str:
        raise TypeError(f"not a column's text: {text!r}")
    return text if _UUID.fullmatch(text) else int(text)


def tuple_key(values: Sequence | None, positions: Sequence[int]) -> tuple | None:
    """The comparable key of a pgoutput tuple (its columns' texts) at `positions`; None when a value is missing or
    is neither an integer's nor a uuid's text (a null, an unchanged TOAST value)."""
    if values is None:
        return None
    try:
        return tuple(key_value(values[i]) for i in positions)
    except (TypeError, ValueError):
        return None


class StreamOverlap:
    """The filter of the stream one pipeline runs now (set when its reader opens, shared with its builder). Once a
    change commits at or after it, the builder stops looking (`filtering`); an offset of an earlier position still
    being committed keeps it (`kept_at`)."""

    def __init__(self) -> None:
        self._current: SnapshotOverlap | None = None
        self.filtering = False  # whether the builder must still ask `passing_op`

    @property
    def current(self) -> SnapshotOverlap | None:
        return self._current

    @current.setter
    def current(self, overlap: SnapshotOverlap | None) -> None:
        self._current, self.filtering = overlap, overlap is not None

    def kept_at(self, commit_lsn: int) -> SnapshotOverlap | None:
        """The filter to store with an offset whose last commit is `commit_lsn` (None once that passed it)."""
        overlap = self._current
        return None if overlap is None or overlap.passed(commit_lsn) else overlap

    def passing_op(self, namespace: str, op: str, before: tuple | None, after: tuple | None, commit_lsn: int,
                   key_positions) -> str | None:
        """What the stream still sends of a row change of `namespace` (passing_op); `before`/`after` are its old
        and new tuples, `key_positions(names)` the positions of the named key columns in them (None: not all
        there)."""
        overlap = self.kept_at(commit_lsn)
        if overlap is None:
            self.filtering = False
            return op
        table = overlap.tables.get(namespace)
        positions = key_positions(table.key) if table is not None else None
        if positions is None:
            return op
        return passing_op(op, overlap.held(table, tuple_key(before, positions), commit_lsn),
                          overlap.held(table, tuple_key(after, positions), commit_lsn))
