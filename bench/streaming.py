"""Streaming benchmark: pipeline throughput catching up on a pre-filled oplog, end-to-end latency at a fixed
write rate, and the raw confluent-kafka producer rate for the same messages as the ceiling.

    python -m bench.streaming [--changes 50000] [--rate 2000] [--seconds 10] [--warm-up 30] [--latency-only]
    python -m bench.streaming --property provide.transaction.metadata=true   # any connector property

The latency run breaks each event's time down by stage (write acknowledged, change stream reply, taken from the
queue, built, handed to the sink, produced, committed, seen by a read_committed consumer), from marks the pipeline's
`trace` seam and a pymongo command listener set once per batch. It follows a warm-up run at the same rate (printed,
not measured): on a broker started a few minutes before, the JVM is still compiling the transaction paths, and the
p99 of the first runs was 2-5x that of later ones here.

Also prints the rate of pymongo's watch() alone reading the same changes, to tell a slow source from a slow pipeline.

Needs Kafka (`python -m devstack up kafka`); runs its own MongoDB emulator (a separate process) unless MONGODB_URI
is set.
"""

from __future__ import annotations

import argparse
import array
import datetime
import gc
import json
import multiprocessing
import os
import re
import statistics
import threading
import time
import uuid
from collections.abc import Mapping

import pymongo
import pymongo.monitoring
from bson import Int64
from confluent_kafka import Consumer, TopicPartition

from bench import thread_cpu
from bench.ceiling import producer_ceiling, read_messages
from bench.emulator import one_member_deployment
from bench.latency_run import (
    CONSUMER_SETTINGS,
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
from bench.topics import delete_topics
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.rawjson import RawChangeEvent
from connectors.runner import ConnectorRunner
from devstack import kafka as devstack_kafka
from devstack import settings


def _document(i: int) -> dict:
    return {"_id": i, "payload": "x" * 960, "n": i, "sent_ns": time.time_ns()}


def _typed_document(i: int) -> dict:
    """About 1 KB of the field types of a typical application document (strings, numbers, dates, nesting)."""
    return {
        "_id": i, "n": i, "sent_ns": time.time_ns(), "name": f"customer {i}", "email": f"c{i}@example.org",
        "score": i / 7, "balance": Int64(i * 1000), "created": datetime.datetime(2021, 5, 6, 7, 8, 9),
        "active": i % 2 == 0, "note": None, "tags": ["a", "b", "c", "d"],
        "address": {"street": f"{i} Main St", "city": "Springfield", "zip": "12345", "geo": [12.5, -45.25]},
        "items": [{"sku": f"S{k}", "qty": k, "price": k * 1.25 + i / 100} for k in range(14)],
    }


DOCUMENTS = {"string": _document, "typed": _typed_document}


# --property KEY=VALUE: connector properties of every measured pipeline, over the defaults below
EXTRA_PROPERTIES: dict[str, str] = {}


def _config(name: str, uri: str) -> ConnectorConfig:
    return ConnectorConfig.from_properties({
        "name": name, "topic.prefix": name, "mongodb.connection.string": uri, "database.include.list": name,
        "snapshot.mode": "never", "offset.storage.topic": f"{name}.offsets", "max.batch.size": 4096,
        "max.queue.size": 16384, "poll.interval.ms": 100, **EXTRA_PROPERTIES,
    })


def wait_committed(bootstrap: str, topic: str, count: int, timeout: float) -> float:
    """The monotonic time at which the topic's partition 0 holds `count` committed messages."""
    return committed_reached(bootstrap, topic, count, timeout)[0]


def committed_reached(bootstrap: str, topic: str, count: int, timeout: float,
                      poll: float = 0.02) -> tuple[float, int]:
    """(monotonic time, committed messages) once the topic's partition 0 holds `count` committed messages or more,
    looked at every `poll` seconds."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         "isolation.level": "read_committed"})
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=2)
            except Exception:  # noqa: BLE001 - the topic is not there yet
                high = 0
            if high >= count:
                return time.monotonic(), high
            time.sleep(poll)
    finally:
        consumer.close()
    raise TimeoutError(f"{topic} did not reach {count} messages")


def watch_rate(coll, token, changes: int, full_document: str | None) -> tuple[float, float]:
    """pymongo alone reading the same changes from the same position with the pipeline's options (its batch size and
    fullDocument), decoded: events/s and CPU µs per event."""
    began, cpu = time.monotonic(), time.process_time()
    seen = 0
    with coll.watch(resume_after=token, batch_size=4096, max_await_time_ms=100, full_document=full_document) as stream:
        while seen < changes:
            if stream.try_next() is not None:
                seen += 1
    return changes / (time.monotonic() - began), (time.process_time() - cpu) * 1e6 / changes


Messages = list[tuple[str, bytes, bytes]]


def _fill(client, coll, changes: int, document, transaction_size: int) -> dict:
    """Inserts `changes` documents into `coll` (`transaction_size` to a transaction, 0: none); returns the resume
    token before them."""
    with coll.watch() as stream:
        token = stream.resume_token
    step = transaction_size or 1000
    for start in range(0, changes, step):
        documents = [document(i) for i in range(start, min(changes, start + step))]
        if transaction_size:
            with client.start_session() as session, session.start_transaction():
                coll.insert_many(documents, session=session)
        else:
            coll.insert_many(documents, ordered=False)
    return token


def catch_up(bootstrap: str, uri: str, changes: int, document=_document, transaction_size: int = 0,
             emulator_pid: int | None = None) -> tuple[float, float, Messages, float, float]:
    """Events/s of the pipeline and of watch() alone, messages for the ceiling, and the CPU µs per event of each (this
    process's CPU time: the pipeline's threads and librdkafka's; the emulator runs in its own process). Prints where
    the machine's CPU went meanwhile: this process, the emulator, the broker, the rest."""
    neighbours = {"emulator": emulator_pid, "broker": thread_cpu.broker_pid()}
    name = f"bench{uuid.uuid4().hex[:8]}"
    client = pymongo.MongoClient(uri)
    coll = client[name].docs
    # The pipeline's stream position must precede the pre-filled changes: start it, let it open, stop it.
    stop = threading.Event()
    runner = ConnectorRunner(_config(name, uri), bootstrap, stop)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    while not (runner.pipelines and next(iter(runner.pipelines.values())).metrics.connected):
        time.sleep(0.05)
    coll.insert_one({"_id": -1})
    wait_committed(bootstrap, f"{name}.{name}.docs", 1, 60)
    stop.set()
    thread.join()

    _fill(client, coll, changes, document, transaction_size)
    stop = threading.Event()
    runner = ConnectorRunner(_config(name, uri), bootstrap, stop)
    thread = threading.Thread(target=runner.run, daemon=True)
    # Timed from the moment its change stream is open, as watch() alone is: start-up (Kafka transactions, offsets,
    # topics) is a one-time cost, printed apart.
    started = time.monotonic()
    thread.start()
    began = wait_until_streaming(runner, thread)
    cpu, threads = time.process_time(), thread_cpu.sample()
    machine = thread_cpu.machine_sample(neighbours)
    print(f"pipeline start-up (not in the catch-up figures): {began - started:.2f}s", flush=True)
    done = wait_committed(bootstrap, f"{name}.{name}.docs", changes + 1, 600)
    cpu_us = (time.process_time() - cpu) * 1e6 / changes
    print(thread_cpu.breakdown(threads, thread_cpu.sample(), changes), flush=True)
    print(thread_cpu.machine_breakdown(machine, thread_cpu.machine_sample(neighbours), changes), flush=True)
    stop.set()
    thread.join()
    rate = changes / (done - began)
    # watch() alone reads changes of their own: the emulator keeps the events it built, and the same ones would cost
    # it a third of what they cost the pipeline, which read them first
    read_coll = client[name].read
    token = _fill(client, read_coll, changes, document, transaction_size)
    machine = thread_cpu.machine_sample(neighbours)
    read_rate, read_cpu_us = watch_rate(read_coll, token, changes, _config(name, uri).full_document)
    print("watch() alone: " + thread_cpu.machine_breakdown(machine, thread_cpu.machine_sample(neighbours), changes),
          flush=True)
    messages = read_messages(bootstrap, f"{name}.{name}.docs", 20_000)
    client.drop_database(name)
    delete_topics(bootstrap, f"{name}.")
    return rate, read_rate, messages, cpu_us, read_cpu_us


def write_at_rate(uri: str, database: str, rate: float, total: int, out) -> None:
    """Inserts `total` documents at `rate` per second (a process of its own); sends back when each was sent and
    acknowledged (ns) and how long the writes took (s)."""
    coll = pymongo.MongoClient(uri)[database].docs
    coll.find_one({"_id": "warm-up"})  # connected before the clock starts
    sent_ns, acked_ns = array.array("q", bytes(8 * total)), array.array("q", bytes(8 * total))
    began = time.monotonic()
    written = 0
    while written < total:
        # Every document due by now, in one insert_many when a round trip took longer than the interval (one
        # insert_one per document tops out near 1,000/s here): each is still a change of its own.
        due = min(total, int((time.monotonic() - began) * rate) + 1)
        if due <= written:
            time.sleep(max(0.0, began + written / rate - time.monotonic()))
            continue
        documents = [_document(i) for i in range(written, due)]
        coll.insert_many(documents)
        acked = time.time_ns()
        for i, document in enumerate(documents, written):
            sent_ns[i], acked_ns[i] = document["sent_ns"], acked
        written = due
    out.send_bytes(sent_ns.tobytes())
    out.send_bytes(acked_ns.tobytes())
    out.send(time.monotonic() - began)
    out.close()


def event_number(value: bytes) -> tuple[int | None, int]:
    """A document's number `n` (-1: the warm-up change, which has none) for consume; no source time."""
    after = json.loads(json.loads(value)["after"])
    number = after.get("n", -1)
    return (number if isinstance(number, int) else None), 0


def _change_number(change) -> int | None:
    document = change.get("fullDocument") if isinstance(change, Mapping | RawChangeEvent) else None
    number = document.get("n") if isinstance(document, Mapping) else None  # a dict, or RawBSONDocument
    return number if isinstance(number, int) else None


def _message_number(message, topic: str) -> int | None:
    if message.topic != topic or not message.value:
        return None
    number = json.loads(json.loads(message.value)["after"]).get("n")
    return number if isinstance(number, int) else None


class ChangeStreamReplies(pymongo.monitoring.CommandListener):
    """Marks "read" when a change stream's reply (aggregate or getMore) on `database` reaches the reader."""

    def __init__(self, database: str, marks: StageMarks) -> None:
        self.database, self.marks = database, marks

    def started(self, event) -> None:
        pass

    def succeeded(self, event) -> None:
        if event.database_name != self.database or event.command_name not in ("getMore", "aggregate"):
            return
        cursor = event.reply.get("cursor") or {}
        self.marks.mark("read", last_number(cursor.get("nextBatch") or cursor.get("firstBatch") or [], _change_number))

    def failed(self, event) -> None:
        pass


class GcPauses:
    """The collector's pauses in this process (the pipeline's threads wait for them too)."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []
        self._began = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.pauses.append((info["generation"], (time.perf_counter() - self._began) * 1000))


# (label, from stage, to stage) of the breakdown, in the order an event goes through them
STAGES = [
    ("write: insert acknowledged", "sent", "acked"),
    ("change stream reply (getMore)", "acked", "read"),
    ("queued until the loop takes it", "read", "taken"),
    ("built into Kafka messages", "taken", "built"),
    ("waits for the previous commit", "built", "handed"),
    ("produced and acknowledged", "handed", "flushed"),
    ("transaction committed", "flushed", "committed"),
    ("read_committed consumer sees it", "committed", "seen"),
    ("end to end", "sent", "seen"),
]


# a line of the broker's -Xlog:gc file: [time] ... Pause Young (...) 66M->21M(1024M) 12.345ms
GC_PAUSE = re.compile(r"\[(?P<at>[^]]+[+-]\d{4})\].* Pause .* (?P<ms>[\d.]+)ms$")


def broker_gc_pauses(began: float, ended: float) -> list[float]:
    """The devstack broker's collector pauses (ms) between two wall-clock times, from the gc.log it writes (empty
    when the broker is not the devstack's)."""
    pauses = []
    for path in sorted((settings.STATE_DIR / "kafka").glob("gc.log*")):
        for line in path.read_text(errors="replace").splitlines():
            match = GC_PAUSE.match(line)
            if match:
                at = datetime.datetime.fromisoformat(match["at"]).timestamp()
                if began <= at <= ended:
                    pauses.append(float(match["ms"]))
    return pauses


def broker_partitions(bootstrap: str) -> tuple[int, int]:
    from confluent_kafka.admin import AdminClient

    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    return len(topics), sum(len(topic.partitions) for topic in topics.values())


def latency(bootstrap: str, uri: str, rate: float, seconds: float) -> dict:
    """End-to-end latency at a fixed write rate, broken down by stage (see STAGES); returns the figures."""
    name = f"lat{uuid.uuid4().hex[:8]}"
    try:
        return _latency(bootstrap, uri, rate, seconds, name)
    finally:
        delete_topics(bootstrap, f"{name}.")
        with pymongo.MongoClient(uri) as client:
            client.drop_database(name)


def _latency(bootstrap: str, uri: str, rate: float, seconds: float, name: str) -> dict:
    topic = f"{name}.{name}.docs"
    marks = StageMarks()
    pymongo.monitoring.register(ChangeStreamReplies(name, marks))  # for the clients created from now on
    coll = pymongo.MongoClient(uri)[name].docs
    stop = threading.Event()
    runner = ConnectorRunner(_config(name, uri), bootstrap, stop)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    while not (runner.pipelines and next(iter(runner.pipelines.values())).metrics.connected):
        time.sleep(0.05)
    pipeline = next(iter(runner.pipelines.values()))
    trace_pipeline(pipeline, marks, _change_number, lambda message: _message_number(message, topic))

    total = int(rate * seconds)
    # The application writing to MongoDB and the read_committed consumer are processes of their own: in this one
    # they would take the interpreter lock from the pipeline (and the writer would fall behind the rate).
    spawn = multiprocessing.get_context("spawn")
    consumer_ready = spawn.Event()
    seen_results, consumer_end = spawn.Pipe(duplex=False)
    consumer = spawn.Process(target=consume, args=(bootstrap, topic, total, seconds + 120, consumer_ready,
                                                   consumer_end, event_number))
    consumer.start()
    consumer_end.close()
    # Measured writes start once a first change went all the way through: the topic's creation and the consumer
    # group's join are start-up costs, not latency.
    coll.insert_one({"_id": "warm-up"})
    if not consumer_ready.wait(120):
        raise TimeoutError("the warm-up change did not reach the consumer")
    gc_pauses = GcPauses()
    gc.callbacks.append(gc_pauses)
    with LagSampler(pipeline) as lag:  # what the dashboard shows, read as often as it could be
        began, load_before = time.time(), os.getloadavg()[0]
        results, child_end = spawn.Pipe(duplex=False)
        writer = spawn.Process(target=write_at_rate, args=(uri, name, rate, total, child_end))
        writer.start()
        child_end.close()
        sent_ns, acked_ns, write_seconds = receive_writes(results)
        writer.join(30)
        seen, _ = receive_seen(seen_results)
        consumer.join(30)
        gc.callbacks.remove(gc_pauses)
    ended = time.time()
    stop.set()
    thread.join()

    figures = stage_figures(STAGES, total, {"sent": sent_ns, "acked": acked_ns, "seen": seen}, marks,
                            ("read", *PIPELINE_STAGES))
    return {"stages": figures, "events": sum(1 for at in seen if at), "total": total,
            "write_rate": total / write_seconds,
            "batches": len(marks.numbers.get("committed", [])), "gc": gc_pauses.pauses,
            "broker_gc": broker_gc_pauses(began, ended), "load": (load_before, os.getloadavg()[0]),
            "broker": broker_partitions(bootstrap), "lag": lag.samples,
            "broker_uptime": devstack_kafka.process.uptime()}


def print_warm_up(rate: float, seconds: float, result: dict) -> None:
    end_to_end = result["stages"].get("end to end", [])
    if end_to_end:
        print(f"broker warm-up run ({seconds:.0f} s at {rate:.0f} writes/s, not in the figures below): p50 "
              f"{statistics.median(end_to_end):.1f} ms, p99 {percentile(end_to_end, 0.99):.1f} ms")


def print_latency(rate: float, result: dict) -> None:
    end_to_end = result["stages"].get("end to end", [])
    if end_to_end:
        print(f"end-to-end latency at {rate:.0f} writes/s: p50 {statistics.median(end_to_end):.1f} ms, "
              f"p99 {percentile(end_to_end, 0.99):.1f} ms")
    print(f"  {result['events']} of {result['total']} events seen; writes went at {result['write_rate']:,.0f}/s; "
          f"{result['batches']} transactions")
    print_lag(result["lag"])
    print_stages([label for label, _, _ in STAGES], result["stages"], 36)
    pauses = result["gc"]
    oldest = [ms for generation, ms in pauses if generation == 2]
    print(f"  gc: {len(pauses)} collections, {sum(ms for _, ms in pauses):.1f} ms in all, longest "
          f"{max((ms for _, ms in pauses), default=0):.1f} ms; {len(oldest)} of generation 2")
    broker_gc = result["broker_gc"]
    print(f"  broker gc pauses (devstack gc.log): {len(broker_gc)}, longest {max(broker_gc, default=0):.1f} ms; "
          f"broker holds {result['broker'][0]:,} topics, {result['broker'][1]:,} partitions")
    uptime = result["broker_uptime"]
    print(f"  machine load (1 min) {result['load'][0]:.1f} at start, {result['load'][1]:.1f} at end, "
          f"{os.cpu_count()} cores; broker JVM up {'?' if uptime is None else f'{uptime:,.0f}'} s; "
          f"consumer: {CONSUMER_SETTINGS}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--changes", type=int, default=50_000)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--latency-only", action="store_true", help="only the latency run and its breakdown")
    parser.add_argument("--warm-up", type=float, default=30, metavar="SECONDS",
                        help="first a latency run of this many seconds at the same rate, printed but not measured: "
                             "a broker started minutes ago still compiles its transaction paths (0: none)")
    parser.add_argument("--document", choices=sorted(DOCUMENTS), default="string",
                        help="the catch-up's documents: one 960-character string, or ~1 KB of typed fields")
    parser.add_argument("--transaction-size", type=int, default=0, metavar="N",
                        help="the catch-up's documents are inserted N to a multi-document transaction (0: none)")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="a connector property of the measured pipelines (repeatable), e.g. "
                             "provide.transaction.metadata=true")
    args = parser.parse_args()
    for item in args.property:
        key, separator, value = item.partition("=")
        if not separator:
            parser.error(f"--property {item!r}: expected KEY=VALUE")
        EXTRA_PROPERTIES[key.strip()] = value.strip()
    bootstrap = settings.kafka_bootstrap()
    with one_member_deployment("bench") as (uri, emulator_pid):
        if not args.latency_only:
            document = DOCUMENTS[args.document]
            rate, read_rate, messages, cpu_us, read_cpu_us = catch_up(bootstrap, uri, args.changes, document,
                                                                         args.transaction_size, emulator_pid)
            repeated = messages * max(1, args.changes // max(1, len(messages)))
            ceiling, ceiling_cpu_us = producer_ceiling(bootstrap, repeated)
        warm_up = latency(bootstrap, uri, args.rate, args.warm_up) if args.warm_up > 0 else None
        result = latency(bootstrap, uri, args.rate, args.seconds)
    if not args.latency_only:
        extra = f", {EXTRA_PROPERTIES}" if EXTRA_PROPERTIES else ""
        if args.transaction_size:
            extra += f", {args.transaction_size} to a transaction"
        print(f"catch-up: {args.changes} changes of ~1 KB ({args.document}{extra}): {rate:,.0f} events/s")
        print(f"ceiling (plain idempotent producer, same messages): {ceiling:,.0f} msg/s")
        print(f"ours / ceiling: {rate / ceiling:.2f}")
        print(f"source read (pymongo watch() alone, same changes): {read_rate:,.0f} events/s; ours / read: "
              f"{rate / read_rate:.2f}")
        print(f"CPU per event: ours {cpu_us:.1f} µs, watch() alone {read_cpu_us:.1f} µs, plain producer "
              f"{ceiling_cpu_us:.1f} µs; ours / (watch + producer): {cpu_us / (read_cpu_us + ceiling_cpu_us):.2f}")
    if warm_up is not None:
        print_warm_up(args.rate, args.warm_up, warm_up)
    print_latency(args.rate, result)


if __name__ == "__main__":
    main()
