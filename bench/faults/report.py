"""A scenario's figures (Outcome) and the campaign's table."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

# A fault's recovery (its first event of a write logged after it began) must come within this many seconds
RECOVERY_LIMIT_S = 30.0


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
    unrecovered: int = 0  # faults after which no event came at all
    status_errors: int = 0  # the control plane's stored state at the end is not "streaming" on the lease holder
    notes: list[str] = field(default_factory=list)
    aborted: bool = False
    # the product's Verify after each session (product_verify.py): source rows compared, rows missing in / extra
    # in / different from the topics, sessions it could not compare
    verify_rows: int = 0
    verify_missing: int = 0
    verify_extra: int = 0
    verify_different: int = 0
    verify_errors: int = 0

    @property
    def failed(self) -> bool:
        """Anything lost, duplicated or reordered, a scenario aborted, a runner that exited on its own (a crash:
        restarting it hid the failure from the figures, not from the users of a real deployment), or a row Verify
        found missing, extra or different (or a session it could not compare), or a recovery slower than
        RECOVERY_LIMIT_S or none at all."""
        return bool(self.lost or self.duplicated or self.reordered or self.aborted or self.unplanned_exits
                    or self.slow_recoveries
                    or self.status_errors
                    or self.tombstone_errors or self.transaction_errors or self.state_mismatches or self.unexpected
                    or self.verify_mismatches or self.verify_errors)

    @property
    def slow_recoveries(self) -> int:
        return self.unrecovered + sum(1 for seconds in self.recovery if seconds > RECOVERY_LIMIT_S)

    @property
    def verify_mismatches(self) -> int:
        return self.verify_missing + self.verify_extra + self.verify_different

    def add_verdict(self, verdict, session: str) -> None:
        """Adds the writer's check (verify.Verdict) of one session."""
        for name in ("changes", "snapshot_rows", "lost", "duplicated", "reordered", "unexpected", "tombstone_errors",
                     "transaction_errors", "state_mismatches"):
            setattr(self, name, getattr(self, name) + getattr(verdict, name))
        self.notes += [f"{session}: {example}" for example in verdict.examples]

    def add_verify(self, result, session: str) -> None:
        """Adds Verify's comparison (product_verify.VerifyResult) of one session, its differing keys as notes."""
        for name in ("rows", "missing", "extra", "different"):
            setattr(self, f"verify_{name}", getattr(self, f"verify_{name}") + getattr(result, name))
        if result.error is not None:
            self.verify_errors += 1
            self.notes.append(f"{session}: {result.error}")
        self.notes += [f"{session}: Verify: {mismatch}" for mismatch in result.mismatches]

    def add(self, other: Outcome) -> None:
        for name in ("sessions", "faults", "changes", "snapshot_rows", "tombstone_errors", "transaction_errors",
                     "state_mismatches", "unexpected", "lost", "duplicated", "reordered", "unplanned_exits",
                     "unrecovered", "status_errors",
                     "verify_rows", "verify_missing", "verify_extra", "verify_different", "verify_errors"):
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
                "slow_recoveries": self.slow_recoveries,
                "status_errors": self.status_errors,
                "recovery_s": self.recovery, "aborted": self.aborted, "notes": self.notes,
                "verify": {"rows": self.verify_rows, "missing": self.verify_missing, "extra": self.verify_extra,
                           "different": self.verify_different, "errors": self.verify_errors}}


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
    ("status", 7, lambda o: o.status_errors),
    ("slow", 5, lambda o: o.slow_recoveries),
    ("recovery p50/max s", 20, lambda o: _recovery(o.recovery)),
    ("verify rows", 12, lambda o: o.verify_rows),
    ("miss", 5, lambda o: o.verify_missing),
    ("extra", 6, lambda o: o.verify_extra),
    ("diff", 5, lambda o: o.verify_different),
)


def report(results: dict[str, Outcome]) -> str:
    """One row per scenario: runs (connectors), faults, writes checked (streamed changes and snapshot rows), lost,
    duplicated, reordered, events of no logged write, tombstone, transaction metadata and final-state errors,
    unexpected runner exits, a control-plane status left wrong (zombie-worker), recoveries over RECOVERY_LIMIT_S or
    missing, recovery median / max; then
    Verify's source rows compared and rows missing in, extra in and different from the topics (product_verify.py)."""
    lines = [COLUMNS[0][0].ljust(COLUMNS[0][1]) + "".join(f"{h:>{w}}" for h, w, _ in COLUMNS[1:])]
    for scenario, o in results.items():
        lines.append(scenario.ljust(COLUMNS[0][1]) + "".join(f"{value(o)!s:>{w}}" for _, w, value in COLUMNS[1:]))
    for scenario, o in results.items():
        lines += [f"  {scenario}: {note}" for note in o.notes]
    return "\n".join(lines)
