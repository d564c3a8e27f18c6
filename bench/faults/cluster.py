"""Broker kills on a 3-broker KRaft cluster: exactly-once while the brokers that matter to a pipeline die.

    python -m bench.faults.cluster [--source postgres|mariadb|mongodb] [--runs N] [--ports LOW-HIGH] [--json PATH]

The stack is private, as in the fault campaign: a 3-broker cluster (`python -m devstack up kafka --brokers 3` in a
temporary DEVSTACK_HOME) and a private database. The connector is the real runner in its own process, writing with
the platform's defaults, so its topics are created with replication factor 3 and min.insync.replicas=2. The
campaign's writers and checkers run beside it (Session: the inserter and its checker; on PostgreSQL and MariaDB the
mixed writer and verify.py).

Each run has two faults, one after the other, while the writers write:
  1. kill -9 of the broker that leads the partition of the pipeline's offsets topic its offsets go to;
  2. kill -9 of the broker that leads the partition of Kafka's transaction log holding the pipeline's
     transactional id, i.e. its transaction coordinator (looked up after the first kill: leadership moves).
After each kill the pipeline must go on with the two brokers left (recovery: from the kill to the next event a
read_committed consumer receives); the killed broker is then started again and the run waits until every replica
of the pipeline's partitions is back in sync, so that the next kill cannot take the last in-sync copy.

It prints the campaign's table (checker.report) with one row, `cluster-broker-kill`; exit status 1 when any error
column is not 0 or the scenario was aborted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.faults.campaign import Campaign, CampaignAborted, Session
from bench.faults.cli import port_range
from bench.faults.report import Outcome, report
from bench.faults.source_kinds import SOURCES
from bench.faults.sources import wait_gone
from devstack.private_kafka import PrivateKafka
from devstack.process import StackError

BROKERS = 3
SCENARIO = "cluster-broker-kill"
TRANSACTION_LOG = "__transaction_state"
IN_SYNC_TIMEOUT_S = 300
RECOVERY_TIMEOUT_S = 240
START_ATTEMPTS = 3


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def partition_leader(bootstrap: str, topic: str, partition: int) -> int:
    metadata = _admin(bootstrap).list_topics(topic, timeout=30)
    return metadata.topics[topic].partitions[partition].leader


def written_partitions(bootstrap: str, topic: str) -> list[int]:
    """The partitions of `topic` that hold records (a pipeline's offsets go to the one its key hashes to)."""
    metadata = _admin(bootstrap).list_topics(topic, timeout=30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cluster-faults", "log_level": 0})
    try:
        return [p for p in sorted(metadata.topics[topic].partitions)
                if consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] > 0]
    finally:
        consumer.close()


def coordinator_partition(bootstrap: str, id_prefix: str) -> int | None:
    """The partition of Kafka's transaction log holding the first lane's transactional id that starts with
    `id_prefix` (a connector's ids are `<connector>.<replica set>[.lane-N]`): its leader is that id's transaction
    coordinator. Each record's key is a version (int16) then the id as a length-prefixed (int16) string."""
    wanted = id_prefix.encode()
    metadata = _admin(bootstrap).list_topics(TRANSACTION_LOG, timeout=30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cluster-faults", "enable.auto.commit": False,
                         "log_level": 0})
    try:
        for partition in sorted(metadata.topics[TRANSACTION_LOG].partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(TRANSACTION_LOG, partition), timeout=30)
            if high <= low:
                continue
            consumer.assign([TopicPartition(TRANSACTION_LOG, partition, low)])
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                message = consumer.poll(1.0)
                if message is None or message.error():
                    continue
                transactional_id = (message.key() or b"")[4:]
                if transactional_id.startswith(wanted) and b".lane-" not in transactional_id:
                    return partition
                if message.offset() >= high - 1:
                    break
        return None
    finally:
        consumer.close()


def wait_in_sync(bootstrap: str, topics: list[str], timeout: float = IN_SYNC_TIMEOUT_S) -> None:
    """Every partition of `topics` has all its replicas in sync (a restarted broker caught up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            metadata = _admin(bootstrap).list_topics(timeout=10)
        except KafkaException:  # no broker answered in time: asked again
            metadata = None
        if metadata is not None:
            partitions = [p for t in topics if t in metadata.topics for p in metadata.topics[t].partitions.values()]
            if partitions and all(len(p.isrs) == len(p.replicas) for p in partitions):
                return
        time.sleep(1)
    raise StackError(f"the restarted broker did not catch up within {timeout:.0f}s")


class ClusterCampaign(Campaign):
    def cluster_broker_kill(self, runs: int) -> Outcome:
        with Session(self, "ck").setup() as session:
            session.wait_streaming()
            offsets = f"{session.name}.offsets"
            pipeline_topics = [offsets, TRANSACTION_LOG, *session.tables, session.transaction_topic]
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                partitions = written_partitions(self.kafka.bootstrap, offsets)
                if not partitions:
                    session.outcome.notes.append(f"{session.name}: no offsets written yet; no broker killed")
                    continue
                self._kill(session, partition_leader(self.kafka.bootstrap, offsets, partitions[0]),
                           "offsets partition leader", pipeline_topics)
                session.wait(self.rng.uniform(0.5, 3.0))
                partition = self._coordinator_partition(session)
                if partition is None:
                    session.outcome.notes.append(f"{session.name}: transactional id not found in {TRANSACTION_LOG}")
                    continue
                self._kill(session, partition_leader(self.kafka.bootstrap, TRANSACTION_LOG, partition),
                           "transaction coordinator", pipeline_topics)
            session.wait(2)
        return session.outcome

    def _coordinator_partition(self, session: Session) -> int | None:
        return coordinator_partition(self.kafka.bootstrap, f"{session.name}.")

    def _kill(self, session: Session, node: int, role: str, topics: list[str]) -> None:
        pid = self.kafka.node_pid(node)
        print(f"  kill -9 of broker {node} ({role}, pid {pid})", flush=True)
        started = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        wait_gone(pid)
        session.fault(started)
        before = sum(session.collector.ops.values())
        session.wait_for(lambda: sum(session.collector.ops.values()) > before, RECOVERY_TIMEOUT_S,
                         f"events after broker {node} ({role}) was killed")
        print(f"  events again {time.monotonic() - started:.1f}s after the kill; starting broker {node} again",
              flush=True)
        self._start_again()
        wait_in_sync(self.kafka.bootstrap, topics)

    def _start_again(self) -> None:
        start_cluster(self.kafka)


def start_cluster(kafka: PrivateKafka) -> None:
    """Starts the cluster's nodes that do not run, a few times over: on a loaded machine a node can take longer than
    one start's wait (log recovery after kill -9), or exit while the others start (`up` then starts it again)."""
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            kafka.start()
            return
        except StackError as error:
            if attempt == START_ATTEMPTS:
                raise
            print(f"  Kafka not up yet ({str(error).splitlines()[0]}); trying again", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults.cluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=sorted(SOURCES), default="postgres")
    parser.add_argument("--runs", type=int, default=1, help="runs of the two kills (default 1)")
    parser.add_argument("--rate", type=float, default=40.0, help="the inserter's writes per second")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--ports", type=port_range, help="LOW-HIGH: the private cluster and database listen here")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--keep", action="store_true", help="keep the work directory afterwards")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    seed = args.seed if args.seed is not None else random.randrange(10**6)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    workdir = Path(tempfile.mkdtemp(prefix="cdc-cluster-faults-"))
    kafka = PrivateKafka(workdir / "stack", args.ports, brokers=BROKERS)
    source = SOURCES[args.source]()
    source_started = False
    outcome: Outcome | None = None
    try:
        print(f"work directory {workdir} (seed {seed}); starting a private {BROKERS}-broker Kafka cluster...",
              flush=True)
        start_cluster(kafka)
        source_started = True
        described = source.start(workdir, args.ports)
        print(f"Kafka {kafka.bootstrap}, {described}", flush=True)
        campaign = ClusterCampaign(kafka, source, workdir, random.Random(seed), 0.0, args.rate, args.ports)
        started = time.monotonic()
        try:
            outcome = campaign.cluster_broker_kill(args.runs)
        except (CampaignAborted, StackError) as error:
            outcome = Outcome(notes=[f"aborted: {error}"], aborted=True)
        print(f"{SCENARIO}: done in {time.monotonic() - started:.0f}s", flush=True)
    finally:
        if source_started:
            source.stop()
        kafka.stop()
        if not args.keep and outcome is not None and not outcome.failed:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs kept in {workdir}")
    print(report({SCENARIO: outcome}))
    if args.json:
        # the campaign's figures, with the faults made and every write checked (streamed and snapshot-read)
        args.json.write_text(json.dumps({SCENARIO: {
            **outcome.figures(), "runs": args.runs, "faults": outcome.faults,
            "writes": outcome.changes + outcome.snapshot_rows}}, indent=2))
    return 1 if outcome.failed else 0


if __name__ == "__main__":
    sys.exit(main())
