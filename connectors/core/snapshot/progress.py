"""Progress of a (blocking) snapshot, as kept in the `snapshot` field of the pipeline's offset record.

```json
{"id": "18f3a…-5c2e1d", "resume_token": {…}, "cluster_time": {"t": …, "i": …}, "started_ms": …,
 "collections": [{"ns": "shop.orders", "bounds": [{"$oid": …}, …], "done": "1101", "rows": 16384,
                  "estimated": 30000, "method": "splitVector"}],
 "completed": false}
```

`bounds` are the planned chunk boundaries (see `chunks.py`), `done` has one character per chunk (`1` = its events
are committed). The plan is written before the first chunk is read, so a restart reuses the same stream position,
the same chunks and the same chunk numbers; only chunks still `0` are read again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bson import Timestamp

from connectors.snapshots.chunks import Chunk, chunks_of


@dataclass
class CollectionProgress:
    namespace: str
    bounds: list = field(default_factory=list)
    done: list[bool] = field(default_factory=list)
    rows: int = 0
    estimated: int = 0
    method: str = ""

    @property
    def chunk_count(self) -> int:
        return len(self.bounds) - 1 if self.bounds else 0

    @property
    def chunks_done(self) -> int:
        return sum(self.done)

    def to_json(self) -> dict:
        return {
            "ns": self.namespace,
            "bounds": self.bounds,
            "done": "".join("1" if d else "0" for d in self.done),
            "rows": self.rows,
            "estimated": self.estimated,
            "method": self.method,
        }

    @classmethod
    def from_json(cls, value: dict) -> CollectionProgress:
        bounds = list(value.get("bounds") or [])
        done = [c == "1" for c in str(value.get("done") or "")]
        count = len(bounds) - 1 if bounds else 0
        done = (done + [False] * count)[:count]
        return cls(value["ns"], bounds, done, int(value.get("rows") or 0), int(value.get("estimated") or 0),
                   str(value.get("method") or ""))


@dataclass
class SnapshotProgress:
    id: str = ""
    resume_token: dict | None = None
    cluster_time: Timestamp | None = None
    collections: list[CollectionProgress] = field(default_factory=list)
    started_ms: int = 0
    completed: bool = False
    planned: bool = False
    remote: bool = False  # chunks were handed to self-committing workers (chunk markers exist)

    # -- chunks ---------------------------------------------------------------------------------------------

    def chunks(self) -> list[Chunk]:
        """Every chunk in plan order, numbered across the snapshot."""
        out: list[Chunk] = []
        for collection in self.collections:
            out.extend(chunks_of(collection.namespace, collection.bounds, len(out)))
        return out

    def collection(self, namespace: str) -> CollectionProgress:
        for collection in self.collections:
            if collection.namespace == namespace:
                return collection
        raise KeyError(namespace)

    def is_done(self, chunk: Chunk) -> bool:
        return self.collection(chunk.namespace).done[chunk.index]

    def mark_done(self, chunk: Chunk, rows: int) -> None:
        collection = self.collection(chunk.namespace)
        if not collection.done[chunk.index]:
            collection.done[chunk.index] = True
            collection.rows += rows

    def final_chunk(self) -> Chunk | None:
        """The chunk read last, on its own, whose last document carries `source.snapshot: "last"`."""
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
            "resume_token": self.resume_token,
            "cluster_time": {"t": self.cluster_time.time, "i": self.cluster_time.inc} if self.cluster_time else None,
            "started_ms": self.started_ms,
            "collections": [c.to_json() for c in self.collections],
            "completed": self.completed,
            "remote": self.remote,
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> SnapshotProgress:
        """Progress as stored; an unreadable or older layout starts a new snapshot (nothing is lost by that)."""
        collections = value.get("collections") or []
        if not value.get("id") or value.get("resume_token") is None or any(
            not isinstance(c, dict) for c in collections
        ):
            return cls()
        ct = value.get("cluster_time")
        return cls(
            id=str(value["id"]),
            resume_token=value.get("resume_token"),
            cluster_time=Timestamp(int(ct["t"]), int(ct["i"])) if ct else None,
            collections=[CollectionProgress.from_json(c) for c in collections],
            started_ms=int(value.get("started_ms") or 0),
            completed=bool(value.get("completed")),
            planned=True,
            remote=bool(value.get("remote")),
        )
