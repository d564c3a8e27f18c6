"""This process's CPU time by thread (Linux /proc), grouped by role, to tell which thread an event's CPU goes to.

    before = thread_cpu.sample()
    ...                                   # the measured work
    print(thread_cpu.breakdown(before, thread_cpu.sample(), events))

Python threads are named by the start of their `threading` name (`commit-x_0` is `commit`, `pymongo_…` is
`pymongo`), librdkafka's by the name it gives them (`rdk:broker…` is `rdk:broker`). Threads that ended in between
are not counted (their CPU is in the process total only).

A thread's CPU is its scheduler run time in nanoseconds (`/proc/self/task/<tid>/schedstat`); its `stat` ticks, where
that file is missing, are 10 ms each and rounded per thread, which left a tenth of a microsecond per event per thread
unaccounted in runs of 100,000 events.
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


def _run_ns(task: Path) -> int | None:
    """The thread's CPU so far in ns: the scheduler's run time, else its stat ticks."""
    try:
        return int((task / "schedstat").read_text().split(None, 1)[0])
    except (OSError, ValueError, IndexError):
        ticks = _ticks(task)
        return None if ticks is None else ticks * 1_000_000_000 // _TICKS


def sample() -> dict[int, tuple[str, int]]:
    """Thread id -> (role, CPU ns so far)."""
    names = {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}
    out = {}
    for task in Path("/proc/self/task").iterdir():
        run_ns = _run_ns(task)
        if run_ns is None:
            continue
        tid = int(task.name)
        name = names.get(tid) or _native_name(task)
        match = _ROLE.match(name)
        out[tid] = (match.group(1) if match else name, run_ns)
    return out


def breakdown(before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]], events: int) -> str:
    """`role µs` per event, the busiest first ("CPU per event by thread: pipeline 9.1 µs, …")."""
    by_role: Counter = Counter()
    for tid, (role, run_ns) in after.items():
        by_role[role] += run_ns - before.get(tid, (role, 0))[1]
    parts = [f"{role} {run_ns / 1e3 / events:.1f} µs" for role, run_ns in by_role.most_common()
             if run_ns >= 50 * events]  # 0.05 µs an event: what prints as 0.1
    return "CPU per event by thread: " + (", ".join(parts) or "none measurable")


# -- the machine's CPU: this process, its neighbours (the source emulator, the Kafka broker), the rest, idle

def _process_ticks(pid: int) -> int:
    return _ticks(Path(f"/proc/{pid}")) or 0


def broker_pid() -> int | None:
    """The local Kafka broker's process (the devstack's: `kafka.Kafka` on its command line), if one runs here."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"kafka.Kafka\x00" in command:
            return int(entry.name)
    return None


def machine_sample(processes: dict[str, int | None]) -> dict[str, int]:
    """CPU ticks so far of the machine (`busy`, `idle`), of this process (`ours`) and of each named process."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    idle = fields[3] + fields[4]  # idle, iowait
    out = {"busy": sum(fields) - idle, "idle": idle, "ours": _process_ticks(os.getpid())}
    for name, pid in processes.items():
        if pid is not None:
            out[name] = _process_ticks(pid)
    return out


def machine_breakdown(before: dict[str, int], after: dict[str, int], events: int) -> str:
    """`name µs` of the machine's CPU per event: this process, the named ones, the rest, and what stayed idle."""
    spent = {name: after[name] - before.get(name, after[name]) for name in after}
    named = [name for name in after if name not in ("busy", "idle")]
    other = spent["busy"] - sum(spent[name] for name in named)
    parts = [f"{name} {spent[name] / _TICKS * 1e6 / events:.1f} µs" for name in named]
    parts.append(f"other {max(0, other) / _TICKS * 1e6 / events:.1f} µs")
    return (f"machine CPU per event ({os.cpu_count()} cores): " + ", ".join(parts)
            + f"; idle {spent['idle'] / _TICKS * 1e6 / events:.1f} µs")
