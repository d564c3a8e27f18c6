"""What a source's change reader hands the pipeline: a bounded queue of changes and markers, and the backoff both
sides use between attempts.

The queue decouples source round trips from Kafka transactions (Debezium's `max.queue.size`). Items are the
source's changes (whatever its `EventBuilder` reads), `Idle` markers carrying the source's position while
nothing captured happens (heartbeats commit it), and one final `ReaderFailed`.
"""

from __future__ import annotations

import queue
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import Any


@dataclass(frozen=True)
class Idle:
    """Nothing more to read for now; `position` is the source's position here (None: unknown), as its reader
    reports it (the pipeline asks the source to turn it into a `Position`)."""

    position: Any


@dataclass(frozen=True)
class ReaderFailed:
    error: BaseException


class ChangeSpan:
    """A queued item that stands for `len(span)` changes of a source, one after another: a reader that reads changes
    in groups (a binlog rows event's rows) queues a group as one item (`ChangeQueue.put_span`), not an item per change
    (which cost the reader and the pipeline about 0.1 µs a change). The queue and the pipeline's batches count its
    changes; the queue splits one that does not fit (`split`), and never holds or hands out a span of one change (it
    holds that change). The pipeline hands spans to `EventBuilder.build_changes` and `position_after_changes`, which
    know them, and their changes one by one (`iter`) to anything that takes one change at a time."""

    __slots__ = ()

    def __len__(self) -> int:
        raise NotImplementedError

    def __iter__(self) -> Iterator:
        """Its changes, each as the item a reader queuing them one by one would queue."""
        raise NotImplementedError

    def split(self, count: int) -> tuple[ChangeSpan, ChangeSpan]:
        """Its first `count` changes and the rest (0 < count < len(self))."""
        raise NotImplementedError


def _single(span: ChangeSpan) -> Any:
    """A span as the queue holds it: its change alone when it has one."""
    return next(iter(span)) if len(span) == 1 else span


def each_change(items: Iterable) -> Iterator:
    """The items taken from a ChangeQueue one change at a time: a span's changes in its place."""
    for item in items:
        if isinstance(item, ChangeSpan):
            yield from item
        else:
            yield item


class ChangeQueue:
    """The bounded queue between the reader and the pipeline: `max.queue.size` changes and markers, and
    `max.queue.size.in.bytes` bytes of them when that is above 0.

    The reader adds one item at a time (blocking while full, `queue.Full` after `timeout`, as `queue.Queue.put`), a
    batch (`put_many`) or a span of changes (`put_span`, counted as its changes), telling the bytes each change holds
    (`size`, `item_bytes`, `change_bytes`; a reader that tells none adds changes of 0 bytes, bounded by their count
    alone);
    the pipeline takes a whole batch under one acquisition of the lock, so the two threads seldom contend for it
    (a per-item `queue.Queue.get` meets the reader's lock at every change).

    The byte bound: an item is queued only when the bytes queued with it stay within `max_bytes`, or when the queue
    is empty (an item larger than the bound alone still goes through, one at a time). So the queue never holds more
    than `max_bytes` unless it holds a single item.
    """

    def __init__(self, maxsize: int, max_bytes: int = 0):
        self.maxsize = maxsize
        self.max_bytes = max_bytes  # 0: no byte bound (nor any per-item bookkeeping)
        self._items: list = []  # taken from the front a batch at a time (del items[:n]): no per-item popleft
        self._changes = 0  # the changes queued: the items, a span counting its changes
        # while a span is queued: each item's changes, in the same order (None: one each)
        self._counts: list[int] | None = None
        self._sizes: list[int] = []  # with a byte bound: each queued item's bytes, in the same order
        self._bytes = 0  # with a byte bound: the sum of _sizes
        # Held directly where nothing waits: a Condition's `with` costs two Python calls, a Lock's none.
        self._lock = lock = threading.Lock()
        self._not_empty = threading.Condition(lock)
        self._not_full = threading.Condition(lock)
        self._taker_waits = False  # notify() only when someone waits: it costs the reader a microsecond per change
        self._wanted = 1  # how many items the waiting take() waits for (`fill`)
        self._wake_types: tuple[type, ...] = ()  # items that end its wait anyway (its `markers`)
        self._woken = False  # a wake() not yet seen by a take()

    def qsize(self) -> int:
        """The changes queued (and markers)."""
        return self._changes

    @property
    def queued_bytes(self) -> int:
        """The bytes of the queued items, as their reader told them (0 without a byte bound)."""
        return self._bytes

    @property
    def taker_waits(self) -> bool:
        """A take() is waiting for an item now."""
        return self._taker_waits

    def _room(self, item_bytes: int) -> int:
        """Holding the lock: how many items (or a span's changes) of `item_bytes` bytes may be queued now."""
        room = self.maxsize - self._changes
        if self.max_bytes and room > 0:
            if not self._items:
                return min(room, max(1, self.max_bytes // item_bytes if item_bytes else room))
            if item_bytes:
                room = min(room, max(0, (self.max_bytes - self._bytes) // item_bytes))
        return room

    def _wait_for_room(self, timeout: float | None, item_bytes: int) -> int:
        """Holding the lock: the room for items of `item_bytes` once there is some, `queue.Full` after `timeout`."""
        room = self._room(item_bytes)
        if room <= 0:
            if not self._not_full.wait_for(lambda: self._room(item_bytes) > 0, timeout):
                raise queue.Full
            room = self._room(item_bytes)
        return room

    def put(self, item, timeout: float | None = None, size: int = 0) -> None:
        with self._lock:
            if self._changes >= self.maxsize or self.max_bytes:
                self._wait_for_room(timeout, size)
            self._items.append(item)
            self._changes += 1
            if self._counts is not None:
                self._counts.append(1)
            if self.max_bytes:
                self._sizes.append(size)
                self._bytes += size
            if self._taker_waits and (self._changes >= self._wanted or type(item) in self._wake_types
                                      or self._room(size) <= 0):
                self._not_empty.notify()

    def put_many(self, items: list, timeout: float | None = None, item_bytes: int = 0) -> int:
        """Queues items from the start of `items`, each of `item_bytes` bytes, as many as there is room for, under one
        acquisition of the lock (waiting up to `timeout` for room for the first: `queue.Full`); returns how many. A
        reader that has a batch in hand pays for the lock once, not per change."""
        with self._not_full:
            room = self._wait_for_room(timeout, item_bytes)
            taken = items if len(items) <= room else items[:room]
            self._items.extend(taken)
            self._changes += len(taken)
            if self._counts is not None:
                self._counts.extend([1] * len(taken))
            if self.max_bytes:
                self._sizes.extend([item_bytes] * len(taken))
                self._bytes += item_bytes * len(taken)
            if self._taker_waits and (self._changes >= self._wanted or type(taken[-1]) in self._wake_types
                                      or self._room(item_bytes) <= 0):
                self._not_empty.notify()
            return len(taken)

    def put_span(self, span: ChangeSpan, timeout: float | None = None, change_bytes: int = 0) -> ChangeSpan | None:
        """Queues the first changes of `span`, each of `change_bytes` bytes, as many as there is room for, as one item
        (waiting up to `timeout` for room for one: `queue.Full`); returns the rest (None: all of it was queued)."""
        with self._not_full:
            room = self._wait_for_room(timeout, change_bytes)
            count, rest = len(span), None
            if count > room:
                span, rest = span.split(room)
                count = room
            if self._counts is None:
                self._counts = [1] * len(self._items)
            self._items.append(_single(span))
            self._counts.append(count)
            self._changes += count
            if self.max_bytes:
                self._sizes.append(change_bytes * count)
                self._bytes += change_bytes * count
            if self._taker_waits and (self._changes >= self._wanted or self._room(change_bytes) <= 0):
                self._not_empty.notify()
            return rest

    def wake(self) -> None:
        """Ends a waiting take() now, or the wait of the next one if none waits (it returns what is queued,
        possibly nothing): a wake that comes just before the taker waits is not lost."""
        with self._not_empty:
            self._woken = True
            self._not_empty.notify_all()

    def take(self, limit: int, timeout: float, markers: tuple[type, ...], fill: int = 1) -> list:
        """Up to `limit` changes, ending after the first item whose type is one of `markers`; waits up to `timeout`
        only while fewer than `fill` changes are queued (then returns what came, possibly nothing), a wait that a put
        reaching `fill` changes, a marker or `wake()` ends. The items are taken and looked at a whole batch at a time
        (a per-item loop cost the pipeline thread about 0.3 µs a change); a span past `limit` is split there."""
        return self.take_counted(limit, timeout, markers, fill)[0]

    def take_counted(self, limit: int, timeout: float, markers: tuple[type, ...],
                     fill: int = 1) -> tuple[list, int]:
        """`take`, and how many changes (and markers) the items taken hold: more than the items when spans are among
        them."""
        items = self._items
        with self._not_empty:
            if self._changes < fill and not self._woken:
                self._taker_waits = True
                self._wanted, self._wake_types = fill, markers
                try:
                    self._not_empty.wait(timeout)
                finally:
                    self._taker_waits = False
                    self._wanted = 1
            self._woken = False
            counts = self._counts
            if counts is None:
                batch = items[:limit]
                whole = len(batch)
            else:
                ends = list(accumulate(counts[:limit]))
                whole = bisect_right(ends, limit)  # the items wholly within the limit
                batch = items[:whole]
            if batch and markers and not set(map(type, batch)).isdisjoint(markers):
                whole = next(at for at, item in enumerate(batch) if type(item) in markers) + 1
                batch = batch[:whole]
            taken = whole if counts is None else (ends[whole - 1] if whole else 0)
            if whole:
                del items[:whole]
                if counts is not None:
                    del counts[:whole]
                if self.max_bytes:
                    sizes = self._sizes
                    self._bytes -= sum(sizes[:whole])
                    del sizes[:whole]
            if counts is not None and items and taken < limit and not (batch and type(batch[-1]) in markers):
                taken += self._split_first(limit - taken, batch)  # the next item is a span past the limit
            if taken:
                self._changes -= taken
                if not items:
                    self._counts = None
                self._not_full.notify()
        return batch, taken

    def _split_first(self, count: int, batch: list) -> int:
        """Holding the lock: moves the first `count` changes of the first queued item, a span longer than that, to
        the end of `batch`; returns `count`."""
        span, total = self._items[0], self._counts[0]
        head, rest = span.split(count)
        batch.append(_single(head))
        self._items[0] = _single(rest)
        self._counts[0] = total - count
        if self.max_bytes:
            head_bytes = self._sizes[0] * count // total
            self._sizes[0] -= head_bytes
            self._bytes -= head_bytes
        return count


SIZE_SAMPLE = 16  # the items of a list whose sizes stand for all of them (sampled_size)


def sampled_size(items: list, size_of: Callable[[Any], int]) -> int:
    """The average `size_of` of up to SIZE_SAMPLE of `items`, spread over the list: what each counts as in a
    ChangeQueue bounded in bytes. Sizing every item is a Python call per change (0.1-3 µs of a reader's thread)."""
    sample = items[::max(1, len(items) // SIZE_SAMPLE)]
    return sum(map(size_of, sample)) // len(sample)


PROBE_SECONDS = 2.0  # how often a retry's wait asks whether what went away answers again


def wait_to_retry(stop: threading.Event, delay: float, answers: Callable[[], bool], went_away: list[bool]) -> bool:
    """Waits `delay` seconds before a retry, or less: asked every PROBE_SECONDS, a server that did not answer
    during the wait (`went_away[0]`, kept across the waits of one outage) and answers again ends it at once, so a
    server back from a restart is used within seconds, not at the end of a backoff that grew while it was away. It
    ends a wait early once per outage (a server that answers `answers()` but still fails the retry gets the full
    backoff). True when `stop` was set."""
    deadline = time.monotonic() + delay
    while (remaining := deadline - time.monotonic()) > 0:
        if stop.wait(min(PROBE_SECONDS, remaining)):
            return True
        if deadline - time.monotonic() <= 0:
            break
        if answers():
            if went_away[0]:
                went_away[0] = False
                return False
        else:
            went_away[0] = True
    return stop.is_set()


@dataclass
class Backoff:
    initial_ms: int = 1000
    max_ms: int = 120_000
    max_attempts: int = 16

    def delay(self, attempt: int) -> float:
        return min(self.max_ms, self.initial_ms * (2 ** max(0, attempt - 1))) / 1000.0
