"""Streaming benchmark: pipeline throughput catching up on a pre-filled oplog, end-to-end latency at a fixed
write rate, and the raw confluent-kafka producer rate for the same messages as the ceiling.

    python -m bench.streaming [--changes 50000] [--rate 500] [--seconds 10]

Also prints the rate of pymongo's watch() alone reading the same changes, to tell a slow source from a slow pipeline.

Needs Kafka (`python -m devstack up kafka`); runs its own in-process MongoDB emulator unless MONGODB_URI is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid

import pymongo
from confluent_kafka import Consumer, Producer, TopicPartition

from connectors.config import ConnectorConfig
from connectors.runner import ConnectorRunner
from devstack import settings


def _document(i: int) -> dict:
    return {"_id": i, "payload": "x" * 960, "n": i, "sent_ns": time.time_ns()}


def _config(name: str, uri: str) -> ConnectorConfig:
    return ConnectorConfig.from_properties({
        "name": name, "topic.prefix": name, "mongodb.connection.string": uri, "database.include.list": name,
        "snapshot.mode": "never", "offset.storage.topic": f"{name}.offsets", "max.batch.size": 4096,
        "max.queue.size": 16384, "poll.interval.ms": 100,
    })


def _wait_committed(bootstrap: str, topic: str, count: int, timeout: float) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         "isolation.level": "read_committed"})
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=2)
            except Exception:
                high = 0
            if high >= count:
                return time.monotonic()
            time.sleep(0.02)
    finally:
        consumer.close()
    raise TimeoutError(f"{topic} did not reach {count} messages")


def watch_rate(coll, token, changes: int) -> float:
    """pymongo alone reading the same changes from the same position (decoded as the pipeline's reader does)."""
    began = time.monotonic()
    seen = 0
    with coll.watch(resume_after=token, batch_size=4096, max_await_time_ms=100) as stream:
        while seen < changes:
            if stream.try_next() is not None:
                seen += 1
    return changes / (time.monotonic() - began)


def catch_up(bootstrap: str, uri: str, changes: int) -> tuple[float, float, list[tuple[str, bytes, bytes]]]:
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
    _wait_committed(bootstrap, f"{name}.{name}.docs", 1, 60)
    stop.set()
    thread.join()

    with coll.watch() as stream:
        token = stream.resume_token
    for start in range(0, changes, 1000):
        coll.insert_many([_document(i) for i in range(start, min(changes, start + 1000))], ordered=False)
    stop = threading.Event()
    runner = ConnectorRunner(_config(name, uri), bootstrap, stop)
    thread = threading.Thread(target=runner.run, daemon=True)
    began = time.monotonic()
    thread.start()
    done = _wait_committed(bootstrap, f"{name}.{name}.docs", changes + 1, 600)
    stop.set()
    thread.join()
    rate = changes / (done - began)
    read_rate = watch_rate(coll, token, changes)
    messages = _read_messages(bootstrap, f"{name}.{name}.docs", 20_000)
    client.drop_database(name)
    return rate, read_rate, messages


def _read_messages(bootstrap: str, topic: str, limit: int) -> list[tuple[str, bytes, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    out = []
    deadline = time.monotonic() + 60
    while len(out) < limit and time.monotonic() < deadline:
        for message in consumer.consume(1000, 1.0):
            if message.error() is None and message.value():
                out.append((topic, message.key(), message.value()))
    consumer.close()
    return out[:limit]


def producer_ceiling(bootstrap: str, messages: list[tuple[str, bytes, bytes]]) -> float:
    topic = f"bench-ceiling-{uuid.uuid4().hex[:8]}"
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "compression.type": "lz4", "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    began = time.monotonic()
    for _, key, value in messages:
        while True:
            try:
                producer.produce(topic, value, key)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    return len(messages) / (time.monotonic() - began)


def latency(bootstrap: str, uri: str, rate: float, seconds: float) -> tuple[float, float]:
    name = f"lat{uuid.uuid4().hex[:8]}"
    coll = pymongo.MongoClient(uri)[name].docs
    stop = threading.Event()
    runner = ConnectorRunner(_config(name, uri), bootstrap, stop)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    while not (runner.pipelines and next(iter(runner.pipelines.values())).metrics.connected):
        time.sleep(0.05)
    topic = f"{name}.{name}.docs"
    total = int(rate * seconds)
    consumer_ready = threading.Event()
    latencies: list[float] = []

    def consume():
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                             "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                             "fetch.wait.max.ms": 10, "topic.metadata.refresh.interval.ms": 500})
        consumer.subscribe([topic])
        deadline = time.monotonic() + seconds + 120
        while len(latencies) < total and time.monotonic() < deadline:
            # consume(n, timeout) waits for n messages or the whole timeout: it would add up to that to every
            # latency; poll() returns each message as soon as it is fetched.
            message = consumer.poll(0.1)
            if message is None or message.error() or not message.value():
                continue
            received_ns = time.time_ns()
            after = json.loads(json.loads(message.value())["after"])
            if "sent_ns" not in after:  # the warm-up change: the topic exists and this consumer reads it
                consumer_ready.set()
                continue
            sent = after["sent_ns"]
            latencies.append((received_ns - int(sent["$numberLong"] if isinstance(sent, dict) else sent)) / 1e6)
        consumer.close()

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    # Measured writes start once a first change went all the way through: the topic's creation and the consumer
    # group's join are start-up costs, not latency.
    coll.insert_one({"_id": "warm-up"})
    if not consumer_ready.wait(120):
        raise TimeoutError("the warm-up change did not reach the consumer")
    interval = 1 / rate
    began = time.monotonic()
    for i in range(total):
        coll.insert_one(_document(i))
        time.sleep(max(0.0, began + (i + 1) * interval - time.monotonic()))
    reader.join()
    stop.set()
    thread.join()
    latencies.sort()
    return statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--changes", type=int, default=50_000)
    parser.add_argument("--rate", type=float, default=500)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    bootstrap = settings.kafka_bootstrap()
    emulator = None
    uri = os.environ.get("MONGODB_URI")
    if not uri:
        # A separate process, as in production: the emulator must not share the pipeline's GIL.
        emulator = subprocess.Popen([sys.executable, "-m", "devstack.mongo", "--members", "1", "--port", "0",
                                     "--replset", "bench"], stdout=subprocess.PIPE, text=True)
        uri = emulator.stdout.readline().strip()
    try:
        rate, read_rate, messages = catch_up(bootstrap, uri, args.changes)
        ceiling = producer_ceiling(bootstrap, messages * max(1, args.changes // max(1, len(messages))))
        p50, p99 = latency(bootstrap, uri, args.rate, args.seconds)
    finally:
        if emulator:
            emulator.terminate()
            emulator.wait(30)
    print(f"catch-up: {args.changes} changes of ~1 KB: {rate:,.0f} events/s")
    print(f"ceiling (plain idempotent producer, same messages): {ceiling:,.0f} msg/s")
    print(f"ours / ceiling: {rate / ceiling:.2f}")
    print(f"source read (pymongo watch() alone, same changes): {read_rate:,.0f} events/s; ours / read: "
          f"{rate / read_rate:.2f}")
    print(f"end-to-end latency at {args.rate:.0f} writes/s: p50 {p50:.1f} ms, p99 {p99:.1f} ms")


if __name__ == "__main__":
    main()
