"""Reading one replica set's change stream in a background thread into a bounded queue.

The queue decouples MongoDB round trips from Kafka transactions (Debezium's `max.queue.size`). Items are
either change documents or `Idle` markers carrying the post-batch resume token: the marker keeps the stream's
position moving while nothing captured happens, which is what heartbeats commit.

The stream is read a whole batch at a time (`change_batches`), or by pymongo's ChangeStream when the client reads
from other members than the primary. On a resumable failure the reader reopens the stream after the last change it
handed to the queue, so nothing is lost or repeated: at once when the stream had been open (as ChangeStream resumes
by itself), then with exponential backoff; after `max_attempts` consecutive failures it gives up.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pymongo
from bson import Timestamp
from pymongo.errors import ConnectionFailure, OperationFailure, PyMongoError

from connectors import ConnectorError, HistoryLost
from connectors.config.types import CaptureScope
from connectors.core.metrics import StreamingMetrics
from connectors.core.stream import Backoff, ChangeQueue, Idle, ReaderFailed, sampled_size
from connectors.mongodb.change_batches import ChangeCursor
from connectors.mongodb.client import REPLICA_SET_FIX
from connectors.mongodb.errors import ChangeEventTooLarge, NotAReplicaSet
from connectors.mongodb.filters import WatchTarget
from connectors.mongodb.rawjson import RawChangeEvent, decoded, raw_stream_options
from connectors.mongodb.server_errors import as_json, server_message

log = logging.getLogger(__name__)

HISTORY_LOST = 286
ONLY_ON_REPLICA_SETS = 40573  # the server became (or is) a standalone mongod
BSON_OBJECT_TOO_LARGE = 10334  # a change event over 16 MB: MongoDB fails every getMore that reaches it
# ChangeStreamHistoryLost, ChangeStreamFatalError, InvalidResumeToken, $changeStream on a standalone
TOKEN_NOT_FOUND = 280  # ChangeStreamFatalError: "cannot resume stream; the resume token was not found"
FATAL_CODES = {HISTORY_LOST, TOKEN_NOT_FOUND, 260, ONLY_ON_REPLICA_SETS}
# What a probe for an oversized event leaves of it: enough to name it and resume after it.
_WITHOUT_DOCUMENTS = {"$project": {"fullDocument": 0, "fullDocumentBeforeChange": 0, "updateDescription": 0}}


# A raw event waiting in the change queue beyond its BSON bytes: the RawChangeEvent, its bytes object's header and
# its head tuple
QUEUED_RAW_EVENT_BYTES = 200


def queued_event_bytes(item) -> int:
    """What a change event waiting in the change queue is counted as for max.queue.size.in.bytes: a raw event its
    BSON bytes and QUEUED_RAW_EVENT_BYTES; a decoded event (the decoding path) and a marker count 0 (bounded by
    max.queue.size alone)."""
    return len(item.raw) + QUEUED_RAW_EVENT_BYTES if type(item) is RawChangeEvent else 0


@dataclass(frozen=True)
class StartPosition:
    resume_after: dict | None = None
    start_after: dict | None = None
    start_at_operation_time: Timestamp | None = None


def next_cluster_time(ts: Timestamp) -> Timestamp:
    """The first cluster time after `ts`: `startAtOperationTime` with it streams the changes strictly after `ts`
    (MongoDB's own option is inclusive). Every change of one transaction shares the commit's cluster time, so a
    transaction is replayed whole or not at all."""
    if ts.inc < 0xFFFFFFFF:
        return Timestamp(ts.time, ts.inc + 1)
    return Timestamp(ts.time + 1, 0)


@dataclass(frozen=True)
class OversizedSkipped:
    """A change event over MongoDB's 16 MB limit was stepped over (skip policy): the pipeline records it on the
    errors topic and commits the position after it."""

    resume_token: dict
    summary: dict


@dataclass
class StreamOptions:
    full_document: str | None = None  # None | "updateLookup" | "whenAvailable" | "required"
    full_document_before_change: str | None = None  # None | "whenAvailable" | "required"
    batch_size: int = 2048
    max_await_ms: int = 500
    show_expanded_events: bool = False
    # message.too.large.policy=skip: a change event over MongoDB's 16 MB limit is skipped (logged), not fatal
    skip_oversized_events: bool = False


class ChangeStreamReader:
    def __init__(
        self,
        client: pymongo.MongoClient,
        scope: WatchTarget,
        pipeline: list[dict],
        options: StreamOptions,
        start: StartPosition,
        out: ChangeQueue,
        metrics: StreamingMetrics,
        backoff: Backoff,
        stop: threading.Event,
        on_connected: Callable[[], None] | None = None,
        wider: tuple[WatchTarget, list[dict]] | None = None,
    ):
        self._client = client
        self._scope = scope
        self._pipeline = pipeline
        # The deployment-wide target and its pipeline, for a scope narrowed from the include lists: a resume token
        # stored under other include lists may be an event outside the narrowed scope, which the server then cannot
        # find (280) but a deployment-wide stream finds.
        self._wider = wider
        self._options = options
        self._out = out
        self._metrics = metrics
        self._backoff = backoff
        self._stop = stop
        self._on_connected = on_connected
        # Events stay raw BSON (rawjson.RawChangeEvent), queued as they are and written to JSON without being decoded.
        self._raw_options = raw_stream_options(client.codec_options)
        # Read a batch at a time (change_batches) from the primary; a client that reads from other members keeps
        # pymongo's ChangeStream, which pins its cursor's getMores to the member it chose. pymongo opens such a
        # deployment-wide stream on the client itself, with the client's codec options: it decodes the events.
        self._by_batch = client.read_preference.mode == pymongo.ReadPreference.PRIMARY.mode
        if not self._by_batch and scope.scope is CaptureScope.DEPLOYMENT:
            self._raw_options = None
        self._position = start  # where the stream (re)opens
        self._last_change = None  # the last change handed to the queue: a reopened stream resumes after it
        self._failures = 0  # consecutive failed attempts
        self._was_open = False  # the stream opened since the last failure
        self._thread = threading.Thread(target=self._run, name=f"change-stream-{metrics.partition}", daemon=True)

    @property
    def reads_by_batch(self) -> bool:
        """Whether the stream is read a batch at a time (change_batches), not by pymongo's ChangeStream."""
        return self._by_batch

    def pin_start(self) -> None:
        """With no start position ("from now"), fixes now here, as the resume token of a stream opened and closed on
        the calling thread: what commits after this call is read however late the reader's thread opens its stream.
        When the server cannot answer now, now is left to the thread, whose retries report why."""
        if self._position != StartPosition():
            return
        try:
            with self._open(self._position) as stream:
                token = stream.resume_token
        except PyMongoError as error:
            log.info("%s: could not open the change stream yet (%s); it starts when it opens", self._metrics.partition,
                     error)
            return
        if token is not None:
            self._position = StartPosition(resume_after=token)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _watch_target(self):
        if self._scope.scope is CaptureScope.COLLECTION:
            target = self._client[self._scope.database][self._scope.collection]
        elif self._scope.scope is CaptureScope.DATABASE:
            target = self._client[self._scope.database]
        else:
            return self._client
        return target.with_options(codec_options=self._raw_options) if self._raw_options is not None else target

    def _open(self, start: StartPosition, pipeline: list[dict] | None = None):
        kwargs = {
            "pipeline": self._pipeline if pipeline is None else pipeline,
            "batch_size": self._options.batch_size,
            "max_await_time_ms": self._options.max_await_ms,
            "full_document": self._options.full_document,
            "full_document_before_change": self._options.full_document_before_change,
            "resume_after": start.resume_after,
            "start_after": start.start_after,
            "start_at_operation_time": start.start_at_operation_time,
        }
        if self._options.show_expanded_events:
            kwargs["show_expanded_events"] = True
        return self._watch_target().watch(**{k: v for k, v in kwargs.items() if v is not None})

    def _stage(self, start: StartPosition) -> dict:
        """The $changeStream stage's options, as pymongo's ChangeStream writes them."""
        options = self._options
        stage = {"fullDocument": options.full_document, "fullDocumentBeforeChange": options.full_document_before_change,
                 "resumeAfter": start.resume_after, "startAfter": start.start_after,
                 "startAtOperationTime": start.start_at_operation_time,
                 "showExpandedEvents": True if options.show_expanded_events else None}
        return {name: value for name, value in stage.items() if value is not None}

    def _put(self, item) -> bool:
        return self._put_all([item])

    def _put_all(self, items: list) -> bool:
        """Queues `items`, as many at a time as the queue has room for: blocks while it is full (back-pressure), but
        wakes up to honour a stop request (then False). Under max.queue.size.in.bytes each counts as the sampled
        average of their queued_event_bytes (core.stream.sampled_size)."""
        size = sampled_size(items, queued_event_bytes) if self._out.max_bytes and items else 0
        while items and not self._stop.is_set():
            try:
                items = items[self._out.put_many(items, timeout=0.2, item_bytes=size):]
            except queue.Full:
                continue
        return not items

    def _opened(self) -> None:
        self._failures, self._was_open = 0, True
        self._metrics.record_connected()
        if self._on_connected:
            self._on_connected()

    def _idle(self, token, last_idle_token) -> bool:
        """After a batch with no change: the stream's position is ``token`` (None: unknown), queued as an Idle
        marker when it moved since ``last_idle_token``. False when stopped."""
        if token is not None:
            self._position, self._last_change = StartPosition(resume_after=token), None
        return token == last_idle_token or self._put(Idle(token))

    def _read_stream(self) -> bool:
        """Reads with pymongo's ChangeStream until stopped (returns False)."""
        raw = self._raw_options is not None
        with self._open(self._position) as stream:
            self._opened()
            last_idle_token = None
            while not self._stop.is_set():
                change = stream.try_next()
                if change is not None:
                    if raw:  # a RawBSONDocument: as the batch reader reads it
                        change = RawChangeEvent.of(change.raw)
                    if not self._put(change):
                        return False
                    self._last_change = change
                    continue
                token = stream.resume_token
                if not self._idle(token, last_idle_token):
                    return False
                last_idle_token = token
        return False

    def _read_batches(self) -> bool:
        """Reads a batch at a time until stopped (False), or until the server ends the cursor (True: reopen)."""
        options = self._options
        with ChangeCursor(self._client, self._scope, self._stage(self._position), self._pipeline, options.batch_size,
                          options.max_await_ms, self._raw_options is not None) as cursor:
            batch = cursor.open()
            self._opened()
            last_idle_token = None
            while not self._stop.is_set():
                if batch.events:
                    if not self._put_all(batch.events):
                        return False
                    self._last_change = batch.events[-1]
                else:
                    if not self._idle(batch.resume_token, last_idle_token):
                        return False
                    last_idle_token = batch.resume_token
                if batch.ended:
                    # After an invalidate: a new stream starts after it (as a restart of the connector would), once
                    # the await time has passed, so a cursor the server keeps ending is not reopened in a tight loop.
                    self._position, self._last_change = _position_after(self._last_change, self._position), None
                    return not self._stop.wait(options.max_await_ms / 1000)
                batch = cursor.next_batch()
        return False

    def _run(self) -> None:
        read = self._read_batches if self._by_batch else self._read_stream
        while not self._stop.is_set():
            try:
                if not read():
                    return
            except OperationFailure as error:
                self._position, self._last_change = _position_after(self._last_change, self._position), None
                if error.code == BSON_OBJECT_TOO_LARGE:
                    after = self._skip_oversized(self._position, error) if self._options.skip_oversized_events else None
                    if after is None:
                        self._put(ReaderFailed(_too_large_error(error)))
                        return
                    self._position = after
                    continue
                if error.code == TOKEN_NOT_FOUND and self._widen():
                    continue
                if error.code in FATAL_CODES or error.has_error_label("NonResumableChangeStreamError"):
                    token = self._position.resume_after or self._position.start_after
                    self._put(ReaderFailed(_fatal_error(error, token)))
                    return
                if not self._retry(error):
                    return
            except (ConnectionFailure, PyMongoError) as error:
                self._position, self._last_change = _position_after(self._last_change, self._position), None
                if not self._retry(error):
                    return
            except BaseException as error:  # noqa: BLE001 - handed to the pipeline, which reports it
                self._put(ReaderFailed(error))
                return

    def _widen(self) -> bool:
        """Resumes deployment-wide (once) when a narrowed stream cannot find its resume token: the token may be an
        event of a namespace the include lists no longer name. False when there is nothing wider to try."""
        if self._wider is None or self._position.resume_after is None:
            return False
        (self._scope, self._pipeline), self._wider = self._wider, None
        if not self._by_batch:
            self._raw_options = None  # pymongo opens a deployment-wide stream with the client's codec options
        log.warning("change stream of %s: the resume token is not in the narrowed stream (it is an event outside "
                    "the namespaces now included); resuming from it deployment-wide instead",
                    self._metrics.partition)
        return True

    def _skip_oversized(self, start: StartPosition, error: OperationFailure) -> StartPosition | None:
        """Under the skip policy: the position after the oversized event, found by reading it once without its
        documents; its Idle marker commits that position. None when it cannot be found (then the error stands)."""
        try:
            with self._open(start, [*self._pipeline, _WITHOUT_DOCUMENTS]) as probe:
                event = None
                for _ in range(20):
                    event = probe.try_next()
                    if event is not None or self._stop.is_set():
                        break
        except PyMongoError as probe_error:
            log.warning("could not locate the oversized change event to skip it: %s", probe_error)
            return None
        if event is None:
            return None
        event = decoded(event)
        log.warning(skipped_event_text(event, error))
        summary = {"operationType": event.get("operationType"), "ns": event.get("ns"),
                   "documentKey": event.get("documentKey"), "clusterTime": event.get("clusterTime"),
                   "reason": server_message(error)}
        skipped = OversizedSkipped(event["_id"], summary)
        return StartPosition(resume_after=event["_id"]) if self._put(skipped) else None

    def _retry(self, error: BaseException) -> bool:
        """After a resumable failure: False when the reader gives up (the failure is queued) or is stopped, else
        True once the backoff has passed. A stream that was open resumes at once, as pymongo's ChangeStream does."""
        self._failures += 1
        failures = self._failures
        self._metrics.record_disconnect(f"{type(error).__name__}: {server_message(error)}")
        if failures > self._backoff.max_attempts:
            self._put(
                ReaderFailed(
                    ConnectorError(
                        f"gave up after {self._backoff.max_attempts} attempts to reconnect to the change stream "
                        f"(connect.max.attempts); last error: {server_message(error)}"
                    )
                )
            )
            return False
        if self._was_open:
            self._was_open = False
            log.info("change stream of %s interrupted (%s: %s); resuming", self._metrics.partition,
                     type(error).__name__, server_message(error))
            return not self._stop.is_set()
        delay = self._backoff.delay(failures)
        log.warning(
            "change stream of %s interrupted (%s); retry %d in %.1fs",
            self._metrics.partition,
            type(error).__name__,
            failures,
            delay,
        )
        return not self._stop.wait(delay)


def _fatal_error(error: OperationFailure, token: Any = None) -> BaseException:
    """What the pipeline reports for a failure no resume can mend."""
    if error.code == HISTORY_LOST:
        return HistoryLost(
            "the stored resume position is no longer in the MongoDB oplog (ChangeStreamHistoryLost); changes were "
            "missed, so a new snapshot is needed (snapshot.mode=when_needed does it automatically) or reset the offset"
        )
    if error.code == ONLY_ON_REPLICA_SETS:
        return NotAReplicaSet(
            "MongoDB refused the change stream because the server is a standalone server, not a replica set member; "
            f"change streams need a replica set ({REPLICA_SET_FIX})"
        )
    if error.code == TOKEN_NOT_FOUND:
        return ConnectorError(
            f"MongoDB cannot resume the change stream from the stored resume token {as_json(token)}: the stream no "
            "longer contains the event it names (ChangeStreamFatalError, code 280), for example because "
            "capture.scope or capture.target changed since it was stored. Reset the connector's offset to start "
            "from now, or take a new snapshot."
        )
    return ConnectorError(f"The change stream failed: {server_message(error)}.")


def _too_large_error(error: OperationFailure) -> ChangeEventTooLarge:
    reason = server_message(error)
    return ChangeEventTooLarge(
        "MongoDB cannot return a change event because it is larger than its 16 MB limit (BSONObjectTooLarge, code "
        f"10334: {reason}). The event carries the document and "
        "what capture.mode asks for: the full document of an update (update_full, updateLookup or post-image) "
        "and/or the document before the change (with_pre_image); together they exceed 16 MB. Capture this "
        "collection with a capture.mode without pre-images or without full update documents, or choose "
        "message.too.large.policy=skip to skip such events (each skip is logged)"
    )


def skipped_event_text(event: dict, error: PyMongoError) -> str:
    """The warning for a change event skipped as too large, its BSON values as relaxed Extended JSON."""
    ns = event.get("ns") or {}
    return (f"Skipped a change event ({event.get('operationType')}) of {ns.get('db')}.{ns.get('coll')} over "
            f"MongoDB's 16 MB limit (message.too.large.policy=skip): document key {as_json(event.get('documentKey'))}, "
            f"cluster time {as_json(event.get('clusterTime'))}. MongoDB said: {server_message(error)}.")


def _position_after(change: dict | None, start: StartPosition) -> StartPosition:
    """Where a reopened stream continues: after `change`, the last one queued (`start` when there is none)."""
    if change is None:
        return start
    if change.get("operationType") == "invalidate":
        return StartPosition(start_after=change["_id"])
    return StartPosition(resume_after=change["_id"])
