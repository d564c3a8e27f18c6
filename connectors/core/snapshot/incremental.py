"""Incremental (ad-hoc) snapshots while streaming continues: the DBLog watermark algorithm, for every source.

Requested through the pipeline's `request_incremental_snapshot()` (any thread; the REST API calls it) or by
Debezium's signals read from the source's stream (`execute-snapshot`, `stop-snapshot`, `pause-snapshot`,
`resume-snapshot`; `data` may be a document or JSON text). Each data collection is planned into key-range
chunks of `incremental.snapshot.chunk.size` rows by the source, then, one chunk at a time, inside the streaming
loop:

1. **open the window**: the source writes a low watermark into its stream (MongoDB: a document inserted into
   `signal.data.collection`);
2. **read the chunk** into a buffer keyed by row key;
3. **close the window**: the source writes the high watermark (MongoDB: the document deleted);
4. the loop keeps processing the stream. Between the open and the close events, every change to a key in the
   buffer removes that key: the stream carries a newer state than the row read. At the close event the rows
   still buffered are emitted (`op: "r"`, `source.snapshot: "incremental"`) at that stream position, in the same
   Kafka transaction as the progress that moves to the next chunk.

The source's read must see everything before the low watermark (MongoDB: the same causally consistent session),
and nothing it sees is newer than the high watermark. A row is therefore emitted only at a position where no later
streamed change to it has been emitted yet: a chunk row never overwrites a newer streamed change. Progress
(collections left, the current collection's remaining boundaries, the next chunk) is part of the offset record
(`incremental_snapshot`), so it survives restarts; a window interrupted by a crash is simply read again.

What the source provides is `WatermarkSource` (below): the stream events that matter here, its collections, plans,
windows and rows.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from connectors.core.snapshot.chunks import Chunk, Plan, planned_chunk_rows
from connectors.core.snapshot.metrics import SnapshotMetrics

log = logging.getLogger(__name__)

SIGNAL_EXECUTE = "execute-snapshot"
SIGNAL_STOP = "stop-snapshot"
SIGNAL_PAUSE = "pause-snapshot"
SIGNAL_RESUME = "resume-snapshot"
WATERMARK_PREFIX = "cdc-wm-"  # window ids: a signal whose id starts so is one of ours, not a request
WINDOW_TIMEOUT_S = 120.0  # a window whose close event never arrives is abandoned and read again
MAX_INCREMENTAL_CHUNKS = 1024  # per collection: keeps the offset record written with each batch small


@dataclass(frozen=True)
class StreamEvent:
    """What a change is to the incremental snapshot, as the source's `WatermarkSource.classify` says."""

    kind: str  # WATERMARK_OPEN | WATERMARK_CLOSE | SIGNAL | ROW
    key: Any = None  # ROW: the row's key as the change has it; watermarks: the window id; SIGNAL: its id
    namespace: str | None = None  # ROW: its data collection
    signal: dict | None = None  # SIGNAL: the signal ({"id", "type", "data"})
    old_key: Any = None  # ROW: the key the row had before a change that moved it (else None)


# A ROW event's key when the change may touch any row of its collection (a truncate, a row of a table without a
# key, a schema change): the rows read are no longer trustworthy, so the window's chunk is read again.
EVERY_ROW = object()


WATERMARK_OPEN = "open"
WATERMARK_CLOSE = "close"
SIGNAL = "signal"
ROW = "row"


def row_event(namespace: str, key: Any, old_key: Any) -> StreamEvent:
    """A change to a keyed row of `namespace`, from its key after the change and before it (either None when the
    change has no such image: an insert, a delete); `old_key` stays only when the change moved the row."""
    if key is None:
        key, old_key = old_key, None
    elif old_key == key:
        old_key = None
    return StreamEvent(ROW, key, namespace, old_key=old_key)


class WatermarkSource(Protocol):
    """A partition's side of incremental snapshots."""

    has_signals: bool  # watermarks (and signals) can be written and read back through the stream
    chunk_type: type[Chunk]  # the source's chunks (core.snapshot.chunks.Chunk or a subclass)
    transient_errors: tuple[type[BaseException], ...]  # a window that failed with these is read again later

    def require_signals(self) -> None:
        """Raises ConnectorError saying what is missing when incremental snapshots cannot run."""

    def parse_filter(self, value: Any) -> Any:
        """A filter given by a request or a signal (None when empty); ValueError when it is not one."""

    def classify(self, change: Any) -> StreamEvent | None:
        """What `change` (an item of the change queue) is here; None: nothing (not a row, signal or watermark)."""

    def row_key(self, collection: str, key: Any) -> Any:
        """A row's key as `read_window` keys its rows (hashable), from a ROW event's key."""

    def matching(self, patterns: list[re.Pattern]) -> list[str]:
        """The captured data collections whose names match one of `patterns` (fullmatch), sorted."""

    def estimated_rows(self, collection: str) -> int | None: ...

    def plan(self, collection: str, chunk_size: int, max_chunks: int) -> Plan: ...

    # optional: def row_bytes(self, collection: str) -> int -- about how many bytes a row holds (0: unknown), for
    #     chunks bounded in bytes (core.snapshot.chunks.planned_chunk_rows)

    def read_window(self, window_id: str, chunk: Chunk, filter: Any, snapshot_id: str,  # noqa: A002
                    read: Callable[[dict], None]) -> None:
        """Writes the low watermark, reads the chunk's rows as {key: row} in read order, calls `read(rows)`, then
        writes the high watermark."""

    def emit(self, chunk: Chunk, rows: list, builder: Any) -> list:
        """The Kafka messages of the rows still buffered when the window closes (snapshot reads)."""

    def delete_stale_watermarks(self, prefix: str) -> None: ...

    def describe_bound(self, value: Any) -> str: ...


@dataclass
class PendingCollection:
    """A collection of an incremental snapshot; `bounds` start at the lower bound of chunk `chunk`."""

    namespace: str
    filter: dict | None = None
    bounds: list | None = None  # None: not planned yet
    chunk: int = 0
    chunks: int = 0
    rows: int = 0
    estimated: int = 0

    @property
    def finished(self) -> bool:
        return self.bounds is not None and self.chunk >= self.chunks

    def current_chunk(self, chunk_type: type[Chunk] = Chunk) -> Chunk:
        assert self.bounds is not None and len(self.bounds) >= 2
        last = self.chunk == self.chunks - 1
        return chunk_type(self.namespace, self.chunk, self.chunk, self.bounds[0], self.bounds[1], last, self.chunks)

    def advance(self, rows: int) -> None:
        assert self.bounds is not None
        self.bounds = self.bounds[1:]
        self.chunk += 1
        self.rows += rows

    def to_json(self) -> dict:
        return {"ns": self.namespace, "filter": self.filter, "bounds": self.bounds, "chunk": self.chunk,
                "chunks": self.chunks, "rows": self.rows, "estimated": self.estimated}

    @classmethod
    def from_json(cls, value: dict) -> PendingCollection:
        bounds = value.get("bounds")
        return cls(value["ns"], value.get("filter"), list(bounds) if bounds is not None else None,
                   int(value.get("chunk") or 0), int(value.get("chunks") or 0), int(value.get("rows") or 0),
                   int(value.get("estimated") or 0))


@dataclass
class IncrementalState:
    id: str
    collections: list[PendingCollection] = field(default_factory=list)
    started_ms: int = 0
    paused: bool = False
    completed: dict[str, int] = field(default_factory=dict)  # finished collections: rows

    def to_json(self) -> dict:
        return {"id": self.id, "collections": [c.to_json() for c in self.collections], "started_ms": self.started_ms,
                "paused": self.paused, "completed": self.completed}

    @classmethod
    def from_json(cls, value: dict) -> IncrementalState:
        return cls(str(value["id"]), [PendingCollection.from_json(c) for c in value.get("collections") or []],
                   int(value.get("started_ms") or 0), bool(value.get("paused")), dict(value.get("completed") or {}))


@dataclass
class Window:
    id: str  # _id of the watermark document
    chunk: Chunk
    rows: dict  # chunk rows still to emit, by key, in read order
    read: int = 0
    opened: bool = False
    dropped: int = 0
    started: float = field(default_factory=time.monotonic)


class IncrementalSnapshots:
    """The incremental snapshot of one pipeline. API methods are thread-safe; the rest runs in the pipeline loop."""

    def __init__(self, pipeline, source: WatermarkSource, metrics: SnapshotMetrics, connector: str, partition: str,
                 chunk_size: int, chunk_max_bytes: int = 0):
        """`pipeline`: the core pipeline (its `backoff`, its `builder`); a chunk holds `chunk_size` rows, fewer when
        they would hold more than `chunk_max_bytes` (core.snapshot.chunks.rows_per_chunk)."""
        self.pipeline = pipeline
        self.source = source
        self.metrics = metrics
        self.chunk_size = chunk_size
        self.chunk_max_bytes = chunk_max_bytes
        self.signal = True if source.has_signals else None  # not None: signals and watermarks go through the stream
        self.state: IncrementalState | None = None
        self._lock = threading.Lock()
        self._requests: list[tuple] = []
        self._window: Window | None = None
        self._attached = False
        self._dirty = False
        self._retry_at = 0.0
        self._failures = 0
        self._watermark_prefix = f"{WATERMARK_PREFIX}{connector}-{partition}-"

    # -- API (any thread) -------------------------------------------------------------------------------------

    def request(self, collections: list[str] | str, filter: Any = None,  # noqa: A002 - Debezium's word
                filters: dict[str, Any] | None = None) -> str:
        """Queues an incremental snapshot of the captured collections matching `collections` (regexes of
        `<db>.<collection>`, as Debezium's `data-collections`); `filter` applies to all of them, `filters` per
        collection. Returns a request id. Taken up by the streaming loop within one poll interval."""
        self.source.require_signals()
        if isinstance(collections, str):
            collections = [collections]
        patterns = [str(c) for c in collections or [] if str(c).strip()]
        if not patterns:
            raise ValueError("name at least one collection (<database>.<collection>, or a regex of them)")
        for pattern in patterns:
            re.compile(pattern)
        common = self.source.parse_filter(filter)
        per_collection = {name: self.source.parse_filter(value) for name, value in (filters or {}).items()}
        request_id = uuid.uuid4().hex[:12]
        with self._lock:
            self._requests.append(("execute", patterns, common, per_collection, request_id))
        return request_id

    def stop(self, collections: list[str] | None = None) -> None:
        """Stops the incremental snapshot (only the matching collections when `collections` is given)."""
        with self._lock:
            self._requests.append(("stop", list(collections) if collections else None))

    def pause(self) -> None:
        with self._lock:
            self._requests.append(("pause",))

    def resume(self) -> None:
        with self._lock:
            self._requests.append(("resume",))

    # -- state ------------------------------------------------------------------------------------------------

    def restore(self, value: dict | None) -> None:
        try:
            self.state = IncrementalState.from_json(value) if value else None
        except (KeyError, TypeError, ValueError) as error:
            log.warning("ignoring unreadable incremental snapshot progress (%s)", error)
            self.state = None

    def state_json(self) -> dict | None:
        return self.state.to_json() if self.state is not None else None

    @property
    def active(self) -> bool:
        return self.state is not None

    def take_dirty(self) -> bool:
        dirty, self._dirty = self._dirty, False
        return dirty

    # -- loop hooks -------------------------------------------------------------------------------------------

    def attach(self) -> None:
        """Streaming (re)started: forget any window, clean up our stale watermarks."""
        self._attached = True
        self._window = None
        if self.signal is not None and self.state is not None:
            self.source.delete_stale_watermarks(self._watermark_prefix)
        if self.state is not None:
            self._start_metrics(resumed=True)
            log.info("incremental snapshot %s resumed: %s", self.state.id,
                     ", ".join(c.namespace for c in self.state.collections))

    def detach(self) -> None:
        self._attached = False
        self._window = None

    def step(self) -> None:
        """Takes up requests and, when no window is open, opens the next one (reads the next chunk)."""
        self._apply_requests()
        if not self._attached or self.state is None or self.state.paused:
            return
        if self._window is not None:
            if time.monotonic() - self._window.started > WINDOW_TIMEOUT_S:
                log.warning("incremental snapshot: the watermarks of chunk %s never came back through the change "
                            "stream (are they filtered out?); reading the chunk again", self._window.chunk.label)
                self._window = None
            return
        if time.monotonic() < self._retry_at:
            return
        try:
            current = self._current()
            if current is not None:
                self._open_window(current)
            self._failures = 0
        except self.source.transient_errors as error:
            self._failures += 1
            delay = self.pipeline.backoff.delay(self._failures)
            self._retry_at = time.monotonic() + delay
            self._window = None
            log.warning("incremental snapshot: reading a chunk failed (%s); retry in %.1fs", error, delay)

    def on_change(self, change: Any) -> list:
        """Called for each change, in stream order, before its own messages; returns messages to emit first."""
        event = self.source.classify(change)
        if event is None:
            return []
        kind = event.kind
        window = self._window
        if kind == ROW:
            if window is None or not window.opened or event.namespace != window.chunk.namespace:
                return []
            if event.key is EVERY_ROW:
                log.debug("incremental snapshot: chunk %s changed as a whole during its window; reading it again",
                          window.chunk.label)
                self._window = None  # its close event no longer matches: step() opens a new window
                return []
            for key in (event.key, event.old_key):
                if key is not None and window.rows.pop(self.source.row_key(event.namespace, key), None) is not None:
                    window.dropped += 1
            return []
        if kind == WATERMARK_OPEN:
            if window is not None and event.key == window.id:
                window.opened = True
            return []
        if kind == WATERMARK_CLOSE:
            if window is not None and event.key == window.id:
                return self._close_window()
            return []
        if kind == SIGNAL and not (isinstance(event.key, str) and event.key.startswith(WATERMARK_PREFIX)):
            self._on_signal(event.signal or {})
        return []

    # -- requests and signals ---------------------------------------------------------------------------------

    def _apply_requests(self) -> None:
        with self._lock:
            requests, self._requests = self._requests, []
        for request in requests:
            kind = request[0]
            if kind == "execute":
                _, patterns, common, per_collection, request_id = request
                self._execute(patterns, common, per_collection, f"API request {request_id}")
            elif kind == "stop":
                self._stop(request[1])
            elif kind == "pause":
                self._pause(True)
            elif kind == "resume":
                self._pause(False)

    def _on_signal(self, document: dict) -> None:
        kind = document.get("type")
        data = document.get("data") or {}
        try:
            if isinstance(data, str):
                data = json.loads(data) if data.strip() else {}
            if not isinstance(data, dict):
                raise ValueError("data is not a document")
            snapshot_type = str(data.get("type") or "incremental").lower()
            collections = data.get("data-collections") or []
            if isinstance(collections, str):
                collections = [collections]
            if kind == SIGNAL_EXECUTE:
                if snapshot_type != "incremental":
                    log.warning("signal %s: snapshot type %r is not supported (use incremental); ignored",
                                document.get("id"), snapshot_type)
                    return
                if self.signal is None:
                    return
                common = self.source.parse_filter(data.get("additional-condition"))
                per_collection = {}
                for condition in data.get("additional-conditions") or []:
                    per_collection[condition["data-collection"]] = self.source.parse_filter(condition.get("filter"))
                if not collections:
                    raise ValueError("data-collections is empty")
                self._execute([str(c) for c in collections], common, per_collection, f"signal {document.get('id')}")
            elif kind == SIGNAL_STOP:
                self._stop([str(c) for c in collections] or None)
            elif kind == SIGNAL_PAUSE:
                self._pause(True)
            elif kind == SIGNAL_RESUME:
                self._pause(False)
        except (ValueError, KeyError, TypeError, re.error) as error:
            log.warning("ignoring signal %s of type %r: %s", document.get("id"), kind, error)

    def _execute(self, patterns: list[str], common: dict | None, per_collection: dict, origin: str) -> None:
        namespaces = self._matching(patterns)
        if not namespaces:
            log.warning("incremental snapshot (%s): no captured collection matches %s", origin, patterns)
            return
        if self.state is None:
            started_ms = int(time.time() * 1000)
            self.state = IncrementalState(f"i{started_ms:x}-{uuid.uuid4().hex[:6]}", started_ms=started_ms)
            self.metrics.start("incremental", self.state.id, started_ms, {})
        queued = {c.namespace for c in self.state.collections}
        for namespace in namespaces:
            if namespace in queued:
                continue
            query = common
            for pattern, value in per_collection.items():
                if re.fullmatch(pattern, namespace, re.IGNORECASE):
                    query = value
            self.state.collections.append(PendingCollection(namespace, query))
            self.state.completed.pop(namespace, None)
            self.metrics.add_collection(namespace, self._estimated_chunks(namespace), 0)
        self.metrics.set_queue([c.namespace for c in self.state.collections])
        log.info("incremental snapshot %s (%s): %s", self.state.id, origin, ", ".join(namespaces))
        self._dirty = True

    def _stop(self, patterns: list[str] | None) -> None:
        if self.state is None:
            return
        if patterns is None:
            log.info("incremental snapshot %s stopped", self.state.id)
            self.state = None
            self._window = None
            self.metrics.finish(aborted=True)
            self._dirty = True
            return
        kept = [c for c in self.state.collections
                if not any(re.fullmatch(p, c.namespace, re.IGNORECASE) for p in patterns)]
        if self._window is not None and self._window.chunk.namespace not in {c.namespace for c in kept}:
            self._window = None
        self.state.collections = kept
        self.metrics.set_queue([c.namespace for c in kept])
        self._dirty = True
        if not kept:
            self._complete(aborted=True)

    def _pause(self, paused: bool) -> None:
        if self.state is None or self.state.paused == paused:
            return
        self.state.paused = paused
        self.metrics.set_paused(paused)
        self._dirty = True
        log.info("incremental snapshot %s %s", self.state.id, "paused" if paused else "resumed")

    def _matching(self, patterns: list[str]) -> list[str]:
        return self.source.matching([re.compile(p, re.IGNORECASE) for p in patterns])

    def _estimated_chunks(self, namespace: str) -> int:
        count = self.source.estimated_rows(namespace)
        if count is None:
            return 1
        return max(0, -(-count // self.chunk_size))

    # -- windows ----------------------------------------------------------------------------------------------

    def _current(self) -> PendingCollection | None:
        state = self.state
        while state is not None and state.collections:
            current = state.collections[0]
            if current.bounds is None:
                rows = planned_chunk_rows(self.source, current.namespace, self.chunk_size, self.chunk_max_bytes)
                plan = self.source.plan(current.namespace, rows, MAX_INCREMENTAL_CHUNKS)
                current.bounds = plan.bounds
                current.chunks = len(plan.bounds) - 1 if plan.bounds else 0
                current.estimated = plan.estimated_count
                self.metrics.add_collection(current.namespace, current.chunks, plan.estimated_count)
                self._dirty = True
                log.info("incremental snapshot %s: %s planned as %d chunks (%s)", state.id, current.namespace,
                         current.chunks, plan.method)
            if not current.finished:
                return current
            self._finish_collection(current)
        if state is not None and not state.collections:
            self._complete()
        return None

    def _open_window(self, current: PendingCollection) -> None:
        chunk = current.current_chunk(self.source.chunk_type)
        window_id = f"{self._watermark_prefix}{uuid.uuid4().hex}"

        def read(rows: dict) -> None:  # the chunk is read, its high watermark not written yet
            self._window = Window(window_id, chunk, rows, read=len(rows))
            self.metrics.set_current_chunk({"collection": chunk.namespace, "chunk": chunk.index,
                                            "chunks": chunk.count, "rows": len(rows),
                                            "from": self.source.describe_bound(chunk.lower),
                                            "to": self.source.describe_bound(chunk.upper)})
            self.metrics.record_chunk_read()

        self.source.read_window(window_id, chunk, current.filter, self.state.id, read)

    def _close_window(self) -> list:
        window, self._window = self._window, None
        state = self.state
        if window is None or state is None or not state.collections:
            return []
        current = state.collections[0]
        if current.namespace != window.chunk.namespace or current.chunk != window.chunk.index:
            return []  # the collection was stopped or restarted meanwhile
        messages = self.source.emit(window.chunk, list(window.rows.values()), self.pipeline.builder)
        emitted = len(window.rows)
        current.advance(emitted)
        self.metrics.record_chunk_committed(current.namespace, emitted)
        self.metrics.record_dropped(window.dropped)
        self.metrics.set_current_chunk(None)
        log.debug("incremental snapshot %s: chunk %s emitted %d of %d rows (%d changed in the window)", state.id,
                  window.chunk.label, emitted, window.read, window.dropped)
        if current.finished:
            self._finish_collection(current)
            if not state.collections:
                self._complete()
        self._dirty = True
        return messages

    def _finish_collection(self, current: PendingCollection) -> None:
        state = self.state
        if state is None:
            return
        state.collections.remove(current)
        state.completed[current.namespace] = current.rows
        self.metrics.set_queue([c.namespace for c in state.collections])
        log.info("incremental snapshot %s: %s done, %d documents", state.id, current.namespace, current.rows)
        self._dirty = True

    def _complete(self, aborted: bool = False) -> None:
        if self.state is None:
            return
        log.info("incremental snapshot %s %s", self.state.id, "stopped" if aborted else "completed")
        self.state = None
        self._window = None
        self.metrics.finish(aborted=aborted)
        self._dirty = True

    def _start_metrics(self, resumed: bool) -> None:
        state = self.state
        assert state is not None
        collections: dict[str, tuple[int, int, int, int]] = {}
        for namespace, rows in state.completed.items():
            collections[namespace] = (1, 1, rows, rows)
        for c in state.collections:
            total = c.chunks if c.bounds is not None else self._estimated_chunks(c.namespace)
            collections[c.namespace] = (total, c.chunk, c.rows, c.estimated)
        self.metrics.start("incremental", state.id, state.started_ms, collections)
        self.metrics.set_paused(state.paused)
        self.metrics.set_queue([c.namespace for c in state.collections])
