"""Reading one replica set's change stream in a background thread into a bounded queue.

The queue decouples MongoDB round trips from Kafka transactions (Debezium's `max.queue.size`). Items are
either change documents or `Idle` markers carrying the post-batch resume token: the marker keeps the stream's
position moving while nothing captured happens, which is what heartbeats commit.

On a resumable failure the reader reopens the stream after the last token it handed to the queue, with
exponential backoff, so nothing is lost or repeated; after `max_attempts` consecutive failures it gives up.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

import pymongo
from bson import Timestamp
from pymongo.errors import ConnectionFailure, OperationFailure, PyMongoError

from connectors.config_types import CaptureScope
from connectors.core.errors import ConnectorError, HistoryLost
from connectors.core.metrics import StreamingMetrics
from connectors.core.stream import Backoff, ChangeQueue, Idle, ReaderFailed
from connectors.mongodb.client import REPLICA_SET_FIX
from connectors.mongodb.errors import ChangeEventTooLarge, NotAReplicaSet
from connectors.mongodb.filters import WatchTarget
from connectors.mongodb.rawjson import raw_stream_options

log = logging.getLogger(__name__)

HISTORY_LOST = 286
ONLY_ON_REPLICA_SETS = 40573  # the server became (or is) a standalone mongod
BSON_OBJECT_TOO_LARGE = 10334  # a change event over 16 MB: MongoDB fails every getMore that reaches it
# ChangeStreamHistoryLost, ChangeStreamFatalError, InvalidResumeToken, $changeStream on a standalone
FATAL_CODES = {HISTORY_LOST, 280, 260, ONLY_ON_REPLICA_SETS}
# What a probe for an oversized event leaves of it: enough to name it and resume after it.
_WITHOUT_DOCUMENTS = {"$project": {"fullDocument": 0, "fullDocumentBeforeChange": 0, "updateDescription": 0}}


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
    ):
        self._client = client
        self._scope = scope
        self._pipeline = pipeline
        self._options = options
        self._start = start
        self._out = out
        self._metrics = metrics
        self._backoff = backoff
        self._stop = stop
        self._on_connected = on_connected
        # Events stay raw BSON (rawjson.RawChangeEvent), queued as they are and written to JSON without being decoded.
        # A deployment-wide stream has no codec options of its own (pymongo opens it on the client): it reads raw when
        # the client does (ReplicaSetSource gives it a client of its own), else it decodes and queues dicts.
        deployment = scope.scope is CaptureScope.DEPLOYMENT
        self._raw_options = None if deployment else raw_stream_options(client.codec_options)
        self._thread = threading.Thread(target=self._run, name=f"change-stream-{metrics.partition}", daemon=True)

    def pin_start(self) -> None:
        """With no start position ("from now"), fixes now here, as the resume token of a stream opened and closed on
        the calling thread: what commits after this call is read however late the reader's thread opens its stream.
        When the server cannot answer now, now is left to the thread, whose retries report why."""
        if self._start != StartPosition():
            return
        try:
            with self._open(self._start) as stream:
                token = stream.resume_token
        except PyMongoError as error:
            log.info("%s: could not open the change stream yet (%s); it starts when it opens", self._metrics.partition,
                     error)
            return
        if token is not None:
            self._start = StartPosition(resume_after=token)

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

    def _put(self, item) -> bool:
        """Blocks while the queue is full (back-pressure), but wakes up to honour a stop request."""
        while not self._stop.is_set():
            try:
                self._out.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        start = self._start
        failures = 0
        last_change = None  # the last change handed to the queue: where a reopened stream resumes
        while not self._stop.is_set():
            try:
                with self._open(start) as stream:
                    failures = 0
                    self._metrics.record_connected()
                    if self._on_connected:
                        self._on_connected()
                    last_idle_token = None
                    while not self._stop.is_set():
                        change = stream.try_next()
                        if change is not None:
                            if not self._put(change):
                                return
                            last_change = change
                            continue
                        token = stream.resume_token
                        if token is not None:
                            start, last_change = StartPosition(resume_after=token), None
                        if token != last_idle_token:
                            last_idle_token = token
                            if not self._put(Idle(token)):
                                return
                    return
            except OperationFailure as error:
                start, last_change = _position_after(last_change, start), None
                if error.code == BSON_OBJECT_TOO_LARGE:
                    after = self._skip_oversized(start, error) if self._options.skip_oversized_events else None
                    if after is None:
                        self._put(ReaderFailed(_too_large_error(error)))
                        return
                    start = after
                    continue
                if error.code in FATAL_CODES or error.has_error_label("NonResumableChangeStreamError"):
                    failure = (
                        HistoryLost(
                            "the stored resume position is no longer in the MongoDB oplog (ChangeStreamHistoryLost); "
                            "changes were missed, so a new snapshot is needed (snapshot.mode=when_needed does it "
                            "automatically) or reset the offset"
                        )
                        if error.code == HISTORY_LOST
                        else NotAReplicaSet(
                            "MongoDB refused the change stream because the server is a standalone server, not a "
                            f"replica set member; change streams need a replica set ({REPLICA_SET_FIX})"
                        )
                        if error.code == ONLY_ON_REPLICA_SETS
                        else ConnectorError(f"the change stream failed: {error}")
                    )
                    self._put(ReaderFailed(failure))
                    return
                failures += 1
                if not self._retry(failures, error):
                    return
            except (ConnectionFailure, PyMongoError) as error:
                start, last_change = _position_after(last_change, start), None
                failures += 1
                if not self._retry(failures, error):
                    return
            except BaseException as error:  # noqa: BLE001 - handed to the pipeline, which reports it
                self._put(ReaderFailed(error))
                return

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
        log.warning(
            "skipped a change event over MongoDB's 16 MB limit (message.too.large.policy=skip): %s of %s, "
            "documentKey %s, clusterTime %s (%s)",
            event.get("operationType"),
            event.get("ns"),
            event.get("documentKey"),
            event.get("clusterTime"),
            error,
        )
        summary = {"operationType": event.get("operationType"), "ns": event.get("ns"),
                   "documentKey": event.get("documentKey"), "clusterTime": event.get("clusterTime"),
                   "reason": str(error)}
        skipped = OversizedSkipped(event["_id"], summary)
        return StartPosition(resume_after=event["_id"]) if self._put(skipped) else None

    def _retry(self, failures: int, error: BaseException) -> bool:
        self._metrics.record_disconnect(f"{type(error).__name__}: {error}")
        if failures > self._backoff.max_attempts:
            self._put(
                ReaderFailed(
                    ConnectorError(
                        f"gave up after {self._backoff.max_attempts} attempts to reconnect to the change stream "
                        f"(connect.max.attempts); last error: {error}"
                    )
                )
            )
            return False
        delay = self._backoff.delay(failures)
        log.warning(
            "change stream of %s interrupted (%s); retry %d in %.1fs",
            self._metrics.partition,
            type(error).__name__,
            failures,
            delay,
        )
        return not self._stop.wait(delay)


def _too_large_error(error: OperationFailure) -> ChangeEventTooLarge:
    reason = error.details.get("errmsg") if error.details else str(error)
    return ChangeEventTooLarge(
        "MongoDB cannot return a change event because it is larger than its 16 MB limit (BSONObjectTooLarge, code "
        f"10334: {reason}). The event carries the document and "
        "what capture.mode asks for: the full document of an update (update_full, updateLookup or post-image) "
        "and/or the document before the change (with_pre_image); together they exceed 16 MB. Capture this "
        "collection with a capture.mode without pre-images or without full update documents, or choose "
        "message.too.large.policy=skip to skip such events (each skip is logged)"
    )


def _position_after(change: dict | None, start: StartPosition) -> StartPosition:
    """Where a reopened stream continues: after `change`, the last one queued (`start` when there is none)."""
    if change is None:
        return start
    if change.get("operationType") == "invalidate":
        return StartPosition(start_after=change["_id"])
    return StartPosition(resume_after=change["_id"])
