"""The part of a stream's filter after a snapshot that every source shares: which chunk of a table holds a key, and
what is left of a row change once chunks read later than the stream's start hold its old or new row.

A snapshot's stream starts where its first read view was. A chunk read in a later view (a resumed snapshot, a
MySQL chunk task) already holds the changes committed between the two, so the stream drops a change to a key in
that chunk's range when the chunk's view includes it. Each source says where a chunk was read (its read point),
how a change's place compares to it, and how to find a change's key. `KeyRanges.range_of` compares keys in Python:
only for keys Python orders as the server does (integers; PostgreSQL's uuids by their canonical text); a source
that filters other keys asks its server which range holds them (PostgreSQL: connectors/postgres/overlap.py).
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from connectors import ConnectorError

log = logging.getLogger(__name__)
_UNKNOWN = object()


@dataclass(frozen=True)
class ChunkRange:
    """[lower, upper) of a table's key (upper included for a table's last chunk), read at `read` (a source's read
    point)."""

    lower: tuple
    upper: tuple
    upper_inclusive: bool
    read: Any

    def holds(self, key: tuple) -> bool:
        return self.lower <= key and (key <= self.upper if self.upper_inclusive else key < self.upper)


@dataclass(frozen=True)
class KeyRanges:
    """A table's chunks read later than the stream's start: the key columns they were read by, their ranges."""

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

    def read_of(self, key: tuple | None) -> Any | None:
        """The read point of the chunk holding `key` (None: no key, or no chunk here holds it)."""
        found = self.range_of(key) if key is not None else None
        return found.read if found is not None else None

    def to_json(self, point_json: Callable[[Any], Any]) -> dict:
        return {"key": list(self.key), "ranges": [[list(r.lower), list(r.upper), r.upper_inclusive, point_json(r.read)]
                                                  for r in self.ranges]}

    @classmethod
    def from_json(cls, value: dict, point_of_json: Callable[[Any], Any]) -> KeyRanges:
        return cls(tuple(value["key"]), tuple(ChunkRange(tuple(lower), tuple(upper), bool(inclusive),
                                                         point_of_json(read))
                                              for lower, upper, inclusive, read in value["ranges"]))


class ServerKeyLookup:
    """The read points of keys only the server compares (strings under a collation, numerics…): `ask()` asks the
    server for the 1-based number of the range of a table's KeyRanges holding a key (0: none), and each key's
    answer is kept (a row changed many times is asked once). A failure `refused(error)` accepts (the server refused
    the query: the table or its key changed since) lets the change pass, with one warning per table; any other (a
    lost connection) propagates: the pipeline retries its batch, and the filter rides in its offset."""

    CACHE_SIZE = 65536

    def __init__(self, refused: Callable[[BaseException], bool]) -> None:
        self._refused = refused
        self._found: dict[tuple[str, tuple], Any] = {}
        self._failed: set[str] = set()

    def read_of(self, namespace: str, table: KeyRanges, key: tuple | None, ask: Callable[[], int]) -> Any | None:
        """The read point of the range of `table` holding `key` (None: none does, or no key)."""
        if key is None:
            return None
        known = self._found.get((namespace, key), _UNKNOWN)
        if known is not _UNKNOWN:
            return known
        try:
            number = ask()
        except Exception as error:
            if not self._refused(error):
                raise
            if namespace not in self._failed:
                self._failed.add(namespace)
                log.warning("cannot compare the keys of %s with the chunks its resumed snapshot read later (%s): "
                            "its changes from before those reads come again after them", namespace,
                            str(error).strip())
            return None
        read = table.ranges[number - 1].read if number else None
        if len(self._found) >= self.CACHE_SIZE:
            self._found.clear()
        self._found[(namespace, key)] = read
        return read


def integer_key(values: Iterable) -> tuple | None:
    """`values` as a comparable key: None unless every one is an integer."""
    key = tuple(values)
    return key if all(isinstance(v, int) for v in key) else None


def passing_op(op: str, before_held: bool, after_held: bool) -> str | None:
    """What the stream still sends of a row change (`op` c, u or d) whose old row (`before_held`) or new row
    (`after_held`) a chunk read later holds: None when the chunks hold all of it; of an update whose key moved
    between a held range and one that is not, "c" (only its new row, as a create) or "d" (only its old row, as a
    delete); otherwise `op`."""
    if op == "c":
        return None if after_held else op
    if op == "d":
        return None if before_held else op
    if before_held and after_held:
        return None
    if before_held:
        return "c"
    if after_held:
        return "d"
    return op


def ranges_read_later(collections: list, start_place: Any, read_point: Callable[[dict], Any | None],
                      place: Callable[[Any], Any], bound: Callable[[list], tuple] = tuple,
                      ) -> tuple[dict[str, KeyRanges], Any | None]:
    """The KeyRanges per collection of a snapshot's progress (CollectionProgress list) whose chunks were read
    after `start_place`, and the latest of their read points (None: no chunk was). `read_point(read)` is the source's
    read point of a `reads` entry (None: the entry has none), `place(point)` orders read points, `bound(values)`
    turns a plan's boundary into a key."""
    tables: dict[str, KeyRanges] = {}
    latest = None
    for collection in collections:
        key: tuple[str, ...] | None = None
        ranges: list[ChunkRange] = []
        merged_after = -2  # the index of the last chunk in `ranges`
        last = collection.chunk_count - 1
        for index, read in sorted(collection.reads.items()):
            point = read_point(read) if read.get("key") else None
            if point is None or place(point) <= start_place:
                continue  # read at the stream's start: nothing to drop
            if key is not None and tuple(read["key"]) != key:
                raise ConnectorError(f"the chunks of {collection.namespace} were read by different keys "
                                     f"({key} and {tuple(read['key'])}); the table changed during the snapshot")
            key = tuple(read["key"])
            upper = bound(collection.bounds[index + 1])
            if ranges and merged_after == index - 1 and ranges[-1].read == point:
                # chunks next to each other read at one point are one range: fewer to search (a resumed snapshot
                # reads all it has left in one view)
                ranges[-1] = ChunkRange(ranges[-1].lower, upper, index == last, point)
            else:
                ranges.append(ChunkRange(bound(collection.bounds[index]), upper, index == last, point))
            merged_after = index
            if latest is None or place(point) > place(latest):
                latest = point
        if ranges:
            tables[collection.namespace] = KeyRanges(key, tuple(ranges))
    return tables, latest
