"""MongoDB's snapshot progress: the core's (connectors.core.snapshot.progress) with the change stream position the
snapshot started at, stored as it always was:

```json
{"id": "18f3a…-5c2e1d", "resume_token": {…}, "cluster_time": {"t": …, "i": …}, "started_ms": …, "collections": […],
 "completed": false, "remote": false}
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bson import Timestamp

from connectors.core.snapshot.progress import CollectionProgress, SnapshotStart
from connectors.core.snapshot.progress import SnapshotProgress as CoreProgress
from connectors.mongodb.position import MongoPosition
from connectors.mongodb.snapshots.chunks import Chunk

__all__ = ["CollectionProgress", "SnapshotProgress"]


@dataclass
class SnapshotProgress(CoreProgress):
    resume_token: dict | None = None  # streaming resumes after it once the snapshot is done
    cluster_time: Timestamp | None = None  # the snapshot's read time (source.ts_ms of its events)

    chunk_type = Chunk

    def set_start(self, start: SnapshotStart) -> None:
        self.resume_token = start.position.token
        self.cluster_time = start.read_at

    def start_json(self) -> dict:
        ct = self.cluster_time
        return {"resume_token": self.resume_token, "cluster_time": {"t": ct.time, "i": ct.inc} if ct else None}

    @classmethod
    def start_from_json(cls, value: dict[str, Any]) -> dict | None:
        if value.get("resume_token") is None:
            return None
        ct = value.get("cluster_time")
        return {"resume_token": value["resume_token"],
                "cluster_time": Timestamp(int(ct["t"]), int(ct["i"])) if ct else None}

    def stream_position(self) -> MongoPosition:
        return MongoPosition(self.resume_token, self.cluster_time)

    @property
    def read_at(self) -> Timestamp | None:
        return self.cluster_time
