"""Latest-state batch job throughput: events/s over N change events on `local[*]`.

    python -m bench.spark_latest_state [--events 1000000] [--format debezium] [--full-update]

Builds a workload with the real Transformer (15% inserts, 80% updates, 5% deletes; about 100,000
documents for 1M events; updates are patches unless --full-update), produces it to a fresh topic, then
runs the `latest_state` template in-process and reports events/s of the job (session start-up excluded,
reported apart), beside two baselines over the same topic in the same session: plain Spark reading and
counting the records, and reading, parsing every envelope and counting per operation; the ratios are
baseline time / job time. Checks the number of live documents against the workload's.
Needs Kafka (`python -m devstack up kafka`).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid

from bson import Timestamp
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.records import ChangeRecord
from connectors.mongodb.transformer import Transformer
from devstack import settings


def _records(events: int, full_update: bool, rng: random.Random):
    """ChangeRecords of a random workload; finally the number of live documents."""
    live: list[int] = []
    where: dict[int, int] = {}
    next_id = 0
    seconds, inc = 1_700_000_000, 0
    for _ in range(events):
        inc += 1
        if inc > 1000:
            seconds, inc = seconds + 1, 1
        raw = {"_id": {"_data": "00"}, "clusterTime": Timestamp(seconds, inc), "ns": {"db": "bench", "coll": "docs"}}
        roll = rng.random()
        if roll < 0.15 or len(live) < 100:
            _id, next_id = next_id, next_id + 1
            where[_id] = len(live)
            live.append(_id)
            raw.update(operationType="insert", documentKey={"_id": _id},
                       fullDocument={"_id": _id, "n": 0, "name": f"doc-{_id}", "tags": ["a", "b"]})
        elif roll < 0.95:
            _id = live[rng.randrange(len(live))]
            fields = {"n": rng.randrange(1000), f"f{rng.randrange(8)}": "x" * 20}
            raw.update(operationType="update", documentKey={"_id": _id},
                       updateDescription={"updatedFields": fields, "removedFields": []})
            if full_update:
                raw["fullDocument"] = {"_id": _id, "name": f"doc-{_id}", **fields}
        else:
            index = rng.randrange(len(live))
            _id, last = live[index], live[-1]
            live[index], where[last] = last, index
            live.pop()
            del where[_id]
            raw.update(operationType="delete", documentKey={"_id": _id})
        yield ChangeRecord.from_change_event(raw)
    yield len(live)


def _baselines(spark, topic: str, bootstrap: str) -> dict[str, tuple[int, float]]:
    """Plain Spark over the same topic: read and count the records; read, parse every envelope, count per op."""
    from pyspark.sql import functions as F

    from sparkjobs.events import parse_events
    from sparkjobs.topics import TopicSource

    source = TopicSource(topics=[topic], bootstrap_servers=bootstrap)
    found = {}
    started = time.monotonic()
    count = source.read(spark).count()
    found["read + count"] = (count, time.monotonic() - started)
    started = time.monotonic()
    per_op = parse_events(source.read(spark)).groupBy("op").agg(F.count(F.lit(1)).alias("n")).collect()
    found["read + parse + count per op"] = (sum(row["n"] for row in per_op), time.monotonic() - started)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--format", default="debezium", choices=["debezium", "legacy", "flattened"])
    parser.add_argument("--full-update", action="store_true")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--master", default="local[*]")
    options = parser.parse_args()
    bootstrap = settings.kafka_bootstrap()
    name = f"benchspark{uuid.uuid4().hex[:8]}"
    config = ConnectorConfig.from_properties({
        "name": name, "topic.prefix": name, "mongodb.connection.string": "mongodb://localhost",
        "event.format": options.format,
    })
    transformer = Transformer(config, "rs0")
    topic = f"{name}.bench.docs"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, options.partitions, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True,
                         "compression.type": "lz4", "queue.buffering.max.messages": 500_000})
    started = time.monotonic()
    produced = 0
    live = 0
    for item in _records(options.events, options.full_update, random.Random(1)):
        if isinstance(item, int):
            live = item
            break
        for message in transformer.transform(item):
            while True:
                try:
                    producer.produce(message.topic, key=message.key, value=message.value)
                    break
                except BufferError:
                    producer.poll(0.1)
            produced += 1
        producer.poll(0)
    producer.flush(120)
    produce_s = time.monotonic() - started
    print(f"produced {produced} records ({options.format}, {'full' if options.full_update else 'patch'} updates) "
          f"in {produce_s:.1f}s; {live} live documents expected", flush=True)

    from sparkjobs import run
    from sparkjobs.session import build_session

    started = time.monotonic()
    spark = build_session(options.master, app_name="bench-latest-state")
    spark.range(1).count()
    session_s = time.monotonic() - started
    out = tempfile.mkdtemp(prefix="bench-latest-")
    try:
        baselines = _baselines(spark, topic, bootstrap)
        buffer = io.StringIO()
        started = time.monotonic()
        code = run.main(["latest_state", "--args-json", json.dumps({
            "topics": [topic], "bootstrap_servers": bootstrap, "output_path": out, "preview_rows": 0,
        })], spark=spark, stdout=buffer)
        job_s = time.monotonic() - started
        final = json.loads(buffer.getvalue().strip().splitlines()[-1][len("CDCJOB "):])
    finally:
        shutil.rmtree(out, ignore_errors=True)
        spark.stop()
        if not os.environ.get("BENCH_KEEP_TOPIC"):
            admin.delete_topics([topic])[topic].result(30)
        else:
            print(f"kept topic {topic}")
    if code != 0:
        print(f"job failed: {final.get('error')}", file=sys.stderr)
        return 1
    print(f"spark session start-up {session_s:.1f}s (excluded)")
    rows = final["rows_in"]
    for label, (count, seconds) in baselines.items():
        print(f"baseline {label}: {count} records in {seconds:.1f}s = {count / seconds:,.0f} events/s")
    print(f"latest_state batch job: {rows} records in {job_s:.1f}s = "
          f"{rows / job_s:,.0f} events/s on {options.master}; "
          f"{final['rows_out']} documents written (expected {live}: {'ok' if final['rows_out'] == live else 'BAD'})")
    for label, (_, seconds) in baselines.items():
        print(f"ratio latest_state / {label} (events/s): {seconds / job_s:.2f}")
    return 0 if final["rows_out"] == live else 1


if __name__ == "__main__":
    sys.exit(main())
