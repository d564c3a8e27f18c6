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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Idle:
    """Nothing more to read for now; `position` is the source's position here (None: unknown), as its reader
    reports it (the pipeline asks the source to turn it into a `Position`)."""

    position: Any


@dataclass(frozen=True)
class ReaderFailed:
    error: BaseException


class ChangeQueue:
    """The bounded queue between the reader and the pipeline (`max.queue.size` changes and markers).

    The reader adds one item at a time (blocking while full, `queue.Full` after `timeout`, as `queue.Queue.put`) or
    a batch (`put_many`);
    the pipeline takes a whole batch under one acquisition of the lock, so the two threads seldom contend for it
    (a per-item `queue.Queue.get` meets the reader's lock at every change).
    """

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self._items: list = []  # taken from the front a batch at a time (del items[:n]): no per-item popleft
        # Held directly where nothing waits: a Condition's `with` costs two Python calls, a Lock's none.
        self._lock = lock = threading.Lock()
        self._not_empty = threading.Condition(lock)
        self._not_full = threading.Condition(lock)
        self._taker_waits = False  # notify() only when someone waits: it costs the reader a microsecond per change
        self._wanted = 1  # how many items the waiting take() waits for (`fill`)
        self._wake_types: tuple[type, ...] = ()  # items that end its wait anyway (its `markers`)
        self._woken = False  # a wake() not yet seen by a take()

    def qsize(self) -> int:
        return len(self._items)

    @property
    def taker_waits(self) -> bool:
        """A take() is waiting for an item now."""
        return self._taker_waits

    def _wait_for_room(self, timeout: float | None) -> None:
        """Holding the lock: returns once there is room for an item, `queue.Full` after `timeout`."""
        if len(self._items) >= self.maxsize and not self._not_full.wait_for(
            lambda: len(self._items) < self.maxsize, timeout
        ):
            raise queue.Full

    def put(self, item, timeout: float | None = None) -> None:
        with self._lock:
            if len(self._items) >= self.maxsize:
                self._wait_for_room(timeout)
            self._items.append(item)
            if self._taker_waits and (len(self._items) >= self._wanted or type(item) in self._wake_types):
                self._not_empty.notify()

    def put_many(self, items: list, timeout: float | None = None) -> int:
        """Queues items from the start of `items`, as many as there is room for, under one acquisition of the lock
        (waiting up to `timeout` for room for the first: `queue.Full`); returns how many. A reader that has a batch
        in hand pays for the lock once, not per change."""
        with self._not_full:
            self._wait_for_room(timeout)
            room = self.maxsize - len(self._items)
            taken = items if len(items) <= room else items[:room]
            self._items.extend(taken)
            if self._taker_waits and (len(self._items) >= self._wanted or type(taken[-1]) in self._wake_types):
                self._not_empty.notify()
            return len(taken)

    def wake(self) -> None:
        """Ends a waiting take() now, or the wait of the next one if none waits (it returns what is queued,
        possibly nothing): a wake that comes just before the taker waits is not lost."""
        with self._not_empty:
            self._woken = True
            self._not_empty.notify_all()

    def take(self, limit: int, timeout: float, markers: tuple[type, ...], fill: int = 1) -> list:
        """Up to `limit` items, ending after the first whose type is one of `markers`; waits up to `timeout` only
        while fewer than `fill` items are queued (then returns what came, possibly nothing), a wait that a put
        reaching `fill` items, a marker or `wake()` ends. The items are taken and looked at a whole batch at a time
        (a per-item loop cost the pipeline thread about 0.3 µs a change)."""
        items = self._items
        with self._not_empty:
            if len(items) < fill and not self._woken:
                self._taker_waits = True
                self._wanted, self._wake_types = fill, markers
                try:
                    self._not_empty.wait(timeout)
                finally:
                    self._taker_waits = False
                    self._wanted = 1
            self._woken = False
            batch = items[:limit]
            if batch and markers and not set(map(type, batch)).isdisjoint(markers):
                batch = batch[:next(at for at, item in enumerate(batch) if type(item) in markers) + 1]
            if batch:
                del items[:len(batch)]
                self._not_full.notify()
        return batch


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
