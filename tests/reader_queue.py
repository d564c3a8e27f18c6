"""The queue a change reader fills, read one item at a time by a test (as `queue.Queue.get`)."""

from __future__ import annotations

import queue

from connectors.core.stream import ChangeQueue


class ReaderQueue(ChangeQueue):
    def __init__(self, maxsize: int = 100_000):
        super().__init__(maxsize)

    def get(self, timeout: float):
        """The next item; `queue.Empty` when none comes within `timeout` seconds."""
        items = self.take(1, timeout, ())
        if not items:
            raise queue.Empty
        return items[0]
