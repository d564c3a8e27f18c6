"""A scenario's figures (Outcome) and the campaign's table."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class Outcome:
    sessions: int = 0  # connectors run (one per session)
    faults: int = 0
    changes: int = 0  # the writer's streamed writes checked (verify.py)
    snapshot_rows: int = 0  # the writer's rows read by a snapshot
    tombstone_errors: int = 0
    transaction_errors: int = 0
    state_mismatches: int = 0
    unexpected: int = 0  # events of no logged write
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
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
        """Adds the writer's check (verify.Verdict) of one session."""
        for name in ("changes", "snapshot_rows", "lost", "duplicated", "reordered", "unexpected", "tombstone_errors",
                     "transaction_errors", "state_mismatches"):
            setattr(self, name, getattr(self, name) + getattr(verdict, name))
        self.notes += [f"{session}: {example}" for example in verdict.examples]

    def add(self, other: Outcome) -> None:
        for name in ("sessions", "faults", "changes", "snapshot_rows", "tombstone_errors", "transaction_errors",
                     "state_mismatches", "unexpected", "lost", "duplicated", "reordered", "unplanned_exits"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.aborted = self.aborted or other.aborted
        self.recovery += other.recovery
        self.notes += other.notes

    def figures(self) -> dict:
        """What --json writes for the scenario."""
        return {"runs": self.faults, "sessions": self.sessions, "changes": self.changes,
                "snapshot_rows": self.snapshot_rows, "lost": self.lost, "duplicated": self.duplicated,
                "reordered": self.reordered, "unexpected": self.unexpected,
                "tombstone_errors": self.tombstone_errors, "transaction_errors": self.transaction_errors,
                "state_mismatches": self.state_mismatches, "runner_exits": self.unplanned_exits,
                "recovery_s": self.recovery, "aborted": self.aborted, "notes": self.notes}


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
    ("lost", 6, lambda o: o.lost),
    ("dup", 5, lambda o: o.duplicated),
    ("reord", 6, lambda o: o.reordered),
    ("unexp ev", 9, lambda o: o.unexpected),
    ("tomb", 5, lambda o: o.tombstone_errors),
    ("txn", 5, lambda o: o.transaction_errors),
    ("state", 6, lambda o: o.state_mismatches),
    ("unexp exits", 12, lambda o: o.unplanned_exits),
    ("recovery p50/max s", 20, lambda o: _recovery(o.recovery)),
)


def report(results: dict[str, Outcome]) -> str:
    """One row per scenario: runs (connectors), faults, writes checked (streamed changes and snapshot rows), lost,
    duplicated, reordered, events of no logged write, tombstone, transaction metadata and final-state errors,
    unexpected runner exits, recovery median / max."""
    lines = [COLUMNS[0][0].ljust(COLUMNS[0][1]) + "".join(f"{h:>{w}}" for h, w, _ in COLUMNS[1:])]
    for scenario, o in results.items():
        lines.append(scenario.ljust(COLUMNS[0][1]) + "".join(f"{value(o)!s:>{w}}" for _, w, value in COLUMNS[1:]))
    for scenario, o in results.items():
        lines += [f"  {scenario}: {note}" for note in o.notes]
    return "\n".join(lines)
