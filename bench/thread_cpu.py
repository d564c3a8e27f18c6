"""This process's CPU time by thread (Linux /proc), grouped by role, to tell which thread an event's CPU goes to.

    before = thread_cpu.sample()
    ...                                   # the measured work
    print(thread_cpu.breakdown(before, thread_cpu.sample(), events))

Python threads are named by the start of their `threading` name (`commit-x_0` is `commit`, `pymongo_…` is
`pymongo`), librdkafka's by the name it gives them (`rdk:broker…` is `rdk:broker`). Threads that ended in between
are not counted (their CPU is in the process total only).
"""

from __future__ import annotations

import os
import re
import threading
from collections import Counter
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")
_ROLE = re.compile(r"^(rdk:[a-z]+|change-stream|[A-Za-z]+)")


def _ticks(task: Path) -> int | None:
    try:
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)


def _native_name(task: Path) -> str:
    try:
        return (task / "comm").read_text().strip()
    except OSError:
        return "?"


def sample() -> dict[int, tuple[str, int]]:
    """Thread id -> (role, CPU ticks so far)."""
    names = {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}
    out = {}
    for task in Path("/proc/self/task").iterdir():
        ticks = _ticks(task)
        if ticks is None:
            continue
        tid = int(task.name)
        name = names.get(tid) or _native_name(task)
        match = _ROLE.match(name)
        out[tid] = (match.group(1) if match else name, ticks)
    return out


def breakdown(before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]], events: int) -> str:
    """`role µs` per event, the busiest first ("CPU per event by thread: pipeline 9.1 µs, …")."""
    by_role: Counter = Counter()
    for tid, (role, ticks) in after.items():
        by_role[role] += ticks - before.get(tid, (role, 0))[1]
    parts = [f"{role} {ticks / _TICKS * 1e6 / events:.1f} µs" for role, ticks in by_role.most_common() if ticks]
    return "CPU per event by thread: " + (", ".join(parts) or "none measurable")
