"""End-to-end latency of a PostgreSQL or MariaDB pipeline at a fixed write rate, broken down by stage (as
bench.streaming does for MongoDB): bench.postgres and bench.mariadb run it.

An application process inserts rows `n` = 0, 1, 2, ... into a table `lat (n, payload)` at the rate, one row per
transaction (the rows due when it fell behind go in one round trip, each still a transaction of its own), and notes
when it sent each and when its commit was acknowledged. A read_committed consumer process notes when each event
reaches it. The pipeline runs in this process; its stages are marked once per batch: "queued" when the source's
reader puts a change into the change queue (what the reader got from the server), and the pipeline's `trace` seam
and the sink's `before_commit` for the rest.
"""

from __future__ import annotations

import array
import json
import multiprocessing
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Consumer

from bench import thread_cpu
from bench.stage_marks import StageMarks, percentile
from bench.streaming_start import wait_until_streaming
from connectors.core.stream import ChangeQueue
from connectors.runner import ConnectorRunner

PAYLOAD = "x" * 200

# (label, from stage, to stage) in the order an event goes through them
STAGES = [
    ("write: commit acknowledged", "sent", "acked"),
    ("acknowledged → read and queued", "acked", "queued"),
    ("queued until the loop takes it", "queued", "taken"),
    ("built into Kafka messages", "taken", "built"),
    ("waits for the previous commit", "built", "handed"),
    ("produced and acknowledged", "handed", "flushed"),
    ("transaction committed", "flushed", "committed"),
    ("read_committed consumer sees it", "committed", "seen"),
    ("commit acknowledged → seen", "acked", "seen"),
    ("end to end (sent → seen)", "sent", "seen"),
]

CONSUMER_SETTINGS = {"isolation.level": "read_committed", "fetch.wait.max.ms": 10, "auto.offset.reset": "earliest"}


@dataclass
class LatencyTarget:
    """What differs between the sources: the connector's configuration, the application's writes (a picklable
    function run in a process of its own: `write(first, count)` inserts rows first..first+count-1, each committed
    on its own) and the number of a change the reader queues (None: not a row of `lat`)."""

    config: object
    topic: str
    writes: Callable  # writes(*writes_args, rate, total, out): see paced_writes
    writes_args: tuple
    queued_number: Callable[[object], int | None]
    commit_time_in_events: bool = False  # source.ts_us is the commit's time (PostgreSQL), not a whole second


def paced_writes(write: Callable[[int, int], None], rate: float, total: int, out) -> None:
    """Calls write(first, count) for rows 0..total-1 at `rate` rows/s; sends back when each row was sent and
    acknowledged (ns) and how long the writes took (s)."""
    sent_ns, acked_ns = array.array("q", bytes(8 * total)), array.array("q", bytes(8 * total))
    began = time.monotonic()
    written = 0
    while written < total:
        due = min(total, int((time.monotonic() - began) * rate) + 1)
        if due <= written:
            time.sleep(max(0.0, began + written / rate - time.monotonic()))
            continue
        sent = time.time_ns()
        write(written, due - written)
        acked = time.time_ns()
        for i in range(written, due):
            sent_ns[i], acked_ns[i] = sent, acked
        written = due
    out.send_bytes(sent_ns.tobytes())
    out.send_bytes(acked_ns.tobytes())
    out.send(time.monotonic() - began)
    out.close()


def _event_after(value: bytes) -> tuple[dict | None, dict]:
    """(after, source) of an event value, with or without the JSON converter's schema."""
    document = json.loads(value)
    payload = document["payload"] if "schema" in document and "payload" in document else document
    return payload.get("after"), payload.get("source") or {}


def consume(bootstrap: str, topic: str, total: int, timeout: float, ready, out) -> None:
    """Reads `topic` read_committed (a process of its own) until events 0..total-1 came; sets `ready` at the
    warm-up row (n < 0); sends back when each event was received (ns, 0: never) and its source.ts_us (0: none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         **CONSUMER_SETTINGS, "topic.metadata.refresh.interval.ms": 500})
    consumer.subscribe([topic])
    seen_ns, source_us = array.array("q", bytes(8 * total)), array.array("q", bytes(8 * total))
    seen = 0
    deadline = time.monotonic() + timeout
    while seen < total and time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is None or message.error() or not message.value():
            continue
        received_ns = time.time_ns()
        after, source = _event_after(message.value())
        number = after.get("n") if after else None
        if not isinstance(number, int):
            continue
        if number < 0:
            ready.set()
            continue
        seen += not seen_ns[number]
        seen_ns[number] = received_ns
        source_us[number] = source.get("ts_us") or 0
    consumer.close()
    out.send_bytes(seen_ns.tobytes())
    out.send_bytes(source_us.tobytes())
    out.close()


def _message_number(message, topic: str) -> int | None:
    if message.topic != topic or not message.value:
        return None
    after, _ = _event_after(message.value)
    number = after.get("n") if after else None
    return number if isinstance(number, int) else None


def _last(items, number_of) -> int | None:
    for item in reversed(items):
        number = number_of(item)
        if number is not None:
            return number
    return None


class QueuedMarks:
    """Marks "queued" each time a reader puts changes into a ChangeQueue, while installed (a bench-only wrapper of
    the class's put and put_many)."""

    def __init__(self, marks: StageMarks, number_of: Callable[[object], int | None]) -> None:
        self.marks, self.number_of = marks, number_of
        self._put, self._put_many = ChangeQueue.put, ChangeQueue.put_many

    def __enter__(self) -> QueuedMarks:
        put, put_many, marks, number_of = self._put, self._put_many, self.marks, self.number_of

        def traced_put(queue, item, timeout=None, **size):
            put(queue, item, timeout, **size)
            marks.mark("queued", number_of(item))

        def traced_put_many(queue, items, timeout=None, **size):
            done = put_many(queue, items, timeout, **size)
            marks.mark("queued", _last(items[:done], number_of))
            return done

        ChangeQueue.put, ChangeQueue.put_many = traced_put, traced_put_many
        return self

    def __exit__(self, *exc_info) -> None:
        ChangeQueue.put, ChangeQueue.put_many = self._put, self._put_many


def measure(target: LatencyTarget, bootstrap: str, rate: float, seconds: float,
            warm_up_row: Callable[[], None]) -> dict:
    """Runs the connector, writes `rate` rows/s for `seconds` once a warm-up row went all the way through, and
    returns the figures by stage. `warm_up_row()` writes the row n = -1 (again: until the consumer sees it)."""
    marks = StageMarks()
    stop = threading.Event()
    with QueuedMarks(marks, target.queued_number):
        runner = ConnectorRunner(target.config, bootstrap, stop)
        thread = threading.Thread(target=runner.run, daemon=True)
        thread.start()
        try:
            return _measure(target, bootstrap, rate, seconds, warm_up_row, marks, runner, thread)
        finally:
            stop.set()
            thread.join(60)


def _measure(target, bootstrap, rate, seconds, warm_up_row, marks, runner, thread) -> dict:
    topic = target.topic
    wait_until_streaming(runner, thread)
    pipeline = next(iter(runner.pipelines.values()))
    handed = [None]

    def trace(stage: str, batch: list) -> None:
        at_ns = time.time_ns()
        if stage == "taken":
            number = _last(batch, target.queued_number)
        else:
            number = _last(batch, lambda m: _message_number(m, topic))
        if stage == "handed":
            handed[0] = number
        marks.mark(stage, number, at_ns)

    pipeline.trace = trace
    pipeline.sink.before_commit = lambda: marks.mark("flushed", handed[0])  # commits are one at a time

    total = int(rate * seconds)
    spawn = multiprocessing.get_context("spawn")
    consumer_ready = spawn.Event()
    seen_results, consumer_end = spawn.Pipe(duplex=False)
    consumer = spawn.Process(target=consume, args=(bootstrap, topic, total, seconds + 120, consumer_ready,
                                                   consumer_end))
    consumer.start()
    consumer_end.close()
    deadline = time.monotonic() + 120
    while not consumer_ready.wait(1):
        warm_up_row()
        if time.monotonic() > deadline:
            raise TimeoutError("the warm-up row did not reach the consumer")
    lag_samples: list[float] = []
    sampling = threading.Event()

    def sample_lag() -> None:
        while not sampling.wait(0.01):
            lag = pipeline.metrics.ms_behind_source
            if lag is not None:
                lag_samples.append(float(lag))

    sampler = threading.Thread(target=sample_lag, daemon=True)
    sampler.start()
    load_before = os.getloadavg()[0]
    threads, cpu, began = thread_cpu.sample(), time.process_time(), time.monotonic()
    results, child_end = spawn.Pipe(duplex=False)
    writer = spawn.Process(target=target.writes, args=(*target.writes_args, rate, total, child_end))
    writer.start()
    child_end.close()
    sent_ns, acked_ns = array.array("q"), array.array("q")
    sent_ns.frombytes(results.recv_bytes())
    acked_ns.frombytes(results.recv_bytes())
    write_seconds = results.recv()
    writer.join(30)
    seen, source_us = array.array("q"), array.array("q")
    seen.frombytes(seen_results.recv_bytes())
    source_us.frombytes(seen_results.recv_bytes())
    consumer.join(30)
    cpu_share = (time.process_time() - cpu) / (time.monotonic() - began)
    by_thread = thread_cpu.breakdown(threads, thread_cpu.sample(), total)
    sampling.set()
    sampler.join()
    if runner.errors:
        raise SystemExit(f"the pipeline failed: {runner.errors}")

    stages: dict[str, list[float]] = {label: [] for label, _, _ in STAGES}
    from_source_commit: list[float] = []
    for i in range(total):
        at = {"sent": sent_ns[i], "acked": acked_ns[i], "seen": seen[i] or None}
        for stage in ("queued", "taken", "built", "handed", "flushed", "committed"):
            at[stage] = marks.at(stage, i)
        for label, begin, end in STAGES:
            if at[begin] is not None and at[end] is not None:
                stages[label].append((at[end] - at[begin]) / 1e6)
        if seen[i] and source_us[i]:
            from_source_commit.append((seen[i] - source_us[i] * 1000) / 1e6)
    figures = {label: sorted(values) for label, values in stages.items() if values}
    if from_source_commit and target.commit_time_in_events:
        figures["source commit time (ts_us) → seen"] = sorted(from_source_commit)
    return {"stages": figures, "events": sum(1 for at in seen if at), "total": total,
            "write_rate": total / write_seconds, "batches": len(marks.numbers.get("committed", [])),
            "lag": sorted(lag_samples), "cpu": (cpu_share, by_thread), "load": (load_before, os.getloadavg()[0])}


HEADLINE = "commit acknowledged → seen"


def print_latency(rate: float, result: dict, warm_up: bool = False) -> None:
    headline = result["stages"].get(HEADLINE, [])
    if warm_up:
        if headline:
            print(f"warm-up run (not measured): commit → read_committed consumer p50 {statistics.median(headline):.1f} "
                  f"ms, p99 {percentile(headline, 0.99):.1f} ms")
        return
    if headline:
        print(f"latency at {rate:.0f} writes/s: source commit acknowledged → read_committed consumer p50 "
              f"{statistics.median(headline):.1f} ms, p99 {percentile(headline, 0.99):.1f} ms")
    print(f"  {result['events']} of {result['total']} events seen; writes went at {result['write_rate']:,.0f}/s; "
          f"{result['batches']} transactions; machine load (1 min) {result['load'][0]:.1f} at start, "
          f"{result['load'][1]:.1f} at end, {os.cpu_count()} cores")
    print(f"  this process (the connector) used {result['cpu'][0]:.0%} of a core; {result['cpu'][1]}")
    lag = result["lag"]
    if lag:
        print(f"  dashboard lag (MilliSecondsBehindSource, read every 10 ms): p50 {statistics.median(lag):.1f} ms, "
              f"p99 {percentile(lag, 0.99):.1f} ms, max {lag[-1]:.1f} ms")
    print(f"  {'stage (ms)':<40}{'p50':>8}{'p95':>8}{'p99':>8}{'max':>8}")
    for label in [label for label, _, _ in STAGES] + [label for label in result["stages"]
                                                       if label not in {s[0] for s in STAGES}]:
        values = result["stages"].get(label)
        if values:
            print(f"  {label:<40}{statistics.median(values):>8.1f}{percentile(values, 0.95):>8.1f}"
                  f"{percentile(values, 0.99):>8.1f}{values[-1]:>8.1f}")
