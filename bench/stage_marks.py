"""When each stage of a pipeline got how far, for the latency benches' breakdowns (bench.streaming,
bench.relational_latency), and their percentiles."""

from __future__ import annotations

import bisect
import time


class StageMarks:
    """When each stage of the pipeline got how far: per stage, (time, highest event number reached) in order.

    Every stage sees the events in write order, so an event's time at a stage is that of the first mark whose number
    reaches it. Marks come once per batch (a source reply, a queue drain, a transaction), never once per event.
    """

    def __init__(self) -> None:
        self.times: dict[str, list[int]] = {}
        self.numbers: dict[str, list[int]] = {}

    def mark(self, stage: str, number: int | None, at_ns: int | None = None) -> None:
        if number is None:
            return
        at_ns = at_ns if at_ns is not None else time.time_ns()
        numbers = self.numbers.setdefault(stage, [])
        self.times.setdefault(stage, []).append(at_ns)
        numbers.append(max(number, numbers[-1]) if numbers else number)

    def at(self, stage: str, number: int) -> int | None:
        numbers = self.numbers.get(stage, [])
        index = bisect.bisect_left(numbers, number)
        return self.times[stage][index] if index < len(numbers) else None


def percentile(values: list[float], fraction: float) -> float:
    """Of sorted values."""
    return values[max(0, int(len(values) * fraction + 0.5) - 1)]
