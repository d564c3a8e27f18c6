"""Catch-up through mongos against a replica set of the same size: the same pre-filled changes captured by one
pipeline from an emulated sharded cluster (mongodb.connection.mode=sharded, one change stream through mongos, the
collection hashed on _id across the shards) and from an emulated replica set with as many members as each shard,
in one run; prints both rates and their ratio.

    python -m bench.sharded_catch_up [--changes 20000] [--shards 2] [--members 3]

Each deployment is an emulator in a process of its own, started and stopped here. The pipeline's stream position
is taken before the changes are written (it starts, streams one marker change and stops), then the changes are
written and the pipeline restarted; the rate is timed from its change stream being open to the last change
committed to Kafka (read_committed), so start-up is printed apart. Needs Kafka (`python -m devstack up kafka`).
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import pymongo

from bench.streaming import wait_committed
from bench.streaming_start import wait_until_streaming
from bench.topics import delete_topics
from connectors.mongodb.config import ConnectorConfig
from connectors.runner import ConnectorRunner
from devstack import settings


@contextlib.contextmanager
def emulator(*options: str) -> Iterator[str]:
    """The URI a `python -m devstack.mongo` process with these options prints (mongos' for a sharded cluster)."""
    process = subprocess.Popen([sys.executable, "-m", "devstack.mongo", "--port", "0", *options],
                               stdout=subprocess.PIPE, text=True)
    try:
        uri = process.stdout.readline().strip()
        if not uri.startswith("mongodb://"):
            raise SystemExit(f"the emulator ({' '.join(options)}) did not start")
        yield uri
    finally:
        process.terminate()
        process.wait(30)


def config(name: str, uri: str) -> ConnectorConfig:
    return ConnectorConfig.from_properties({
        "name": name, "topic.prefix": name, "mongodb.connection.string": uri, "database.include.list": name,
        "snapshot.mode": "never", "offset.storage.topic": f"{name}.offsets", "max.batch.size": 4096,
        "max.queue.size": 16384, "poll.interval.ms": 100,
    })


def run_pipeline(name: str, uri: str, bootstrap: str) -> tuple[ConnectorRunner, threading.Thread, threading.Event]:
    stop = threading.Event()
    runner = ConnectorRunner(config(name, uri), bootstrap, stop)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    return runner, thread, stop


def catch_up(uri: str, bootstrap: str, changes: int, sharded: bool) -> tuple[float, float]:
    """(events/s of the catch-up, start-up seconds) for `changes` inserts of ~1 KB."""
    name = f"bsh{uuid.uuid4().hex[:8]}"
    topic = f"{name}.{name}.docs"
    client = pymongo.MongoClient(uri)
    if sharded:
        client.admin.command("enableSharding", name)
        client.admin.command("shardCollection", f"{name}.docs", key={"_id": "hashed"})
    coll = client[name].docs
    runner, thread, stop = run_pipeline(name, uri, bootstrap)
    wait_until_streaming(runner, thread)
    coll.insert_one({"_id": -1})
    wait_committed(bootstrap, topic, 1, 120)
    stop.set()
    thread.join()

    for start in range(0, changes, 1000):
        coll.insert_many([{"_id": i, "payload": "x" * 960, "n": i} for i in range(start, min(changes, start + 1000))],
                         ordered=False)
    started = time.monotonic()
    runner, thread, stop = run_pipeline(name, uri, bootstrap)
    began = wait_until_streaming(runner, thread)
    done = wait_committed(bootstrap, topic, changes + 1, 900)
    stop.set()
    thread.join()
    client.drop_database(name)
    client.close()
    delete_topics(bootstrap, f"{name}.")
    return changes / (done - began), began - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--members", type=int, default=3, help="members of each shard and of the replica set")
    args = parser.parse_args()
    bootstrap = settings.kafka_bootstrap()
    with emulator("--members", str(args.members), "--replset", "rs0") as uri:
        rs_rate, rs_start = catch_up(uri, bootstrap, args.changes, sharded=False)
    print(f"replica set ({args.members} members): {rs_rate:,.0f} events/s (start-up {rs_start:.2f}s)", flush=True)
    with emulator("--shards", str(args.shards), "--members", str(args.members)) as uri:
        sharded_rate, sharded_start = catch_up(uri, bootstrap, args.changes, sharded=True)
    print(f"through mongos ({args.shards} shards of {args.members} members, hashed _id): {sharded_rate:,.0f} events/s "
          f"(start-up {sharded_start:.2f}s)", flush=True)
    print(f"catch-up of {args.changes} changes of ~1 KB, through mongos / replica set: {sharded_rate / rs_rate:.2f}")


if __name__ == "__main__":
    main()
