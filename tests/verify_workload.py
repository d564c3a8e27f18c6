"""What the Verify tests of every source share for runs under a write workload (bench/write_load.py): Verify run
again and again while the workload writes, then once more after a stray record was produced into the topic."""

from __future__ import annotations

import time
from collections.abc import Callable

STRAY_KEY = 1_000_000  # beyond the workload's keys: only the stray record has it


def verify_repeatedly(run_verify: Callable[[], object], seconds: float, at_least: int = 2) -> list:
    """Reports of Verify runs one after the other, for `seconds` and at least `at_least` runs."""
    reports = []
    deadline = time.monotonic() + seconds
    while len(reports) < at_least or time.monotonic() < deadline:
        reports.append(run_verify())
    return reports


def assert_no_false_alarm(reports: list, load, min_rows: int, min_writes: int = 1000) -> None:
    print(f"workload {load.rate:.0f} writes/s ({load.writes} writes) during Verify; "
          + "; ".join(r.summary() for r in reports))
    assert load.writes >= min_writes, f"the workload wrote only {load.writes} times: Verify was not under load"
    for report in reports:
        assert report.rows > min_rows, report.summary()
        assert report.mismatched == 0, report.to_json()
