"""Chunks: one range of one data collection's keys, the unit a snapshot reads, commits and resumes.

A collection's plan is a list of boundaries `[b0 = min, b1, …, bn = max]` (the source plans it, in its key order):
chunks `[b_i, b_i+1)`, the last one `[b_n-1, b_n]`. The core never looks inside a boundary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# The boundaries a snapshot's plan may hold, as JSON: the plan is kept in the pipeline's offset record, one Kafka
# message (the producer's and the offsets topic's limits are 1 MB by default). A bigger plan is thinned (`thinned`).
PLAN_BYTES = 512 * 1024


@dataclass(frozen=True)
class Chunk:
    """One key range of one collection: `[lower, upper)`, or `[lower, upper]` for a collection's last chunk."""

    namespace: str
    index: int  # within its collection
    number: int  # within the snapshot (names its transactional id and chunk marker)
    lower: Any
    upper: Any
    upper_inclusive: bool
    count: int = 1  # chunks of the collection

    @property
    def label(self) -> str:
        return f"{self.namespace}#{self.index + 1}/{self.count}"


@dataclass(frozen=True)
class Plan:
    bounds: list
    estimated_count: int
    method: str  # how the source found the boundaries (shown in logs and progress)


def rows_per_chunk(chunk_size: int, max_bytes: int, row_bytes: int) -> int:
    """Rows per chunk of a collection whose rows hold about `row_bytes` bytes each: `chunk_size`, or fewer when that
    many would hold more than `max_bytes` (0: no bound; a `row_bytes` of 0 is unknown); at least one. A chunk's
    events are held in memory until it commits, so this bounds a snapshot's memory by bytes as well as by rows."""
    if max_bytes <= 0 or row_bytes <= 0:
        return chunk_size
    return max(1, min(chunk_size, max_bytes // row_bytes))


def estimated_row_bytes(source: Any, collection: str) -> int:
    """`source.row_bytes(collection)`; 0 (unknown) from a source without that method."""
    row_bytes = getattr(source, "row_bytes", None)
    return row_bytes(collection) if row_bytes is not None else 0


def planned_chunk_rows(source: Any, collection: str, chunk_size: int, max_bytes: int) -> int:
    """rows_per_chunk for `collection`, its rows' size as the source estimates it (estimated_row_bytes)."""
    if max_bytes <= 0:
        return chunk_size
    return rows_per_chunk(chunk_size, max_bytes, estimated_row_bytes(source, collection))


def plan_bytes(bounds: list) -> int:
    """About how many bytes `bounds` take in the offset record (JSON; a value JSON does not know counts as its str)."""
    return len(json.dumps(bounds, default=str))


def thinned(bounds: list, factor: int) -> list:
    """Every `factor`-th boundary from the first, and the last: chunks of up to `factor` planned chunks each, which
    cover the same keys (a chunk of several rows is read as one)."""
    if factor <= 1 or len(bounds) <= 2:
        return bounds
    return [*bounds[:-1:factor], bounds[-1]]


def chunks_of(namespace: str, bounds: list, first_number: int, chunk_type: type[Chunk] = Chunk) -> list[Chunk]:
    """The chunks that `bounds` (as planned) make, numbered from `first_number`."""
    count = len(bounds) - 1 if bounds else 0
    return [
        chunk_type(namespace, i, first_number + i, bounds[i], bounds[i + 1], i == count - 1, count)
        for i in range(count)
    ]


def snapshot_marker(chunk: Chunk, mark_last: bool, first_row: bool, last_row: bool) -> str:
    """`source.snapshot` of a row of a chunk, as Debezium marks it: `last` on the snapshot's last row, `first` on
    the first row of its first table (chunk number 0), `last_in_data_collection` on each table's last row,
    `first_in_data_collection` on each table's first, `true` on the rest; a row that is several of these takes the
    first named here."""
    table_first = first_row and chunk.index == 0
    table_last = last_row and chunk.index == chunk.count - 1
    if last_row and mark_last:
        return "last"
    if table_first and chunk.number == 0:
        return "first"
    if table_last:
        return "last_in_data_collection"
    return "first_in_data_collection" if table_first else "true"
