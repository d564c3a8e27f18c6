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
from collections.abc import Callable
from dataclasses import dataclass

from bench import thread_cpu
from bench.latency_run import (
    PIPELINE_STAGES,
    LagSampler,
    consume,
    last_number,
    print_lag,
    print_stages,
    receive_seen,
    receive_writes,
    stage_figures,
    trace_pipeline,
)
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


def event_number(value: bytes) -> tuple[int | None, int]:
    """A row's number `n` (the warm-up row's is negative) and its event's source.ts_us (0: none), for consume."""
    after, source = _event_after(value)
    number = after.get("n") if after else None
    return (number if isinstance(number, int) else None), source.get("ts_us") or 0


def _message_number(message, topic: str) -> int | None:
    if message.topic != topic or not message.value:
        return None
    return event_number(message.value)[0]


class QueuedMarks:
    """Marks "queued" each time a reader puts changes into a ChangeQueue, while installed (a bench-only wrapper of
    the class's put, put_many and put_span)."""

    def __init__(self, marks: StageMarks, number_of: Callable[[object], int | None]) -> None:
        self.marks, self.number_of = marks, number_of
        self._put, self._put_many, self._put_span = ChangeQueue.put, ChangeQueue.put_many, ChangeQueue.put_span

    def __enter__(self) -> QueuedMarks:
        put, put_many, put_span, marks, number_of = (self._put, self._put_many, self._put_span, self.marks,
                                                     self.number_of)

        def traced_put(queue, item, timeout=None, **size):
            put(queue, item, timeout, **size)
            marks.mark("queued", number_of(item))

        def traced_put_many(queue, items, timeout=None, **size):
            done = put_many(queue, items, timeout, **size)
            marks.mark("queued", last_number(items[:done], number_of))
            return done

        def traced_put_span(queue, span, timeout=None, **size):
            rest = put_span(queue, span, timeout, **size)
            changes = list(span)
            marks.mark("queued", last_number(changes[:len(changes) - len(rest or ())], number_of))
            return rest

        ChangeQueue.put, ChangeQueue.put_many, ChangeQueue.put_span = traced_put, traced_put_many, traced_put_span
        return self

    def __exit__(self, *exc_info) -> None:
        ChangeQueue.put, ChangeQueue.put_many, ChangeQueue.put_span = self._put, self._put_many, self._put_span


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
    trace_pipeline(pipeline, marks, target.queued_number, lambda message: _message_number(message, topic))

    total = int(rate * seconds)
    spawn = multiprocessing.get_context("spawn")
    consumer_ready = spawn.Event()
    seen_results, consumer_end = spawn.Pipe(duplex=False)
    consumer = spawn.Process(target=consume, args=(bootstrap, topic, total, seconds + 120, consumer_ready,
                                                   consumer_end, event_number))
    consumer.start()
    consumer_end.close()
    deadline = time.monotonic() + 120
    while not consumer_ready.wait(1):
        warm_up_row()
        if time.monotonic() > deadline:
            raise TimeoutError("the warm-up row did not reach the consumer")
    with LagSampler(pipeline) as lag:
        load_before = os.getloadavg()[0]
        threads, cpu, began = thread_cpu.sample(), time.process_time(), time.monotonic()
        results, child_end = spawn.Pipe(duplex=False)
        writer = spawn.Process(target=target.writes, args=(*target.writes_args, rate, total, child_end))
        writer.start()
        child_end.close()
        sent_ns, acked_ns, write_seconds = receive_writes(results)
        writer.join(30)
        seen, source_us = receive_seen(seen_results)
        consumer.join(30)
        cpu_share = (time.process_time() - cpu) / (time.monotonic() - began)
        by_thread = thread_cpu.breakdown(threads, thread_cpu.sample(), total)
    if runner.errors:
        raise SystemExit(f"the pipeline failed: {runner.errors}")

    figures = stage_figures(STAGES, total, {"sent": sent_ns, "acked": acked_ns, "seen": seen}, marks,
                            ("queued", *PIPELINE_STAGES))
    from_source_commit = sorted((seen[i] - source_us[i] * 1000) / 1e6 for i in range(total)
                                if seen[i] and source_us[i])
    if from_source_commit and target.commit_time_in_events:
        figures["source commit time (ts_us) → seen"] = from_source_commit
    return {"stages": figures, "events": sum(1 for at in seen if at), "total": total,
            "write_rate": total / write_seconds, "batches": len(marks.numbers.get("committed", [])),
            "lag": lag.samples, "cpu": (cpu_share, by_thread), "load": (load_before, os.getloadavg()[0])}


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
    print_lag(result["lag"])
    print_stages([label for label, _, _ in STAGES] + [label for label in result["stages"]
                                                       if label not in {s[0] for s in STAGES}], result["stages"], 40)
