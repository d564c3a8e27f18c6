"""What a latency run does the same way for every source (bench.streaming for MongoDB, bench.relational_latency for
PostgreSQL and MariaDB): the read_committed consumer process, the pipeline's stage marks, the dashboard lag
sampler and the breakdown of an event's time by stage."""

from __future__ import annotations

import array
import statistics
import threading
import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer

from bench.stage_marks import StageMarks, percentile

# The latency run's consumer: what an application that wants changes soon would set. fetch.wait.max.ms bounds how
# long the broker holds a fetch that found nothing new (librdkafka's default, 500 ms, would be added to latencies).
CONSUMER_SETTINGS = {"isolation.level": "read_committed", "fetch.wait.max.ms": 10, "auto.offset.reset": "earliest"}

# The stages the pipeline marks itself (trace_pipeline), in the order an event goes through them
PIPELINE_STAGES = ("taken", "built", "handed", "flushed", "committed")


def consume(bootstrap: str, topic: str, total: int, timeout: float, ready, out,
            event_number: Callable[[bytes], tuple[int | None, int]]) -> None:
    """Reads `topic` read_committed (a process of its own) until events 0..total-1 came. `event_number(value)` gives
    an event's number (negative: the warm-up event, which sets `ready`; None: not an event of the run) and its
    source time in µs (0: none). Sends back when each event was received (ns, 0: never) and its source time."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         **CONSUMER_SETTINGS, "topic.metadata.refresh.interval.ms": 500})
    consumer.subscribe([topic])
    seen_ns, source_us = array.array("q", bytes(8 * total)), array.array("q", bytes(8 * total))
    seen = 0
    deadline = time.monotonic() + timeout
    while seen < total and time.monotonic() < deadline:
        # consume(n, timeout) waits for n messages or the whole timeout: it would add up to that to every
        # latency; poll() returns each message as soon as it is fetched.
        message = consumer.poll(0.1)
        if message is None or message.error() or not message.value():
            continue
        received_ns = time.time_ns()
        number, at_us = event_number(message.value())
        if number is None:
            continue
        if number < 0:
            ready.set()
            continue
        seen += not seen_ns[number]
        seen_ns[number] = received_ns
        source_us[number] = at_us
    consumer.close()
    out.send_bytes(seen_ns.tobytes())
    out.send_bytes(source_us.tobytes())
    out.close()


def receive_seen(results) -> tuple[array.array, array.array]:
    """What `consume` sent back: (received ns, source µs) per event number."""
    seen_ns, source_us = array.array("q"), array.array("q")
    seen_ns.frombytes(results.recv_bytes())
    source_us.frombytes(results.recv_bytes())
    return seen_ns, source_us


def receive_writes(results) -> tuple[array.array, array.array, float]:
    """What the application process sent back: (sent ns, acknowledged ns) per row number, and its seconds."""
    sent_ns, acked_ns = array.array("q"), array.array("q")
    sent_ns.frombytes(results.recv_bytes())
    acked_ns.frombytes(results.recv_bytes())
    return sent_ns, acked_ns, results.recv()


def last_number(items, number_of: Callable[[object], int | None]) -> int | None:
    for item in reversed(items):
        number = number_of(item)
        if number is not None:
            return number
    return None


def trace_pipeline(pipeline, marks: StageMarks, change_number: Callable[[object], int | None],
                   message_number: Callable[[object], int | None]) -> None:
    """Marks PIPELINE_STAGES through the pipeline's `trace` seam and the sink's `before_commit` (once per batch)."""
    handed = [None]

    def trace(stage: str, batch: list) -> None:
        at_ns = time.time_ns()
        number = last_number(batch, change_number if stage == "taken" else message_number)
        if stage == "handed":
            handed[0] = number
        marks.mark(stage, number, at_ns)

    pipeline.trace = trace
    pipeline.sink.before_commit = lambda: marks.mark("flushed", handed[0])  # commits are one at a time


class LagSampler:
    """The dashboard's lag (the pipeline's MilliSecondsBehindSource) read every 10 ms while in the `with` block;
    `samples` sorted at its end."""

    def __init__(self, pipeline) -> None:
        self.pipeline, self.samples = pipeline, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            lag = self.pipeline.metrics.ms_behind_source
            if lag is not None:
                self.samples.append(float(lag))

    def __enter__(self) -> LagSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.sort()


def stage_figures(stages: list[tuple[str, str, str]], total: int, outside: dict[str, array.array],
                  marks: StageMarks, marked: tuple[str, ...]) -> dict[str, list[float]]:
    """Per (label, from, to) of `stages`, the sorted milliseconds each event 0..total-1 spent between the two: the
    times of stages measured outside the pipeline (`outside`: ns per event, 0 for never) or of the `marked` ones."""
    figures: dict[str, list[float]] = {label: [] for label, _, _ in stages}
    for i in range(total):
        at = {stage: times[i] or None for stage, times in outside.items()}
        for stage in marked:
            at[stage] = marks.at(stage, i)
        for label, begin, end in stages:
            if at[begin] is not None and at[end] is not None:
                figures[label].append((at[end] - at[begin]) / 1e6)
    return {label: sorted(values) for label, values in figures.items() if values}


def print_lag(lag: list[float]) -> None:
    if lag:
        print(f"  dashboard lag (MilliSecondsBehindSource, read every 10 ms): p50 {statistics.median(lag):.1f} ms, "
              f"p99 {percentile(lag, 0.99):.1f} ms, max {lag[-1]:.1f} ms")


def print_stages(labels: list[str], figures: dict[str, list[float]], width: int) -> None:
    print(f"  {'stage (ms)':<{width}}{'p50':>8}{'p95':>8}{'p99':>8}{'max':>8}")
    for label in labels:
        values = figures.get(label)
        if values:
            print(f"  {label:<{width}}{statistics.median(values):>8.1f}{percentile(values, 0.95):>8.1f}"
                  f"{percentile(values, 0.99):>8.1f}{values[-1]:>8.1f}")
