"""Snapshot benchmark: documents/s of an initial snapshot (1 KB documents in 4 collections) with one reader thread,
with snapshot.max.threads=4, and with chunks as separate tasks in two worker processes; and the snapshotting
process's peak RSS at a quarter of the data and at all of it (it must stay flat: chunks are streamed, not held).

    python -m bench.snapshot [--docs 200000] [--chunk-size 8192]
    python -m bench.snapshot --docs 1000000          # the issue's figures: 1M documents, RSS at 250k and 1M

Needs Kafka (`python -m devstack up kafka`); runs its own MongoDB emulator in a separate process unless
MONGODB_URI is set. Each measured run is a fresh `python -m bench.snapshot --child …` process (snapshot.mode=
initial_only), so its RSS is its own; topics are deleted after each run.
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

COLLECTIONS = 4


def _document(i: int) -> dict:
    return {"_id": i, "n": i, "sku": f"SKU-{i:09d}", "payload": (f"{i:08d}" * 125)[:960]}


def load(uri: str, database: str, docs: int) -> None:
    client = pymongo.MongoClient(uri)
    per_collection = docs // COLLECTIONS
    started = time.monotonic()
    for c in range(COLLECTIONS):
        collection = client[database][f"c{c}"]
        for start in range(0, per_collection, 2000):
            collection.insert_many([_document(i) for i in range(start, min(per_collection, start + 2000))],
                                   ordered=False)
    print(f"loaded {docs:,} documents of ~1 KB into {COLLECTIONS} collections in {time.monotonic() - started:.1f}s",
          flush=True)
    client.close()


# -- one measured run, in its own process ---------------------------------------------------------------------


def child(args) -> None:
    import logging

    from connectors.config import ConnectorConfig
    from connectors.mongodb.topology import discover
    from connectors.runner import ConnectorRunner
    from connectors.snapshots import ProcessPoolChunkExecutor, SnapshotContext

    logging.basicConfig(level=logging.WARNING)
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
    metrics = next(iter(runner.pipelines.values())).snapshot_metrics.snapshot()
    rows = sum(metrics["RowsScanned"].values())
    usage_self = resource.getrusage(resource.RUSAGE_SELF)
    usage_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own, children = usage_self.ru_maxrss // 1024, usage_children.ru_maxrss // 1024
    cpu = usage_self.ru_utime + usage_self.ru_stime + usage_children.ru_utime + usage_children.ru_stime
    print(json.dumps({"outcome": outcome, "rows": rows, "seconds": seconds, "chunks": metrics["ChunksTotal"],
                      "snapshot_seconds": metrics["SnapshotDurationInSeconds"],
                      "rss_mb": own, "children_rss_mb": children, "cpu_seconds": cpu, "name": name}))
    _delete_topics(args.bootstrap, name)


def _delete_topics(bootstrap: str, prefix: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix)]
    if topics:
        for future in admin.delete_topics(topics).values():
            try:
                future.result(30)
            except Exception as error:  # noqa: BLE001 - cleanup only
                print(f"could not delete a topic: {error}", file=sys.stderr)


def measure(args, uri: str, label: str, *, threads: int = 1, processes: int = 0,
            collections: int = COLLECTIONS) -> dict:
    command = [sys.executable, "-m", "bench.snapshot", "--child", "--uri", uri, "--database", args.database,
               "--bootstrap", args.bootstrap, "--threads", str(threads), "--processes", str(processes),
               "--collections", str(collections), "--chunk-size", str(args.chunk_size)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    result = json.loads(output.strip().splitlines()[-1])
    assert set(result["outcome"].values()) == {"snapshot-done"}, result
    result["rate"] = result["rows"] / result["snapshot_seconds"]
    extra = f", worker processes' peak RSS {result['children_rss_mb']} MB" if processes else ""
    print(f"{label:<38} {result['rows']:>9,} docs in {result['snapshot_seconds']:6.1f}s = {result['rate']:8,.0f} "
          f"docs/s ({result['seconds']:.1f}s with connector start-up), {result['chunks']} chunks, "
          f"{result['cpu_seconds']:.0f} CPU-s ({result['rows'] / result['cpu_seconds']:,.0f} docs per CPU-second), "
          f"peak RSS {result['rss_mb']} MB{extra}", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=200_000, help="documents in all (default 200000)")
    parser.add_argument("--chunk-size", type=int, default=8192)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
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

    from devstack import settings

    args.bootstrap = args.bootstrap or settings.kafka_bootstrap()
    emulator = None
    uri = os.environ.get("MONGODB_URI")
    if not uri:
        # A separate process, as in production: the emulator must not share the snapshotting process's GIL.
        emulator = subprocess.Popen([sys.executable, "-m", "devstack.mongo", "--members", "1", "--port", "0",
                                     "--replset", "rs0", "--oplog-max-entries", "20000", "--noop-interval", "1"],
                                    stdout=subprocess.PIPE, text=True)
        uri = emulator.stdout.readline().strip()
    args.database = f"benchsnap{uuid.uuid4().hex[:6]}"
    try:
        load(uri, args.database, args.docs)
        quarter = measure(args, uri, f"4 threads, {args.docs // 4:,} docs (1 collection)", threads=4, collections=1)
        one = measure(args, uri, "1 thread", threads=1)
        four = measure(args, uri, "snapshot.max.threads=4", threads=4)
        workers = measure(args, uri, "2 worker processes", processes=2)
    finally:
        if emulator:
            emulator.terminate()
            emulator.wait(30)
    print()
    print(f"docs/s: 1 thread {one['rate']:,.0f} | 4 threads {four['rate']:,.0f} ({four['rate'] / one['rate']:.2f}x) | "
          f"2 worker processes {workers['rate']:,.0f} ({workers['rate'] / one['rate']:.2f}x)")
    print(f"peak RSS of the snapshotting process (4 threads): {quarter['rss_mb']} MB at {quarter['rows']:,} docs, "
          f"{four['rss_mb']} MB at {four['rows']:,} docs")


if __name__ == "__main__":
    main()
