"""Progress of a (blocking) snapshot, as kept in the `snapshot` field of the pipeline's offset record.

```json
{"id": "18f3a…-5c2e1d", <the source's start fields>, "started_ms": …,
 "collections": [{"ns": "shop.orders", "bounds": [{"$oid": …}, …], "done": "1101", "rows": 16384,
                  "estimated": 30000, "method": "splitVector"}],
 "completed": false}
```

The start fields say where streaming resumes once the snapshot is done (MongoDB: `resume_token` and
`cluster_time`); each source keeps them in its subclass of `SnapshotProgress`. `bounds` are the planned chunk
boundaries (see `chunks.py`), `done` has one character per chunk (`1` = its events are committed), `reads` (only
when a source's chunks say where they were read: chunk tasks, resumed snapshots' views) where chunks were read, the
chunks read alike under one key of index ranges (`"0-41,43": {…}`, `grouped_reads`). The plan is
written before the first chunk is read, so a restart reuses the same stream position, the same chunks and the
same chunk numbers; only chunks still `0` are read again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from connectors.core.snapshot.chunks import Chunk, chunks_of


@dataclass
class SnapshotStart:
    """Where an initial snapshot begins (taken before anything is read): streaming resumes at `position` once it is
    done; `read_at` goes with every chunk task (the source's time stamp of snapshot events); `fields` are kept in
    the progress (`SnapshotProgress.start_json`)."""

    position: Any
    read_at: Any = None
    fields: dict = field(default_factory=dict)


@dataclass
class CollectionProgress:
    namespace: str
    bounds: list = field(default_factory=list)
    done: list[bool] = field(default_factory=list)
    rows: int = 0
    estimated: int = 0
    method: str = ""
    reads: dict[int, dict] = field(default_factory=dict)  # chunk index -> where a self-committed chunk was read

    @property
    def chunk_count(self) -> int:
        return len(self.bounds) - 1 if self.bounds else 0

    @property
    def chunks_done(self) -> int:
        return sum(self.done)

    def to_json(self) -> dict:
        value = {
            "ns": self.namespace,
            "bounds": self.bounds,
            "done": "".join("1" if d else "0" for d in self.done),
            "rows": self.rows,
            "estimated": self.estimated,
            "method": self.method,
        }
        if self.reads:
            value["reads"] = grouped_reads(self.reads)
        return value

    @classmethod
    def from_json(cls, value: dict) -> CollectionProgress:
        bounds = list(value.get("bounds") or [])
        done = [c == "1" for c in str(value.get("done") or "")]
        count = len(bounds) - 1 if bounds else 0
        done = (done + [False] * count)[:count]
        reads = {index: read for indexes, read in (value.get("reads") or {}).items() if isinstance(read, dict)
                 for index in index_ranges(indexes)}
        return cls(value["ns"], bounds, done, int(value.get("rows") or 0), int(value.get("estimated") or 0),
                   str(value.get("method") or ""), reads)


def grouped_reads(reads: dict[int, dict]) -> dict[str, dict]:
    """`reads` (chunk index -> where it was read) as the offset record keeps them: the chunks read alike under one
    key of index ranges ("0-41,43"), so a plan of thousands of chunks read in one view holds one entry, not one a
    chunk (which outgrew the record, one Kafka message)."""
    indexes_of: dict[str, list[int]] = {}
    alike: dict[str, dict] = {}
    for index, read in sorted(reads.items()):
        text = json.dumps(read, sort_keys=True, default=str)
        indexes_of.setdefault(text, []).append(index)
        alike.setdefault(text, read)
    return {ranges_text(indexes): alike[text] for text, indexes in indexes_of.items()}


def ranges_text(indexes: list[int]) -> str:
    """Sorted indexes as "a-b,c": runs of consecutive ones as their ends."""
    runs: list[list[int]] = []
    for index in indexes:
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return ",".join(str(low) if low == high else f"{low}-{high}" for low, high in runs)


def index_ranges(text: str) -> list[int]:
    """The indexes `ranges_text` wrote ("7" alone too: the records written one key per chunk)."""
    found: list[int] = []
    for part in str(text).split(","):
        low, _, high = part.partition("-")
        found.extend(range(int(low), int(high or low) + 1))
    return found


@dataclass
class SnapshotProgress:
    """A snapshot's progress. Sources subclass it to keep their start position (`start_json`, `start_from_json`,
    `set_start`, `stream_position`, `read_at`); this base keeps the start fields as JSON values."""

    id: str = ""
    collections: list[CollectionProgress] = field(default_factory=list)
    started_ms: int = 0
    completed: bool = False
    planned: bool = False
    remote: bool = False  # chunks were handed to self-committing workers (chunk markers exist)
    start_fields: dict = field(default_factory=dict)

    chunk_type: ClassVar[type[Chunk]] = Chunk

    # -- the start position (sources override) -------------------------------------------------------------------

    def set_start(self, start: SnapshotStart) -> None:
        self.start_fields = dict(start.fields)

    def start_json(self) -> dict:
        return dict(self.start_fields)

    @classmethod
    def start_from_json(cls, value: dict[str, Any]) -> dict | None:
        """Constructor arguments for the start stored in `value`; None when it has none (a new snapshot)."""
        fields = {name: v for name, v in value.items() if name not in _LAYOUT}
        return {"start_fields": fields} if fields else None

    def stream_position(self) -> Any:
        """Where streaming resumes once the snapshot completed."""
        return self.start_fields.get("position")

    @property
    def read_at(self) -> Any:
        """The source's time stamp every chunk task carries (source.ts of snapshot events)."""
        return self.start_fields.get("read_at")

    # -- chunks ---------------------------------------------------------------------------------------------

    def chunks(self) -> list[Chunk]:
        """Every chunk in plan order, numbered across the snapshot."""
        out: list[Chunk] = []
        for collection in self.collections:
            out.extend(chunks_of(collection.namespace, collection.bounds, len(out), self.chunk_type))
        return out

    def collection(self, namespace: str) -> CollectionProgress:
        for collection in self.collections:
            if collection.namespace == namespace:
                return collection
        raise KeyError(namespace)

    def is_done(self, chunk: Chunk) -> bool:
        return self.collection(chunk.namespace).done[chunk.index]

    def mark_done(self, chunk: Chunk, rows: int, read: dict | None = None) -> None:
        """`read`: where the chunk was read when the source's stream needs to know (a self-committed chunk's marker
        keeps it too)."""
        collection = self.collection(chunk.namespace)
        if not collection.done[chunk.index]:
            collection.done[chunk.index] = True
            collection.rows += rows
            if read is not None:
                collection.reads[chunk.index] = read

    def final_chunk(self) -> Chunk | None:
        """The chunk read last, on its own, whose last row is marked as the snapshot's last (`snapshot: "last"`)."""
        chunks = self.chunks()
        return chunks[-1] if chunks else None

    @property
    def chunk_count(self) -> int:
        return sum(c.chunk_count for c in self.collections)

    @property
    def chunks_done(self) -> int:
        return sum(c.chunks_done for c in self.collections)

    # -- JSON -----------------------------------------------------------------------------------------------

    def to_json(self) -> dict:
        return {
            "id": self.id,
            **self.start_json(),
            "started_ms": self.started_ms,
            "collections": [c.to_json() for c in self.collections],
            "completed": self.completed,
            "remote": self.remote,
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]):
        """Progress as stored; an unreadable or older layout starts a new snapshot (nothing is lost by that)."""
        collections = value.get("collections") or []
        start = cls.start_from_json(value)
        if not value.get("id") or start is None or any(not isinstance(c, dict) for c in collections):
            return cls()
        return cls(
            id=str(value["id"]),
            collections=[CollectionProgress.from_json(c) for c in collections],
            started_ms=int(value.get("started_ms") or 0),
            completed=bool(value.get("completed")),
            planned=True,
            remote=bool(value.get("remote")),
            **start,
        )


_LAYOUT = frozenset({"id", "started_ms", "collections", "completed", "remote"})
