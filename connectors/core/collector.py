"""Python's cyclic garbage collector while a pipeline streams or an initial snapshot or a chunk task runs.

A snapshot keeps a whole chunk's messages (one object or more per row) alive until the chunk commits, and a stream
keeps up to `max.queue.size` changes queued and a batch's messages built, so every few hundred objects the default
thresholds start a collection, and the oldest generation's ones walk every object of the process (imported
modules, configuration, clients, everything queued): about a tenth of the CPU a snapshot spends per row, and a
quarter of a PostgreSQL catch-up's time. While at least one of them runs, the objects that existed before it are
frozen (left out of collections; they are still freed by reference counting, and a cycle among them waits for the
end) and the youngest generation is collected every 50,000 allocations, as the MongoDB emulator does
(devstack/mongo/cli.py). The last one to finish restores both. A process that froze objects itself keeps them
frozen: its own policy is left alone.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BATCH_THRESHOLDS = (50_000, 20, 20)


class _Policy:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.saved: tuple[int, int, int] | None = None
        self.froze = False


_POLICY = _Policy()


@contextmanager
def batch_collection() -> Iterator[None]:
    """The policy for the duration of the block (nested and concurrent blocks share it)."""
    policy = _POLICY
    with policy.lock:
        if policy.active == 0:
            policy.saved = gc.get_threshold()
            policy.froze = gc.get_freeze_count() == 0
            if policy.froze:
                gc.freeze()
            gc.set_threshold(*BATCH_THRESHOLDS)
        policy.active += 1
    try:
        yield
    finally:
        with policy.lock:
            policy.active -= 1
            if policy.active == 0:
                gc.set_threshold(*policy.saved)
                if policy.froze:
                    gc.unfreeze()
