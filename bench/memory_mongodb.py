"""bench.memory's MongoDB part: one pipeline process streaming `--changes` ~1 KB inserts from the project's
emulator (or MONGODB_URI), its RSS sampled against the number in the last event it committed."""

from __future__ import annotations

import json
import threading
import time
import uuid

import pymongo
from confluent_kafka import Consumer, KafkaException, TopicPartition

from bench.emulator import one_member_deployment
from bench.rss import report, sample, start
from connectors.mongodb.config import ConnectorConfig
from connectors.runner import ConnectorRunner


def mongodb_properties(name: str, uri: str) -> dict:
    return {"name": name, "topic.prefix": name, "mongodb.connection.string": uri, "database.include.list": name,
            "snapshot.mode": "never", "offset.storage.topic": f"{name}.offsets", "max.batch.size": 4096,
            "max.queue.size": 16384, "poll.interval.ms": 100, "topic.creation.default.partitions": 1}


def run_mongodb_pipeline(props: dict, bootstrap: str, stop) -> None:
    runner = ConnectorRunner(ConnectorConfig.from_properties(props), bootstrap, stop)
    runner.run()
    if runner.errors:
        raise SystemExit(f"{props['name']} failed: {runner.errors}")


class LastCommitted:
    """The "n" of the last event committed to a one-partition topic (None before any): read from the few messages
    below its read_committed high watermark, so the pipeline's progress costs a fetch, not a read of the topic."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                                  "isolation.level": "read_committed", "enable.auto.commit": False,
                                  "fetch.wait.max.ms": 10})

    def __call__(self) -> int | None:
        try:
            low, high = self.consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=5)
        except KafkaException:  # the topic is not made yet
            return None
        if high <= low:
            return None
        # the last offset is a transaction's commit marker; a consumer skips markers
        self.consumer.assign([TopicPartition(self.topic, 0, max(low, high - 8))])
        number = None
        while (message := self.consumer.poll(1.0)) is not None:
            if message.error() is None and message.value():
                number = json.loads(json.loads(message.value())["after"]).get("n", number)
            if message.offset() >= high - 2:
                break
        return number

    def close(self) -> None:
        self.consumer.close()


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def mongodb_streaming(bootstrap: str, uri: str, changes: int, name: str) -> None:
    props = mongodb_properties(name, uri)
    client = pymongo.MongoClient(uri)
    coll = client[name].docs
    last = LastCommitted(bootstrap, f"{name}.{name}.docs")
    try:
        # The pipeline's stream position must precede the pre-filled changes: start it, let it commit one, stop it.
        stop = threading.Event()
        runner = ConnectorRunner(ConnectorConfig.from_properties(props), bootstrap, stop)
        thread = threading.Thread(target=runner.run, daemon=True)
        thread.start()
        wait_until(lambda: runner.pipelines and next(iter(runner.pipelines.values())).metrics.connected, 120,
                   "the first pipeline to connect")
        coll.insert_one({"_id": -1, "n": -1})
        wait_until(lambda: last() is not None, 120, "the first change to be committed")
        stop.set()
        thread.join()

        began = time.monotonic()
        for first in range(0, changes, 1000):
            batch = range(first, min(changes, first + 1000))
            coll.insert_many([{"_id": i, "n": i, "payload": "x" * 990} for i in batch], ordered=False)
        elapsed = time.monotonic() - began
        print(f"pre-filled {changes:,} inserts of ~1 KB in {elapsed:.0f}s ({changes / elapsed:,.0f}/s)", flush=True)

        process, stop = start(run_mongodb_pipeline, props, bootstrap)
        progress = [-1]

        def done() -> float:
            number = last()
            progress[0] = max(progress[0], -1 if number is None else number)
            return (progress[0] + 1) / changes

        wait_until(lambda: done() > 0 or not process.is_alive(), 300, "the pipeline to commit a change")
        began = time.monotonic()
        samples = sample(process, done)
        elapsed = time.monotonic() - began
        stop.set()
        process.join(60)
        report(f"mongodb streaming {changes:,} events ({changes / elapsed:,.0f} events/s)", samples, changes,
               "events")
    finally:
        last.close()
        client.drop_database(name)
        client.close()


def mongodb(bootstrap: str, changes: int, run: str) -> None:
    # The emulator's oplog (256 MB by default) must hold every pre-filled change (~1.1 KB each) until the pipeline
    # reads it.
    with one_member_deployment("bench", "--oplog-max-bytes", str(max(256 << 20, changes * 2048))) as (uri, _):
        mongodb_streaming(bootstrap, uri, changes, run)
