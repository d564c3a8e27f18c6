"""Snapshot benchmark: documents/s of an initial snapshot (1 KB documents in 4 collections) with one reader thread,
with snapshot.max.threads=4, and with chunks as separate tasks in two worker processes; and the snapshotting
process's peak RSS at a quarter of the data and at all of it (it must stay flat: chunks are streamed, not held).

    python -m bench.snapshot [--docs 200000] [--chunk-size 8192]
    python -m bench.snapshot --docs 1000000          # the issue's figures: 1M documents, RSS at 250k and 1M

Needs Kafka (`python -m devstack up kafka`); runs its own MongoDB emulator in a separate process unless
MONGODB_URI is set. Each measured run is a fresh `python -m bench.snapshot --child …` process (snapshot.mode=
initial_only), so its RSS is its own; topics are deleted after each run. The 4 collections are first loaded to a
quarter of their size (RSS measured there), then to full size. Two baselines, each in its own process: a plain
pymongo find() over the same documents (decoded to dicts), and the machine's ceiling for moving them into Kafka: a
find() of raw BSON documents whose bytes go unchanged to one topic through a plain idempotent producer (lz4,
linger 5 ms, as the pipeline's). The issue's target is a 1-thread snapshot at >= 0.5x that ceiling.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
import uuid

import pymongo

from bench.emulator import cpu_seconds, one_member_deployment
from bench.topics import delete_topics

COLLECTIONS = 4


def _document(i: int) -> dict:
    return {"_id": i, "n": i, "sku": f"SKU-{i:09d}", "payload": (f"{i:08d}" * 125)[:960]}


def load(uri: str, database: str, docs: int, *, already: int = 0) -> None:
    """Grows each of the 4 collections to docs/4 documents (from already/4)."""
    client = pymongo.MongoClient(uri)
    per_collection, start_at = docs // COLLECTIONS, already // COLLECTIONS
    started = time.monotonic()
    for c in range(COLLECTIONS):
        collection = client[database][f"c{c}"]
        for start in range(start_at, per_collection, 2000):
            collection.insert_many([_document(i) for i in range(start, min(per_collection, start + 2000))],
                                   ordered=False)
    print(f"loaded {docs - already:,} documents of ~1 KB into {COLLECTIONS} collections "
          f"({per_collection:,} each now) in {time.monotonic() - started:.1f}s", flush=True)
    client.close()


def baseline(args) -> None:
    """A plain pymongo find() over every collection, one cursor after the other, documents decoded to dicts; with
    --produce, raw BSON documents produced as they are to one topic (then deleted) instead."""
    from bson.raw_bson import RawBSONDocument
    from confluent_kafka import Producer

    producer, topic = None, f"bsnapceiling{uuid.uuid4().hex[:8]}"
    failed = []
    if args.produce:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": args.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all", "enable.idempotence": True,
                             "compression.type": "lz4", "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    client = pymongo.MongoClient(args.uri, document_class=RawBSONDocument if producer else dict)
    started = time.monotonic()
    rows = 0
    for c in range(args.collections):
        for document in client[args.database][f"c{c}"].find(batch_size=2000):
            rows += 1
            if producer is not None:
                _produce(producer, topic, document.raw, failed)
    if producer is not None:
        producer.flush(300)
    seconds = time.monotonic() - started
    if producer is not None:
        delete_topics(args.bootstrap, topic)
        assert not failed, f"{len(failed)} messages not delivered: {failed[0]}"
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"rows": rows, "seconds": seconds, "snapshot_seconds": seconds,
                      "rss_mb": usage.ru_maxrss // 1024, "cpu_seconds": usage.ru_utime + usage.ru_stime}))


def _produce(producer, topic: str, value: bytes, failed: list) -> None:
    def delivered(error, _message):
        if error is not None:
            failed.append(error)

    while True:
        try:
            producer.produce(topic, value, on_delivery=delivered)
            return
        except BufferError:
            producer.poll(0.01)


# -- one measured run, in its own process ---------------------------------------------------------------------


def child(args) -> None:
    import logging

    from connectors.mongodb.config import ConnectorConfig
    from connectors.mongodb.snapshots import ProcessPoolChunkExecutor, SnapshotContext
    from connectors.mongodb.topology import discover
    from connectors.runner import ConnectorRunner

    # BENCH_LOG=INFO shows each chunk's read (ms since start, thread) for a profile of one run.
    logging.basicConfig(level=os.environ.get("BENCH_LOG", "WARNING"),
                        format="%(relativeCreated)6d %(threadName)s %(name)s: %(message)s")
    name = f"bsnap{uuid.uuid4().hex[:8]}"
    props = {
        "name": name, "topic.prefix": name, "mongodb.connection.string": args.uri,
        "database.include.list": args.database, "snapshot.mode": "initial_only",
        "offset.storage.topic": f"{name}.offsets", "snapshot.chunk.size": args.chunk_size,
        "snapshot.max.threads": args.threads, "snapshot.fetch.size": 2000,
    }
    if args.collections < COLLECTIONS:
        props["snapshot.include.collection.list"] = "|".join(rf"{args.database}\.c{c}" for c in range(args.collections))
    config = ConnectorConfig.from_properties(props)
    executor = None
    if args.processes:
        # Worker processes start before the snapshot, as Celery workers are already running when it begins.
        (replica_set,) = discover(config.mongo_client_options()).replica_sets
        context = SnapshotContext(config, replica_set, args.bootstrap, None, threading.Event())
        pool = ProcessPoolChunkExecutor(context, args.processes)
        pool.warm_up()

        def executor(context):
            pool.context = context
            return pool

    runner = ConnectorRunner(config, args.bootstrap, chunk_executor=executor)
    started = time.monotonic()
    outcome = runner.run()
    seconds = time.monotonic() - started
    snapshot_metrics = next(iter(runner.pipelines.values())).snapshot_metrics
    metrics = snapshot_metrics.snapshot()
    # From the stream position's capture to the plan's commit: listing and planning the collections (the first chunks
    # are read meanwhile).
    planning = snapshot_metrics.started_at and snapshot_metrics.run_started and (
        time.time() - (time.monotonic() - snapshot_metrics.run_started) - snapshot_metrics.started_at)
    rows = sum(metrics["RowsScanned"].values())
    usage_self = resource.getrusage(resource.RUSAGE_SELF)
    usage_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own, children = usage_self.ru_maxrss // 1024, usage_children.ru_maxrss // 1024
    cpu = usage_self.ru_utime + usage_self.ru_stime + usage_children.ru_utime + usage_children.ru_stime
    print(json.dumps({"outcome": outcome, "rows": rows, "seconds": seconds, "chunks": metrics["ChunksTotal"],
                      "snapshot_seconds": metrics["SnapshotDurationInSeconds"],
                      "planning_seconds": round(planning or 0.0, 3), "rss_mb": own, "children_rss_mb": children,
                      "cpu_seconds": cpu, "name": name}))
    delete_topics(args.bootstrap, name)


def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of all cores, from /proc/stat."""
    values = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def measure(args, uri: str, label: str, *, threads: int = 1, processes: int = 0, collections: int = COLLECTIONS,
            mode: str = "--child") -> dict:
    command = [sys.executable, "-m", "bench.snapshot", mode, "--uri", uri, "--database", args.database,
               "--bootstrap", args.bootstrap, "--threads", str(threads), "--processes", str(processes),
               "--collections", str(collections), "--chunk-size", str(args.chunk_size)]
    if mode == "--produce":
        command[3:4] = ["--baseline", "--produce"]
    emulator_cpu, (busy, jiffies) = cpu_seconds(args.emulator_pid), machine_cpu()
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    emulator_cpu = cpu_seconds(args.emulator_pid) - emulator_cpu
    busy_after, jiffies_after = machine_cpu()
    cores_busy = (busy_after - busy) / max(1, jiffies_after - jiffies) * os.cpu_count()
    result = json.loads(output.strip().splitlines()[-1])
    if mode == "--child":
        assert set(result["outcome"].values()) == {"snapshot-done"}, result
    assert result["rows"] == args.docs // COLLECTIONS * collections, result
    result["rate"] = result["rows"] / result["snapshot_seconds"]
    extra = f", worker processes' peak RSS {result['children_rss_mb']} MB" if processes else ""
    if args.emulator_pid:
        extra += f", emulator {emulator_cpu:.0f} CPU-s"
    extra += f"; machine: {cores_busy:.1f} of {os.cpu_count()} cores busy"
    chunks = f"{result['chunks']} chunks, " if "chunks" in result else ""
    if result.get("planning_seconds"):
        chunks += f"{result['planning_seconds']:.1f}s of it planning, "
    print(f"{label:<38} {result['rows']:>9,} docs in {result['snapshot_seconds']:6.1f}s = {result['rate']:8,.0f} "
          f"docs/s ({result['seconds']:.1f}s with start-up), {chunks}"
          f"{result['cpu_seconds']:.0f} CPU-s ({result['rows'] / result['cpu_seconds']:,.0f} docs per CPU-second), "
          f"peak RSS {result['rss_mb']} MB{extra}", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=200_000, help="documents in all (default 200000)")
    parser.add_argument("--chunk-size", type=int, default=8192)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--produce", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--uri", help=argparse.SUPPRESS)
    parser.add_argument("--database", default="benchsnap", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--processes", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--collections", type=int, default=COLLECTIONS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if args.baseline:
        baseline(args)
        return

    from devstack import settings

    args.bootstrap = args.bootstrap or settings.kafka_bootstrap()
    with one_member_deployment("rs0", "--oplog-max-entries", "20000", "--noop-interval", "1") as (uri, pid):
        args.emulator_pid = pid
        args.database = f"benchsnap{uuid.uuid4().hex[:6]}"
        total = args.docs
        # RSS as the collections grow: the same 4 collections at a quarter of their size, then at full size.
        args.docs = total // 4
        load(uri, args.database, args.docs)
        quarter = measure(args, uri, f"snapshot.max.threads=4, {args.docs:,} docs", threads=4)
        args.docs = total
        load(uri, args.database, args.docs, already=total // 4)
        base = measure(args, uri, "baseline: pymongo find()", mode="--baseline")
        ceiling = measure(args, uri, "ceiling: raw find() + plain produce", mode="--produce")
        one = measure(args, uri, "1 thread", threads=1)
        four = measure(args, uri, "snapshot.max.threads=4", threads=4)
        workers = measure(args, uri, "2 worker processes", processes=2)
    print()
    print(f"docs/s: baseline find() {base['rate']:,.0f} | ceiling raw find() + produce {ceiling['rate']:,.0f} | "
          f"1 thread {one['rate']:,.0f} ({one['rate'] / base['rate']:.3f} of find(), "
          f"{one['rate'] / ceiling['rate']:.3f} of the ceiling; target >= 0.5) | 4 threads {four['rate']:,.0f} "
          f"({four['rate'] / one['rate']:.2f}x 1 thread) | 2 worker processes {workers['rate']:,.0f} "
          f"({workers['rate'] / one['rate']:.2f}x 1 thread)")
    # On one machine the ceiling bounds any number of processes: the broker and the source share its cores.
    print(f"2 worker processes: {workers['rate'] / ceiling['rate']:.2f} of the ceiling, which is "
          f"{ceiling['rate'] / one['rate']:.2f}x 1 thread (what more processes could reach here at most)")
    reading = one["snapshot_seconds"] - one.get("planning_seconds", 0.0)
    print(f"1 thread after planning ({one.get('planning_seconds', 0.0):.1f}s): {one['rows'] / reading:,.0f} docs/s "
          f"({one['rows'] / reading / ceiling['rate']:.3f} of the ceiling)")
    print(f"CPU per document: 1 thread {one['cpu_seconds'] / one['rows'] * 1e6:.1f} us, ceiling "
          f"{ceiling['cpu_seconds'] / ceiling['rows'] * 1e6:.1f} us")
    print(f"peak RSS of the snapshotting process (4 threads): {quarter['rss_mb']} MB at {quarter['rows']:,} docs, "
          f"{four['rss_mb']} MB at {four['rows']:,} docs ({four['rss_mb'] / quarter['rss_mb']:.2f}x)")


if __name__ == "__main__":
    main()
