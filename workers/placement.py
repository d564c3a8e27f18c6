"""Where the supervisor puts pipelines: on the live `streaming` worker holding the fewest (workers.presence), and
which one it moves when the workers' loads differ by more than a bound.

A pipeline's load is its lease (workers.leases): the lease names the worker that holds it. Leases of workers that
are no longer live are not counted (they expire, and their pipelines are placed again).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import redis

from workers.leases import holder
from workers.presence import live_workers

LEASE_PREFIX = "cdc:lease:"


@dataclass
class Placement:
    live: list[str]
    load: Counter = field(default_factory=Counter)  # pipelines per live worker, with those placed this tick
    held: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # worker: [(connector, replica set)]

    @classmethod
    def now(cls, client: redis.Redis) -> Placement:
        """The live workers and the pipelines each holds; raises redis.RedisError."""
        live = live_workers(client)
        placement = cls(live, Counter(dict.fromkeys(live, 0)), {worker: [] for worker in live})
        for key in client.scan_iter(match=f"{LEASE_PREFIX}*", count=100):
            key = key.decode() if isinstance(key, bytes) else key
            worker = holder(client, key)
            if worker in placement.held:
                connector, _, replica_set = key[len(LEASE_PREFIX):].partition(":")
                placement.held[worker].append((connector, replica_set))
                placement.load[worker] += 1
        return placement

    def choose(self) -> str | None:
        """The live worker with the fewest pipelines (by name on a tie), counted as holding one more; None when no
        worker announced itself (then the task goes to the shared queue)."""
        if not self.live:
            return None
        worker = min(self.live, key=lambda name: (self.load[name], name))
        self.load[worker] += 1
        return worker

    def imbalance(self, bound: int) -> tuple[str, str] | None:
        """(busiest, idlest) when the busiest live worker holds more than `bound` pipelines more than the idlest."""
        if len(self.live) < 2:
            return None
        busiest = max(self.live, key=lambda name: (self.load[name], name))
        idlest = min(self.live, key=lambda name: (self.load[name], name))
        return (busiest, idlest) if self.load[busiest] - self.load[idlest] > bound else None
