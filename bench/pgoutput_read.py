"""The PostgreSQL catch-up's neighbour: a plain pgoutput read of the changes waiting in a slot (decoding only, no
events, no Kafka), for the benchmarks' ratios."""

from __future__ import annotations

import time
from dataclasses import dataclass

from connectors.postgres import pgoutput as p
from connectors.postgres.replication import ReplicationStream


@dataclass(frozen=True)
class PlainRead:
    changes: int  # the messages of the kind read
    seconds: float
    cpu_seconds: float  # this process's
    last_commit_end: int  # the end LSN of the last transaction read

    @property
    def rate(self) -> float:
        return self.changes / self.seconds


def read_slot(dsn: str, slot: str, publications: list[str], transactions: int, kind: type) -> PlainRead:
    """Reads `slot` from its start until `transactions` commits have come, counting the `kind` messages (p.Insert,
    p.Update…)."""
    started, cpu = time.monotonic(), time.process_time()
    seen = commits = last_commit_end = 0
    with ReplicationStream(dsn, slot, publications) as plain:
        plain.start(0)
        while commits < transactions:
            for wal in plain.read(timeout=1.0):
                if isinstance(wal.message, kind):
                    seen += 1
                elif isinstance(wal.message, p.Commit):
                    commits += 1
                    last_commit_end = wal.message.end_lsn
    return PlainRead(seen, time.monotonic() - started, time.process_time() - cpu, last_commit_end)
