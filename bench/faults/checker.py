"""The read_committed checker, and the accounting of what it saw against what the writer had acknowledged."""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

# an event's value (parsed JSON) -> (op, seq, snapshot attempt) of a row the campaign wrote, or None to skip it
Parse = Callable[[dict], "tuple[str, int, str | None] | None"]


@dataclass(frozen=True)
class Seen:
    kind: str  # "events" (the writer's) or "preload" (what a snapshot reads)
    op: str
    seq: int
    partition: int
    at: float
    # which snapshot read an "r" event, for a source whose interrupted snapshot starts again from scratch
    # (PostgreSQL: the snapshot's LSN); None where a snapshot resumes
    attempt: str | None = None


class Checker(threading.Thread):
    """Reads the given topics from their beginning with isolation.level=read_committed as they appear."""

    def __init__(self, bootstrap: str, topics: dict[str, str], parse: Parse):
        super().__init__(daemon=True)
        self.bootstrap, self.topics, self.parse = bootstrap, topics, parse
        self.seen: list[Seen] = []
        self.halt = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": f"faults-{uuid.uuid4().hex}",
            "enable.auto.commit": False, "isolation.level": "read_committed", "fetch.wait.max.ms": 50,
            "log_level": 0,
        })
        kinds = {topic: kind for kind, topic in self.topics.items()}
        assigned: set[str] = set()
        next_lookup = 0.0
        try:
            while not self.halt.is_set():
                if len(assigned) < len(kinds) and time.monotonic() >= next_lookup:
                    next_lookup = time.monotonic() + 0.5
                    try:
                        metadata = consumer.list_topics(timeout=2).topics
                    except Exception:  # noqa: BLE001 - the broker may be frozen; look again later
                        metadata = {}
                    for topic in set(kinds) - assigned:
                        if topic in metadata and metadata[topic].partitions:
                            consumer.incremental_assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                                                         for p in metadata[topic].partitions])
                            assigned.add(topic)
                if not assigned:
                    self.halt.wait(0.2)
                    continue
                for message in consumer.consume(500, 0.2):
                    if message.error() is not None or message.value() is None:
                        continue
                    parsed = self.parse(json.loads(message.value()))
                    if parsed is None:
                        continue
                    op, seq, attempt = parsed
                    with self._lock:
                        self.seen.append(Seen(kinds[message.topic()], op, seq, message.partition(),
                                              time.monotonic(), attempt))
        finally:
            consumer.close()

    def snapshot(self) -> list[Seen]:
        with self._lock:
            return list(self.seen)

    def count(self, kind: str, op: str | None = None) -> int:
        return sum(1 for s in self.snapshot() if s.kind == kind and (op is None or s.op == op))


@dataclass
class Outcome:
    sessions: int = 0  # connectors run (one per session)
    faults: int = 0
    writes: int = 0  # the inserter's acknowledged writes and preloaded rows
    changes: int = 0  # the mixed writer's streamed writes checked (verify.py)
    snapshot_rows: int = 0  # the mixed writer's rows read by a snapshot
    tombstone_errors: int = 0
    transaction_errors: int = 0
    state_mismatches: int = 0
    unexpected: int = 0  # events of no logged write
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    resnapshotted: int = 0  # rows read again by a snapshot that started again after a crash (by design there)
    recovery: list = field(default_factory=list)  # seconds per fault (None: nothing came after it)
    unplanned_exits: int = 0
    notes: list[str] = field(default_factory=list)
    aborted: bool = False

    @property
    def failed(self) -> bool:
        """Anything lost, duplicated or reordered, a scenario aborted, or a runner that exited on its own (a crash:
        restarting it hid the failure from the figures, not from the users of a real deployment)."""
        return bool(self.lost or self.duplicated or self.reordered or self.aborted or self.unplanned_exits
                    or self.tombstone_errors or self.transaction_errors or self.state_mismatches or self.unexpected)

    def add_verdict(self, verdict, session: str) -> None:
        """Adds the mixed writer's check (verify.Verdict) of one session."""
        for name in ("changes", "snapshot_rows", "lost", "duplicated", "reordered", "unexpected", "tombstone_errors",
                     "transaction_errors", "state_mismatches"):
            setattr(self, name, getattr(self, name) + getattr(verdict, name))
        self.notes += [f"{session}: {example}" for example in verdict.examples]

    def add(self, other: Outcome) -> None:
        for name in ("sessions", "faults", "writes", "changes", "snapshot_rows", "tombstone_errors",
                     "transaction_errors", "state_mismatches", "unexpected", "lost", "duplicated", "reordered",
                     "resnapshotted", "unplanned_exits"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.aborted = self.aborted or other.aborted
        self.recovery += other.recovery
        self.notes += other.notes


def account(out: Outcome, acks: dict[int, float], seen: list[Seen], preloaded: int,
            faults: list[tuple[float, float]]) -> Outcome:
    """Adds to `out` what the read_committed consumer saw against what was acknowledged (and preloaded)."""
    out.writes += len(acks) + preloaded
    events = [s for s in seen if s.kind == "events"]
    out.lost += len(set(acks) - {s.seq for s in events})
    # a write may be read by a snapshot ("r") and also streamed ("c"); each kind at most once (per snapshot attempt)
    out.duplicated += sum(n - 1 for n in Counter((s.op, s.seq, s.attempt) for s in events).values() if n > 1)
    loaded = Counter((s.seq, s.attempt) for s in seen if s.kind == "preload" and s.op == "r")
    read = Counter(seq for seq, _ in loaded)  # how many snapshot attempts read each row
    out.lost += sum(1 for i in range(preloaded) if i not in read)
    out.duplicated += sum(n - 1 for n in loaded.values() if n > 1)
    reread = Counter(s.seq for s in {(s.seq, s.attempt): s for s in events if s.op == "r"}.values())
    out.resnapshotted += sum(n - 1 for n in (*read.values(), *reread.values()) if n > 1)
    highest: dict[int, int] = {}
    first_seen: set[int] = set()
    for s in events:  # in the order the consumer received them, per partition
        if s.op != "c" or s.seq in first_seen:
            continue
        first_seen.add(s.seq)
        if s.seq < highest.get(s.partition, -1):
            out.reordered += 1
        highest[s.partition] = max(highest.get(s.partition, -1), s.seq)
    for start, end in faults:
        # the first event after the fault that it held back: a write acknowledged since the fault began, or a
        # snapshot row (rows committed before it are consumed within milliseconds, before it ends)
        after = [s.at for s in seen if s.at >= end and (s.kind == "preload" or acks.get(s.seq, 0) >= start)]
        out.recovery.append(min(after) - end if after else None)
    return out


def _recovery(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.1f} / {max(values):.1f}"


COLUMNS = (  # heading, width, value
    ("scenario", 22, None),
    ("runs", 5, lambda o: o.sessions),
    ("faults", 7, lambda o: o.faults),
    ("changes", 9, lambda o: o.changes),
    ("snapshot rows", 14, lambda o: o.snapshot_rows),
    ("inserts", 9, lambda o: o.writes),
    ("lost", 6, lambda o: o.lost),
    ("dup", 5, lambda o: o.duplicated),
    ("reord", 6, lambda o: o.reordered),
    ("tomb", 5, lambda o: o.tombstone_errors),
    ("txn", 5, lambda o: o.transaction_errors),
    ("state", 6, lambda o: o.state_mismatches),
    ("unexp exits", 12, lambda o: o.unplanned_exits),
    ("recovery p50/max s", 20, lambda o: _recovery(o.recovery)),
    ("re-snap", 8, lambda o: o.resnapshotted),
)


def report(results: dict[str, Outcome]) -> str:
    """One row per scenario: runs (connectors), faults, writes checked (the mixed writer's streamed changes and
    snapshot rows, the inserter's writes plus preloaded rows), lost, duplicated, reordered, tombstone, transaction
    metadata and final-state errors, unexpected runner exits, recovery median / max."""
    lines = [COLUMNS[0][0].ljust(COLUMNS[0][1]) + "".join(f"{h:>{w}}" for h, w, _ in COLUMNS[1:])]
    for scenario, o in results.items():
        lines.append(scenario.ljust(COLUMNS[0][1]) + "".join(f"{value(o)!s:>{w}}" for _, w, value in COLUMNS[1:]))
    for scenario, o in results.items():
        lines += [f"  {scenario}: {note}" for note in o.notes]
    return "\n".join(lines)
