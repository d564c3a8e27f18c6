"""The stream's filter after a resumed snapshot (docs/postgres.md, "resumes its plan in a new snapshot").

The slot starts at the plan's consistent point L0; the chunks a resumed snapshot reads are read in the exported
snapshot of a temporary slot created then, at its consistent point L1 > L0: they hold every transaction whose
commit record starts before L1, and no other (pgoutput's Begin carries that commit LSN). The stream from L0 drops
the row changes of those transactions whose key lies in such a chunk's range; a key change half of which a chunk
holds passes as its other half. Once the stream's commits reach L1 nothing is dropped any more, and the filter is
no longer written with the offset. Integer and uuid keys (COMPARABLE_TYPES) are compared here; every other key
(text under its column's collation, numeric, timestamps, composites of them) is compared by the server, which
ordered the plan: one query on the catalog connection for each such key changed before L1 (`ServerKeyOrder`).
A captured TRUNCATE before L1 ends the dropping for its table (`SnapshotOverlap.truncated`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import psycopg
from psycopg import sql

from connectors.core.snapshot.overlap import KeyRanges, ServerKeyLookup, passing_op, ranges_read_later

# format_type() of the key types Python orders as the server does: integers, and uuids by their canonical text
# (fixed-width lowercase hex, so its string order is the server's byte order)
COMPARABLE_TYPES = frozenset({"smallint", "integer", "bigint", "uuid"})
SERVER_ORDER = "server"  # a `reads` entry's "order" for a key only the server compares
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class SnapshotOverlap:
    """Chunk ranges per table ("schema.table") read after the stream's start (their read points are the LSNs
    of the views they were read in), and the latest of those LSNs. The bounds of `server_ordered` tables are the
    key columns' texts, which only the server compares."""

    tables: dict[str, KeyRanges]
    until: int
    server_ordered: frozenset[str] = field(default=frozenset())
    # tables TRUNCATEd before `until`, with that commit's LSN: from it on, their changes all pass (the truncate's
    # event empties the table for a consumer, after the chunks read later: the rows written since must come again)
    truncated: dict[str, int] = field(default_factory=dict)

    def passed(self, commit_lsn: int) -> bool:
        """True once the stream's transactions commit at or after every chunk's view: nothing more to drop."""
        return commit_lsn >= self.until

    def to_json(self) -> dict:
        value: dict[str, Any] = {"until": self.until,
                                 "tables": {name: t.to_json(int) for name, t in self.tables.items()}}
        if self.server_ordered:
            value["server_ordered"] = sorted(self.server_ordered)
        if self.truncated:
            value["truncated"] = dict(self.truncated)
        return value

    @classmethod
    def from_json(cls, value: dict | None) -> SnapshotOverlap | None:
        if not value:
            return None
        return cls({name: KeyRanges.from_json(t, int) for name, t in value["tables"].items()}, int(value["until"]),
                   frozenset(value.get("server_ordered") or ()),
                   {name: int(lsn) for name, lsn in (value.get("truncated") or {}).items()})


def overlap_of(start_lsn: int, collections: list) -> SnapshotOverlap | None:
    """The filter for a snapshot whose stream starts at `start_lsn`, from its CollectionProgress list (chunks whose
    `reads` entry has the LSN of the view they were read in, later than the start, the key they were read by and,
    for a key Python does not compare, the order "server"). The plan's boundaries are the key columns' texts."""
    by_server = {c.namespace for c in collections if any(r.get("order") == SERVER_ORDER for r in c.reads.values())}
    tables, latest = ranges_read_later([c for c in collections if c.namespace not in by_server], start_lsn,
                                       _lsn_of, int, lambda values: tuple(key_value(v) for v in values))
    texts, latest_text = ranges_read_later([c for c in collections if c.namespace in by_server], start_lsn,
                                           _lsn_of, int)
    until = max((lsn for lsn in (latest, latest_text) if lsn is not None), default=None)
    if until is None:
        return None
    return SnapshotOverlap({**tables, **texts}, until, frozenset(texts))


def _lsn_of(read: dict) -> int | None:
    return read.get("lsn")


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


def tuple_texts(values: Sequence | None, positions: Sequence[int]) -> tuple | None:
    """The key columns' texts of a pgoutput tuple at `positions` (None when one is missing: a null, an unchanged
    TOAST value)."""
    if values is None:
        return None
    key = tuple(values[i] for i in positions)
    return key if all(type(v) is str for v in key) else None


# the row of `ranges` holding the key (`k`), compared as the table's key columns, each in its own collation: the
# bounds and the key are read into the table's row type (jsonb_populate_record), as the plan's range_clause did
_RANGE_OF = """SELECT e.n FROM jsonb_populate_record(NULL::{table}, %s::jsonb) AS k,
    jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS e(r, n),
    jsonb_populate_record(NULL::{table}, e.r -> 'l') AS l, jsonb_populate_record(NULL::{table}, e.r -> 'u') AS u
    WHERE ({l}) <= ({k}) AND (({k}) < ({u}) OR ((e.r ->> 'i')::boolean AND ({k}) = ({u}))) LIMIT 1"""


class ServerKeyOrder:
    """Finds which range of a server-ordered table holds a key by asking the server (ServerKeyLookup keeps the
    answers). `read_catalog(read)` runs `read(cursor)` on the builder's catalog connection."""

    def __init__(self) -> None:
        self._queries: dict[str, tuple[sql.Composed, str]] = {}
        self._answers = ServerKeyLookup(_refused)

    def read_of(self, namespace: str, table: KeyRanges, key: tuple | None,
                read_catalog: Callable[[Callable[[Any], Any]], Any]) -> int | None:
        """The read point of the range holding `key` (the key columns' texts; None: none does, or no key)."""
        return self._answers.read_of(namespace, table, key,
                                     lambda: self._range_number(namespace, table, key, read_catalog))

    def _range_number(self, namespace: str, table: KeyRanges, key: tuple,
                      read_catalog: Callable[[Callable[[Any], Any]], Any]) -> int:
        query, ranges = self._query(namespace, table)
        record = json.dumps(dict(zip(table.key, key, strict=True)))
        row = read_catalog(lambda cursor: cursor.execute(query, (record, ranges)).fetchone())
        return row[0] if row else 0

    def _query(self, namespace: str, table: KeyRanges) -> tuple[sql.Composed, str]:
        known = self._queries.get(namespace)
        if known is None:
            schema, name = namespace.split(".", 1)

            def columns(alias: str) -> sql.Composable:
                return sql.SQL(", ").join(sql.Identifier(alias, column) for column in table.key)

            query = sql.SQL(_RANGE_OF).format(table=sql.Identifier(schema, name), k=columns("k"), l=columns("l"),
                                              u=columns("u"))
            ranges = json.dumps([{"l": dict(zip(table.key, r.lower, strict=True)),
                                  "u": dict(zip(table.key, r.upper, strict=True)), "i": r.upper_inclusive}
                                 for r in table.ranges])
            known = self._queries[namespace] = (query, ranges)
        return known


def _refused(error: BaseException) -> bool:
    """A query error (the table or its key changed since the snapshot), not a server gone away (the catalog read
    reconnects once; then the pipeline retries the batch)."""
    return isinstance(error, psycopg.Error) and not isinstance(error, psycopg.OperationalError)


class StreamOverlap:
    """The filter of the stream one pipeline runs now (set when its reader opens, shared with its builder). Once a
    change commits at or after it, the builder stops looking (`filtering`); an offset of an earlier position still
    being committed keeps it (`kept_at`)."""

    def __init__(self) -> None:
        self._current: SnapshotOverlap | None = None
        self.filtering = False  # whether the builder must still ask `passing_op`
        self._server = ServerKeyOrder()

    @property
    def current(self) -> SnapshotOverlap | None:
        return self._current

    @current.setter
    def current(self, overlap: SnapshotOverlap | None) -> None:
        self._current, self.filtering = overlap, overlap is not None
        self._server = ServerKeyOrder()

    def kept_at(self, commit_lsn: int) -> SnapshotOverlap | None:
        """The filter to store with an offset whose last commit is `commit_lsn` (None once that passed it), with
        the truncates committed by then."""
        overlap = self._current
        if overlap is None or overlap.passed(commit_lsn):
            return None
        if any(lsn > commit_lsn for lsn in overlap.truncated.values()):
            return replace(overlap, truncated={name: lsn for name, lsn in overlap.truncated.items()
                                               if lsn <= commit_lsn})
        return overlap

    def truncate(self, namespaces: list[str], commit_lsn: int) -> None:
        """A TRUNCATE of `namespaces` committed at `commit_lsn` came through the stream: the changes of those of
        them that chunks read later hold pass from it on (SnapshotOverlap.truncated)."""
        overlap = self._current
        if overlap is None or overlap.passed(commit_lsn):
            return
        held = {name: commit_lsn for name in namespaces if name in overlap.tables and name not in overlap.truncated}
        if held:
            self._current = replace(overlap, truncated={**overlap.truncated, **held})

    def passing_op(self, namespace: str, op: str, before: tuple | None, after: tuple | None, commit_lsn: int,
                   key_positions, read_catalog: Callable[[Callable[[Any], Any]], Any] | None = None) -> str | None:
        """What the stream still sends of a row change of `namespace` (passing_op); `before`/`after` are its old
        and new tuples, `key_positions(names)` the positions of the named key columns in them (None: not all
        there), `read_catalog` what asks the server about keys only it compares (without it they pass)."""
        overlap = self.kept_at(commit_lsn)
        if overlap is None:
            self.filtering = False
            return op
        table = overlap.tables.get(namespace)
        positions = key_positions(table.key) if table is not None else None
        if positions is None or overlap.truncated.get(namespace, commit_lsn + 1) <= commit_lsn:
            return op
        if namespace not in overlap.server_ordered:
            def read_of(values: tuple | None) -> int | None:
                return table.read_of(tuple_key(values, positions))
        elif read_catalog is None:
            return op
        else:
            def read_of(values: tuple | None) -> int | None:
                return self._server.read_of(namespace, table, tuple_texts(values, positions), read_catalog)

        def held(values: tuple | None) -> bool:
            read = read_of(values)
            return read is not None and commit_lsn < read

        return passing_op(op, held(before), held(after))
