"""Follows ad-hoc incremental snapshot requests inside one running pipeline until they end.

The engine queues a request and works through it in its streaming loop; it does not report per request. This
tracker watches what the pipeline does expose, once a second: the collections still pending in its incremental
snapshot state and its snapshot metrics, and says when a request it follows is done or failed:

- taken up: one of its collections is pending, or a new incremental snapshot lists all of them;
- done: taken up and none of its collections pending any more (the metrics give the documents read);
- failed: the snapshot was stopped, or the pipeline streamed for GRACE_SECONDS without taking it up (the engine
  drops a request no existing captured collection matches, with only a log line).

A request adopted from an earlier pipeline of the same connector (it was running when that one stopped) is done
when this pipeline streams and none of its collections is pending: its progress was restored from the offset.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

GRACE_SECONDS = 15.0


@dataclass
class Tracked:
    request_id: int
    collections: tuple[str, ...]
    baseline: tuple | None  # (snapshot id, captured tables) when it was queued
    adopted: bool = False
    seen: bool = False
    since: float = field(default_factory=time.monotonic)


def _pending(pipeline) -> set[str]:
    incremental = getattr(pipeline, "incremental", None)
    state = getattr(incremental, "state", None)
    if state is None:
        return set()
    return {pending.namespace for pending in list(state.collections)}


def _identity(snapshot: dict) -> tuple | None:
    if snapshot.get("SnapshotKind") != "incremental":
        return None
    return snapshot.get("SnapshotId"), tuple(snapshot.get("CapturedTables") or ())


class SnapshotTracker:
    def __init__(self) -> None:
        self.tracked: dict[int, Tracked] = {}

    def follow(self, request_id: int, collections, pipeline, *, adopted: bool = False) -> None:
        snapshot = _metrics(pipeline)
        self.tracked[request_id] = Tracked(request_id, tuple(collections), _identity(snapshot), adopted=adopted)

    def check(self, pipeline, streaming: bool) -> list[tuple[int, str, str]]:
        """[(request id, "done" | "failed", reason)] of the requests that ended since the last check."""
        if not self.tracked:
            return []
        pending = _pending(pipeline)
        snapshot = _metrics(pipeline)
        identity = _identity(snapshot)
        ended = []
        for tracked in list(self.tracked.values()):
            mine = set(tracked.collections)
            if mine & pending:
                tracked.seen = True
                continue
            if not tracked.seen and identity is not None and identity != tracked.baseline \
                    and mine <= set(identity[1]):
                tracked.seen = True  # started and finished between two checks
            if tracked.seen or (tracked.adopted and streaming):
                if snapshot.get("SnapshotAborted") and mine <= set(snapshot.get("CapturedTables") or ()):
                    ended.append((tracked.request_id, "failed", "the incremental snapshot was stopped before it "
                                                                "finished"))
                else:
                    ended.append((tracked.request_id, "done", _rows(snapshot, tracked.collections)))
            elif streaming and time.monotonic() - tracked.since > GRACE_SECONDS:
                ended.append((tracked.request_id, "failed",
                               f"the pipeline did not take it up: no existing captured collection matches "
                               f"{', '.join(tracked.collections)} (does it exist in the source?)"))
        for request_id, _, _ in ended:
            self.tracked.pop(request_id, None)
        return ended


def _metrics(pipeline) -> dict:
    metrics = getattr(pipeline, "snapshot_metrics", None)
    return metrics.snapshot() if metrics is not None else {}


def _rows(snapshot: dict, collections) -> str:
    scanned = snapshot.get("RowsScanned") or {}
    parts = [f"{name}: {scanned[name]:,} documents" for name in collections if name in scanned]
    return "snapshot done" + (f" ({'; '.join(parts)})" if parts else "")
