"""A pipeline process's RSS sampled against its progress, the figures bench.memory prints, and the clean-up of the
topics a run made on the shared dev broker."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path

SAMPLE_S = 0.2


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def start(target, *args):
    """`target(*args, stop)` in a spawned process of its own; returns the process and its stop event."""
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    process = context.Process(target=target, args=(*args, stop), daemon=True)
    process.start()
    return process, stop


def sample(process, progress: Callable[[], float], timeout: float = 3600) -> list[tuple[float, float]]:
    """(fraction done, RSS MB) every SAMPLE_S until `progress()` reaches 1."""
    samples = []
    deadline = time.monotonic() + timeout
    while True:
        done = progress()
        rss = rss_mb(process.pid)
        if rss is not None:
            samples.append((min(done, 1.0), rss))
        if done >= 1:
            return samples
        if not process.is_alive():
            raise SystemExit(f"the pipeline process exited (status {process.exitcode}) at {done:.0%} of the work")
        if time.monotonic() > deadline:
            raise SystemExit(f"the pipeline did not finish in {timeout:.0f}s ({done:.0%} done)")
        time.sleep(SAMPLE_S)


def slope_per_million(samples: list[tuple[float, float]], units: float) -> float:
    """Least-squares RSS growth (MB per million units) over the middle of the work (20 % to 95 %): start-up and
    shutdown are left out."""
    middle = [(done * units, rss) for done, rss in samples if 0.2 <= done <= 0.95]
    if len(middle) < 2:
        return 0.0
    mean_x = sum(x for x, _ in middle) / len(middle)
    mean_y = sum(y for _, y in middle) / len(middle)
    spread = sum((x - mean_x) ** 2 for x, _ in middle)
    return sum((x - mean_x) * (y - mean_y) for x, y in middle) / spread * 1e6 if spread else 0.0


def report(label: str, samples: list[tuple[float, float]], units: float, unit: str) -> float:
    """samples: (fraction of the work done, RSS MB), in order; returns the growth in MB per million units."""
    if not samples:
        print(f"{label}: no samples")
        return 0.0
    at = [next((rss for done, rss in samples if done >= q), samples[-1][1]) for q in (0.05, 0.25, 0.5, 0.75, 0.95)]
    peak = max(rss for _, rss in samples)
    growth = slope_per_million(samples, units)
    print(f"{label}: RSS MB at start {samples[0][1]:.0f}, at 5/25/50/75/95 %: "
          + " / ".join(f"{value:.0f}" for value in at)
          + f"; peak {peak:.0f}; growth {growth:+.1f} MB per million {unit} (least squares, 20-95 %)", flush=True)
    return growth
