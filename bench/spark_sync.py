"""Delta sync vs versioned Parquet: time per micro-batch of 1k changes as the table grows, and a crash-and-restart.

    python -m bench.spark_sync [--rows 1000000] [--sizes 100000,1000000] [--batch 1000] [--batches 5]
                               [--crash-rows 20000]

Produces inserts of ``--rows`` documents to a fresh topic (the real Transformer's Debezium events), in steps: at each
table size of ``--sizes`` it times ``--batches`` micro-batches of ``--batch`` updates to random existing documents,
each applied two ways in one session on ``local[*]``:

- Delta: `sparkjobs.delta_sync.sync_batch`, the `delta_sync` template's MERGE of one micro-batch;
- versioned Parquet: what the streaming `latest_state` template does per micro-batch (read the current version,
  merge the batch's events in with `latest_state(previous_state=…)`, write the next version).

It prints the median milliseconds per micro-batch at each size side by side, the 10x extrapolation of each (the
line through the two largest sizes) and each one's growth between them. Then the crash run: the real job
(`python -m sparkjobs.submit delta_sync`, one micro-batch per 1,000 records) over ``--crash-rows`` inserts and
updates is killed with SIGKILL in its third micro-batch and started again; the table must then hold exactly the
workload's documents (checked row by row). Needs Kafka (`python -m devstack up kafka`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from bson import Timestamp, json_util
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.records import ChangeRecord
from connectors.mongodb.transformer import Transformer
from devstack import settings


class Workload:
    """Debezium events of one collection, produced to its own topic; `docs` is the state they describe."""

    def __init__(self, bootstrap: str, prefix: str):
        self.bootstrap = bootstrap
        config = ConnectorConfig.from_properties({"name": prefix, "topic.prefix": prefix,
                                                  "mongodb.connection.string": "mongodb://localhost"})
        self.transformer = Transformer(config, "rs0", clock=time.time)
        self.topic = f"{prefix}.bench.docs"
        self.docs: dict[int, dict] = {}
        self.seconds, self.inc = 1_700_000_000, 0
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a collected client fails its futures
        admin.create_topics([NewTopic(self.topic, 1, 1)])[self.topic].result(30)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
        self.offset = 0

    def _tick(self) -> Timestamp:
        self.inc += 1
        if self.inc > 1000:
            self.seconds, self.inc = self.seconds + 1, 1
        return Timestamp(self.seconds, self.inc)

    def _emit(self, raw: dict) -> None:
        for message in self.transformer.transform(ChangeRecord.from_change_event(raw)):
            self.producer.produce(message.topic, key=message.key, value=message.value)
            self.offset += 1
        self.producer.poll(0)

    def insert(self, _id: int) -> None:
        document = {"_id": _id, "n": 0, "name": f"doc-{_id}", "tags": ["a", "b"]}
        self.docs[_id] = document
        self._emit({"_id": {"_data": "00"}, "clusterTime": self._tick(), "ns": {"db": "bench", "coll": "docs"},
                    "operationType": "insert", "documentKey": {"_id": _id}, "fullDocument": document})

    def update(self, _id: int, rng: random.Random) -> None:
        document = {**self.docs[_id], "n": rng.randrange(1_000_000)}
        self.docs[_id] = document
        self._emit({"_id": {"_data": "00"}, "clusterTime": self._tick(), "ns": {"db": "bench", "coll": "docs"},
                    "operationType": "update", "documentKey": {"_id": _id}, "fullDocument": document,
                    "updateDescription": {"updatedFields": {"n": document["n"]}, "removedFields": []}})

    def flush(self) -> int:
        """Waits for everything produced; returns the end offset."""
        self.producer.flush(120)
        return self.offset


def _events(spark, workload: Workload, start: int, end: int):
    from sparkjobs.events import parse_events
    from sparkjobs.topics import TopicSource

    source = TopicSource(topics=[workload.topic], bootstrap_servers=workload.bootstrap,
                         starting_offsets={workload.topic: {"0": start}}, ending_offsets={workload.topic: {"0": end}})
    return parse_events(source.read(spark))


def _delta_batch(spark, workload, start, end, output, batch_id) -> float:
    from sparkjobs.delta_sync import sync_batch

    began = time.perf_counter()
    sync_batch(spark, _events(spark, workload, start, end), output_path=output, app_id="bench", batch_id=batch_id,
               soft=False)
    return time.perf_counter() - began


def _parquet_batch(spark, workload, start, end, output, batch_id) -> float:
    from sparkjobs import output as versions
    from sparkjobs.latest_state import latest_state

    began = time.perf_counter()
    previous = versions.current_version(spark, output)
    state = latest_state(_events(spark, workload, start, end),
                         previous_state=spark.read.parquet(previous) if previous else None, include_deleted=True)
    versions.write_version(state, output, batch_id)
    return time.perf_counter() - began


def compare(spark, args, workdir: str) -> list[tuple[int, float, float]]:
    rng = random.Random(7)
    workload = Workload(args.bootstrap, f"bench-sync-{uuid.uuid4().hex[:8]}")
    delta_out, parquet_out = f"{workdir}/delta", f"{workdir}/parquet"
    rows, loaded, batch_id, results = 0, 0, 0, []
    for size in args.sizes:
        while rows < size:
            workload.insert(rows)
            rows += 1
        end = workload.flush()
        print(f"loading {size:,} rows ...", flush=True)
        _delta_batch(spark, workload, loaded, end, delta_out, batch_id)
        _parquet_batch(spark, workload, loaded, end, parquet_out, batch_id)
        loaded, batch_id = end, batch_id + 1
        delta_times, parquet_times = [], []
        for _ in range(args.batches):
            for _ in range(args.batch):
                workload.update(rng.randrange(rows), rng)
            end = workload.flush()
            delta_times.append(_delta_batch(spark, workload, loaded, end, delta_out, batch_id))
            parquet_times.append(_parquet_batch(spark, workload, loaded, end, parquet_out, batch_id))
            loaded, batch_id = end, batch_id + 1
        results.append((size, statistics.median(delta_times) * 1000, statistics.median(parquet_times) * 1000))
        print(f"  {size:>10,} rows: delta {results[-1][1]:8.0f} ms  parquet {results[-1][2]:8.0f} ms", flush=True)
    table = spark.read.format("delta").load(f"{delta_out}/{_table(workload.topic)}")
    assert table.count() == len(workload.docs), "the Delta table does not hold the workload's documents"
    return results


def _table(topic: str) -> str:
    from sparkjobs.delta_sync import table_name

    return table_name(topic)


def crash_and_restart(spark, args, workdir: str) -> dict:
    """The real job, killed in its third micro-batch and started again; the table must equal the workload."""
    from sparkjobs.jobuser import job_user
    from sparkjobs.output import PREFIX
    from sparkjobs.submit import command

    rng = random.Random(11)
    workload = Workload(args.bootstrap, f"bench-crash-{uuid.uuid4().hex[:8]}")
    for _id in range(args.crash_rows):
        workload.insert(_id)
    for _ in range(args.crash_rows // 4):
        workload.update(rng.randrange(args.crash_rows), rng)
    workload.flush()
    folder = tempfile.mkdtemp(prefix="bench-sync-crash-", dir=workdir)
    os.chmod(folder, 0o755)  # noqa: S103 - the job user writes the tables inside
    user = job_user()
    if user is not None:
        os.chown(folder, user.uid, user.gid)
    job = {"topics": [workload.topic], "bootstrap_servers": args.bootstrap, "mode": "stream",
           "output_path": f"{folder}/tables", "checkpoint_path": f"{folder}/checkpoint",
           "max_offsets_per_trigger": 1000, "trigger": "1 second"}
    argv, env = command("delta_sync", job, master="local[2]")
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,  # noqa: S603
                               start_new_session=True)
    killed_in = None
    for line in process.stdout:
        if line.startswith(PREFIX):
            event = json.loads(line[len(PREFIX):])
            if event.get("event") == "step" and "merge into" in event.get("name", ""):
                batch = int(event["name"].split()[1].rstrip(":"))
                if batch >= 2:
                    os.killpg(process.pid, signal.SIGKILL)
                    killed_in = batch
                    break
            if "status" in event:
                break
    process.wait(60)
    started = time.perf_counter()
    argv, env = command("delta_sync", {**job, "trigger": "available_now", "max_offsets_per_trigger": 100_000},
                        master="local[2]")
    finished = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    final = [json.loads(line[len(PREFIX):]) for line in finished.stdout.splitlines() if line.startswith(PREFIX)][-1]
    table = spark.read.format("delta").load(f"{folder}/tables/{_table(workload.topic)}")
    stored = {int(row["_cdc_key"]): json_util.loads(row["document"]) for row in table.collect()}
    return {"killed_in_batch": killed_in, "restart_status": final.get("status"),
            "restart_s": round(time.perf_counter() - started, 1), "rows": len(stored),
            "equal": stored == workload.docs, "table_rows_equal_count": table.count() == len(workload.docs)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spark_sync", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--crash-rows", type=int, default=20_000)
    parser.add_argument("--skip-crash", action="store_true")
    parser.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or settings.kafka_bootstrap())
    args = parser.parse_args(argv)
    args.sizes = sorted(min(int(size), args.rows) for size in args.sizes.split(","))
    from sparkjobs.session import build_session

    workdir = tempfile.mkdtemp(prefix="bench-spark-sync-")
    os.chmod(workdir, 0o755)  # noqa: S103 - the job user reaches the crash run's folder
    spark = build_session("local[*]", app_name="bench-spark-sync", delta=True)
    try:
        results = compare(spark, args, workdir)
        print(f"\nper micro-batch of {args.batch:,} changes (median of {args.batches}), local[*]:")
        print(f"{'table rows':>12} {'Delta MERGE ms':>16} {'versioned Parquet ms':>22}")
        for size, delta_ms, parquet_ms in results:
            print(f"{size:>12,} {delta_ms:>16.0f} {parquet_ms:>22.0f}")
        if len(results) >= 2:  # both on the line through the two largest sizes: neither is assumed flat
            (small, d_small, p_small), (large, d_large, p_large) = results[-2], results[-1]
            ten = large * 10

            def extrapolated(at_small: float, at_large: float) -> float:
                return at_large + (at_large - at_small) / (large - small) * (ten - large)

            print(f"{ten:>12,} {extrapolated(d_small, d_large):>16.0f} {extrapolated(p_small, p_large):>22.0f}"
                  "   (extrapolated)")
            print(f"growth from {small:,} to {large:,} rows: Delta x{d_large / d_small:.2f}, "
                  f"versioned Parquet x{p_large / p_small:.2f}")
        if not args.skip_crash:
            print("\ncrash and restart:", json.dumps(crash_and_restart(spark, args, workdir)))
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
