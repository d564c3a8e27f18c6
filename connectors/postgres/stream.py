"""Reading one replication slot in a background thread into the core's change queue.

Items: `WalChange` (a Relation, Insert, Update, Delete, Truncate or Commit with its transaction's commit LSN, xid
and commit time) and `Idle(wal_end)` while nothing arrives between transactions (the keepalive position).

On start (and on every reconnect) the server replays the slot from its confirmed flush position; the reader
drops each change the resume position covers (position.Position.covers: already in Kafka, including the first
part of a transaction split across two batches). The slot is acknowledged from this thread only: `Acknowledger`
carries the flush LSN of the last committed batch from the committing thread to here.
"""

from __future__ import annotations

import logging
import queue
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass

from connectors import ConnectorError
from connectors.core.metrics import StreamingMetrics
from connectors.core.stream import Backoff, ChangeQueue, Idle, ReaderFailed, sampled_size, wait_to_retry
from connectors.postgres import pgoutput as p
from connectors.postgres.compiled import compiled, slots_maker
from connectors.postgres.offsets import acknowledgeable
from connectors.postgres.position import Position
from connectors.postgres.replication import ReplicationError, ReplicationStream

log = logging.getLogger(__name__)

_QUEUED_TOGETHER = 256  # changes queued under one lock: the pipeline does not wait for a whole read (10,000)
_ROW_CHANGES = frozenset((p.Insert, p.Update, p.Delete, p.Truncate))


@dataclass(slots=True, unsafe_hash=True)  # one per change: see pgoutput.Begin
class WalChange:
    message: p.Message
    lsn: int  # the change's WAL position (a Commit: the transaction's end LSN)
    commit_lsn: int
    xid: int
    commit_ts_us: int
    previous_commit: int | None = None  # the end LSN of the transaction streamed before this one (source.sequence)


# What one column value of a change waiting in the queue holds beyond its text, roughly: its slot in the message's
# tuple and its str object's header (49 bytes)
QUEUED_VALUE_BYTES = 64
QUEUED_CHANGE_BYTES = 200  # the WalChange and its message


def queued_change_bytes(item) -> int:
    """What a change waiting in the change queue is counted as for max.queue.size.in.bytes: its values' text and
    QUEUED_VALUE_BYTES per value of each tuple, and QUEUED_CHANGE_BYTES."""
    message = getattr(item, "message", None)
    size = QUEUED_CHANGE_BYTES
    for values in (getattr(message, "new", None), getattr(message, "old", None)):
        if values:
            size += len(values) * QUEUED_VALUE_BYTES + sum(len(v) for v in values if type(v) is str or type(v) is bytes)
    return size


def queued_bytes(items: list, message_bytes: int) -> int:
    """What each of `items` counts as for max.queue.size.in.bytes: the sampled average of their queued_change_bytes
    (core.stream.sampled_size), or `message_bytes` (the average pgoutput message of their read) when larger, so a
    large row the sample missed still weighs. Counting every change was a Python loop over each value of each change
    (2.7 µs a change of four columns)."""
    return max(message_bytes, sampled_size(items, queued_change_bytes))


_make_change = slots_maker(WalChange)
# compiled.wal_row_change and its makers: an XLogData message of a row change to its WalChange in one call
compiled_row_change = compiled.wal_row_change if compiled is not None else None
ROW_MAKERS = (_make_change, slots_maker(p.Insert), slots_maker(p.Update), slots_maker(p.Delete))
_ROW_KINDS = frozenset(b"IUD")  # the first byte of a pgoutput Insert, Update or Delete
_DATA_START = struct.Struct(">Q")  # an XLogData message's data start, from its byte 1


def last_commit_end(resume: Position | None) -> int | None:
    """The end LSN of the last transaction a stored position says was streamed whole (None: none, or an idle or
    snapshot position, which is no commit's): what Debezium keeps as its offset's last commit LSN."""
    if resume is None or not resume.completed or resume.lsn_commit == resume.lsn_proc - 1:
        return None
    return resume.lsn_proc


class Acknowledger:
    """The flush LSN the slot may be told, set by the committing thread, sent by the reader thread."""

    def __init__(self) -> None:
        self._lsn = 0
        self._lock = threading.Lock()

    def committed(self, position: Position) -> None:
        lsn = acknowledgeable(position)
        with self._lock:
            self._lsn = max(self._lsn, lsn)

    @property
    def lsn(self) -> int:
        with self._lock:
            return self._lsn


class WalReader:
    def __init__(self, open_stream, resume: Position | None, out: ChangeQueue, acks: Acknowledger,
                 metrics: StreamingMetrics, backoff: Backoff, stop: threading.Event, poll_seconds: float,
                 stream: ReplicationStream | None = None, server_answers: Callable[[], bool] = lambda: False,
                 take_over: Callable[[str], bool] = lambda message: False):
        """`open_stream()` makes a new ReplicationStream; `stream` is one already open (whose exported snapshot
        was just read): it is used first. `server_answers()`: whether the server accepts connections now (a
        reconnect's wait ends once it does again). `take_over(message)`: given a refused start's message, whether
        the slot's holder was ended (the start is then tried again at once)."""
        self._server_answers = server_answers
        self._take_over = take_over
        self._open_stream = open_stream
        self._resume = resume
        self._out = out
        self._message_bytes = 0  # the average pgoutput message of the last read (queued_bytes)
        self._acks = acks
        self._metrics = metrics
        self._backoff = backoff
        self._stop = stop
        self._poll = poll_seconds
        self._stream = stream
        self._previous_commit = last_commit_end(resume)
        self._thread = threading.Thread(target=self._run, name=f"wal-{metrics.partition}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _put(self, item) -> bool:
        return self._put_all([item])

    def _queue(self, changes: list, last: WalChange | None) -> bool:
        """Queues `changes`; `last`: the last of them that moves the resume position (a row change or a commit)."""
        if not self._put_all(changes):
            return False
        if last is not None:
            # a reconnect replays an unfinished transaction from its start: what is queued is not queued again
            self._resume = Position(last.commit_lsn, last.lsn, last.xid, last.commit_ts_us,
                                    type(last.message) is p.Commit)
        return True

    def _put_all(self, items: list) -> bool:
        """Queues `items` in order (a queue lock for as many as there is room for), acknowledging the slot while
        the queue is full; False when stopped first. Under max.queue.size.in.bytes each counts as queued_bytes."""
        done = 0
        size = queued_bytes(items, self._message_bytes) if self._out.max_bytes and items else 0
        while done < len(items):
            if self._stop.is_set():
                return False
            try:
                done += self._out.put_many(items[done:] if done else items, timeout=0.2, item_bytes=size)
            except queue.Full:
                self._acknowledge()  # keep acknowledging while the pipeline catches up
        return True

    def _acknowledge(self) -> None:
        stream = self._stream
        lsn = self._acks.lsn
        if stream is not None and stream.started and lsn > stream.acknowledged:
            stream.acknowledge(lsn)

    def _run(self) -> None:
        failures = 0
        went_away = [False]
        while not self._stop.is_set():
            try:
                if self._stream is None:
                    self._stream = self._open_stream()
                self._stream.start(0)  # from the slot's confirmed flush position
                self._metrics.record_connected()
                failures = 0
                self._read(self._stream)
                return
            except ReplicationError as error:
                self._close()
                failures += 1
                if failures <= self._backoff.max_attempts and self._take_over(str(error)):
                    continue
                self._metrics.record_disconnect(str(error))
                if failures > self._backoff.max_attempts:
                    self._put(ReaderFailed(ConnectorError(
                        f"gave up after {self._backoff.max_attempts} attempts to read the replication slot "
                        f"(connect.max.attempts); last error: {error}")))
                    return
                delay = self._backoff.delay(failures)
                log.warning("%s; retry %d in %.1fs", error, failures, delay)
                if wait_to_retry(self._stop, delay, self._server_answers, went_away):
                    return
            except BaseException as error:  # noqa: BLE001 - handed to the pipeline, which reports it
                self._put(ReaderFailed(error))
                return
        self._close()

    def _close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _read(self, stream: ReplicationStream) -> None:
        begin: p.Begin | None = None
        last_idle = 0
        # What this connection replays is checked against the resume position it started from: what it sends after
        # a change it queued comes after that change, so a later resume position covers nothing more of it.
        replayed = self._resume
        check = False  # whether `replayed` may cover changes of the transaction being read
        context = None  # (commit LSN, xid, commit time, previous commit) of a transaction whose row changes are new
        row_change = compiled_row_change  # looked up once per connection (tests set it to None)
        in_stream = stream.in_stream
        try:
            while not self._stop.is_set():
                self._acknowledge()
                messages = stream.read_raw(timeout=self._poll)
                if messages and self._out.max_bytes:
                    self._message_bytes = sum(map(len, messages)) // len(messages)
                if not messages:
                    wal_end = stream.server_wal_end
                    if begin is None and wal_end > last_idle:
                        last_idle = wal_end
                        if self._resume is None or wal_end > acknowledgeable(self._resume):
                            if not self._put(Idle(wal_end)):
                                return
                    continue
                # queued a read at a time; `last` is where the queued changes end
                changes: list = []
                last = None
                for data in messages:
                    if context is not None and data[25] in _ROW_KINDS and not in_stream and row_change is not None:
                        # the compiled reader: the change as the lines below make it (None: they decode it)
                        made = row_change(data, context, ROW_MAKERS)
                        if made is not None:
                            last = made
                            changes.append(made)
                            if len(changes) >= _QUEUED_TOGETHER:
                                if not self._queue(changes, last):
                                    return
                                changes, last = [], None
                            continue
                    message = stream.decode(data)
                    in_stream = stream.in_stream
                    data_start = _DATA_START.unpack_from(data, 1)[0]
                    kind = type(message)
                    if kind is p.Begin:
                        begin = message
                        check = replayed is not None and begin.final_lsn <= replayed.lsn_commit
                        context = None if check else (begin.final_lsn, begin.xid, begin.commit_ts_us,
                                                      self._previous_commit)
                        continue
                    if kind is p.Relation:
                        changes.append(WalChange(message, data_start, 0, 0, 0))
                        continue
                    if begin is None:
                        continue  # Origin, Type and non-transactional messages outside a transaction
                    if kind is p.Commit:
                        if not check or not replayed.covers_transaction(begin.final_lsn):
                            last = _make_change(message, message.end_lsn, begin.final_lsn, begin.xid,
                                                begin.commit_ts_us, self._previous_commit)
                            changes.append(last)
                        self._previous_commit = message.end_lsn
                        begin = context = None
                        continue
                    if kind in _ROW_CHANGES:
                        if check and replayed.covers(begin.final_lsn, data_start):
                            continue
                        last = _make_change(message, data_start, begin.final_lsn, begin.xid, begin.commit_ts_us,
                                            self._previous_commit)
                        changes.append(last)
                    if len(changes) >= _QUEUED_TOGETHER:
                        if not self._queue(changes, last):
                            return
                        changes, last = [], None
                if not self._queue(changes, last):
                    return
        finally:
            self._close()
