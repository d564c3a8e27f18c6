"""Incremental snapshot benchmark (MongoDB): documents/s and the pipeline process's CPU per document of an ad-hoc
incremental snapshot (DBLog watermark windows through the signal collection, merged with the live stream) of
`--docs` 1 KB documents, against a plain pymongo find() of the same documents in the same run.

    python -m bench.incremental [--docs 100000] [--chunk-size 4096]

Needs Kafka (`python -m devstack up kafka`); runs its own single-member emulator in a separate process unless
MONGODB_URI is set. The pipeline streams (snapshot.mode=no_data), then the snapshot is requested and timed until
its metrics say it completed; the run's topics are deleted afterwards.
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid

import pymongo

from bench.emulator import one_member_deployment
from bench.topics import delete_topics
from connectors.mongodb.config import ConnectorConfig
from connectors.runner import ConnectorRunner
from devstack import settings


def _load(client: pymongo.MongoClient, database: str, docs: int) -> None:
    for start in range(0, docs, 10_000):
        client[database].docs.insert_many(
            [{"_id": i, "payload": "x" * 960, "n": i} for i in range(start, min(docs, start + 10_000))])


def _find_rate(client: pymongo.MongoClient, database: str, docs: int) -> float:
    started = time.monotonic()
    read = sum(1 for _ in client[database].docs.find(batch_size=2000))
    assert read == docs, (read, docs)
    return docs / (time.monotonic() - started)


def _streaming_pipeline(runner: ConnectorRunner, thread: threading.Thread, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pipeline = next(iter(runner.pipelines.values()), None)
        if pipeline is not None and pipeline.metrics.phase == "streaming" and pipeline.metrics.connected:
            return pipeline
        if not thread.is_alive() or runner.errors:
            raise SystemExit(f"the pipeline ended: {runner.errors}")
        time.sleep(0.05)
    raise SystemExit("the pipeline did not start streaming")


def measure(bootstrap: str, uri: str, docs: int, chunk_size: int) -> tuple[float, float]:
    """(documents/s, pipeline CPU µs per document) of one incremental snapshot."""
    name = f"bincr{uuid.uuid4().hex[:8]}"
    client = pymongo.MongoClient(uri)
    _load(client, name, docs)
    config = ConnectorConfig.from_properties({
        "name": name, "topic.prefix": name, "mongodb.connection.string": uri, "database.include.list": name,
        "signal.data.collection": f"{name}.signals", "snapshot.mode": "no_data",
        "incremental.snapshot.chunk.size": chunk_size, "max.batch.size": 4096,
        "offset.storage.topic": f"{name}.offsets",
    })
    stop = threading.Event()
    runner = ConnectorRunner(config, bootstrap, stop)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        pipeline = _streaming_pipeline(runner, thread)
        cpu, started = time.process_time(), time.monotonic()
        pipeline.request_incremental_snapshot([f"{name}.docs"])
        while True:
            metrics = pipeline.snapshot_metrics.snapshot()
            if metrics["SnapshotKind"] == "incremental" and metrics["SnapshotCompleted"]:
                break
            if not thread.is_alive() or pipeline.metrics.phase == "failed":
                raise SystemExit(f"the pipeline failed: {pipeline.metrics.last_error}")
            time.sleep(0.02)
        seconds, cpu = time.monotonic() - started, time.process_time() - cpu
    finally:
        stop.set()
        thread.join(60)
        delete_topics(bootstrap, name)
        client.drop_database(name)
    return docs / seconds, cpu / docs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--chunk-size", type=int, default=4096)
    args = parser.parse_args()
    bootstrap = settings.kafka_bootstrap()
    with one_member_deployment("bincr") as (uri, _pid):
        rate, cpu_us = measure(bootstrap, uri, args.docs, args.chunk_size)
        probe = f"bincrfind{uuid.uuid4().hex[:6]}"
        client = pymongo.MongoClient(uri)
        _load(client, probe, args.docs)
        find_rate = _find_rate(client, probe, args.docs)
        client.drop_database(probe)
    print(f"incremental snapshot of {args.docs:,} docs of ~1 KB (chunks of {args.chunk_size}): {rate:,.0f} docs/s, "
          f"pipeline CPU {cpu_us:.1f} us per document")
    print(f"pymongo find() of the same documents: {find_rate:,.0f} docs/s; incremental / find(): "
          f"{rate / find_rate:.2f}")


if __name__ == "__main__":
    main()
