"""A write workload for the Verify tests: inserts, updates and deletes of random keys from several threads, each
on its own connection, as fast as allowed (at most `per_second` in all), until stopped."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

Writer = Callable[[str, int], None]  # does one write: op ("insert", "update" or "delete") on a key


class Workload:
    def __init__(self, open_writer: Callable[[], Writer], keys: int, per_second: int = 2000, threads: int = 4):
        """`open_writer()` is called once per thread (its own connection)."""
        self.open_writer = open_writer
        self.keys = keys
        self.per_thread = per_second / threads
        self.counts = [0] * threads
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(threads)]
        self.started = 0.0
        self.seconds = 0.0

    def __enter__(self) -> Workload:
        self.started = time.monotonic()
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)
        self.seconds = time.monotonic() - self.started
        if self.errors and exc[0] is None:
            raise self.errors[0]

    @property
    def writes(self) -> int:
        return sum(self.counts)

    @property
    def rate(self) -> float:
        return self.writes / self.seconds if self.seconds else 0.0

    def _run(self, number: int) -> None:
        rng = random.Random(number)
        try:
            write = self.open_writer()
            began = time.monotonic()
            while not self.stop.is_set():
                write(rng.choice(("insert", "update", "update", "delete")), rng.randrange(self.keys))
                self.counts[number] += 1
                ahead = self.counts[number] / self.per_thread - (time.monotonic() - began)
                if ahead > 0:
                    time.sleep(ahead)
        except BaseException as error:  # noqa: BLE001 - raised by __exit__
            self.errors.append(error)
