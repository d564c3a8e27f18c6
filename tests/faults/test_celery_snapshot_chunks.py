"""Initial-snapshot chunks run as Celery tasks on the `snapshot` queue, as deployed: one worker process runs the
pipeline (`streaming,default`), two others consume `snapshot`, beat supervises; all subprocesses over a temporary
database, the stack's Redis (database 10) and Kafka, the emulated replica set (tests/platform_processes.py).

- With CDC_SNAPSHOT_DISPATCH at its default (auto) the pipeline finds the two snapshot workers, both read chunks
  (their logs name them), and a read_committed consumer sees every document exactly once.
- `kill -9` of one snapshot worker mid-snapshot: its chunk tasks never report back (acknowledged early, so never
  redelivered); the coordinator notices the missing heartbeats, sends those chunks again, and the snapshot still
  completes with every document exactly once.
"""

from __future__ import annotations

import json
import re
import signal

import pymongo
import pytest
import redis

from tests import waiting
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import topic_exists
from tests.platform_processes import Platform

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_DB = 10  # apart from a running demo (0), the reset replay test (11) and the other process tests (12-15)
DOCS = 3000
CHUNK = 100


@pytest.fixture(scope="module")
def platform(stack, tmp_path_factory):
    processes = Platform(stack, tmp_path_factory.mktemp("snapshot-chunks"), REDIS_DB,
                         CDC_SNAPSHOT_CHUNK_HEARTBEAT_SECONDS="1", CDC_SNAPSHOT_CHUNK_START_SECONDS="20")
    processes.migrate()
    processes.snapshot_workers = {label: processes.start_worker(label, queues="snapshot", concurrency=2)
                                  for label in ("snap-a", "snap-b")}
    processes.start_worker("streamer", queues="streaming,default", concurrency=2)
    processes.start_beat()
    yield processes
    processes.stop()


def wait_for(predicate, timeout: float, what: str, platform: Platform | None = None):
    return waiting.wait_for(predicate, timeout, what, lambda: platform.log("streamer")[-4000:] if platform else "",
                            interval=0.3)


def chunks_read(platform: Platform, label: str, connector: str) -> int:
    """Chunks this snapshot worker read and committed for `connector` (not counting already-committed ones)."""
    pattern = re.compile(rf"snapshot chunk of {connector}/\S+: (\d+) documents on \S+$", re.MULTILINE)
    return len(pattern.findall(platform.log(label)))


def create_connector(platform: Platform, name: str, uri: str) -> None:
    platform.django(
        "from web.connectors import drafts, services\n"
        "parts = drafts.prepare({"
        f"'name': {name!r}, 'topic.prefix': {name!r}, 'mongodb.connection.string': {uri!r}, "
        f"'database.include.list': {name!r}, 'snapshot.mode': 'initial', 'snapshot.chunk.size': {CHUNK}, "
        f"'snapshot.max.threads': 2, 'offset.storage.topic': '{name}.offsets', 'poll.interval.ms': 100, "
        "'topic.creation.default.partitions': 1})\n"
        "services.create_connector(parts, user=None, source='system', desired_state='running')\n"
    )


def seed(uri: str, name: str) -> None:
    coll = pymongo.MongoClient(uri)[name].docs
    coll.insert_many([{"_id": i, "pad": "x" * 200} for i in range(DOCS)])


def snapshot_ids(bootstrap: str, topic: str) -> list[int] | None:
    """The documents of a completed snapshot as a read_committed consumer sees them; None until it completed."""
    if not topic_exists(bootstrap, topic):
        return None
    # the killed worker's transaction stays open until the chunk's retry fences it: read what is committed so far
    records = read_topic(bootstrap, topic, stable_only=True)
    values = [json.loads(r.value) for r in records if r.value is not None]
    if not any(v["source"]["snapshot"] == "last" for v in values):
        return None
    return [json.loads(v["after"])["_id"] for v in values]


def test_chunks_are_read_by_both_snapshot_workers_exactly_once(platform, mongo_rs, unique_name, stack):
    name = "sc" + unique_name.replace("-", "")[-12:]
    seed(mongo_rs.uri, name)
    create_connector(platform, name, mongo_rs.uri)
    ids = wait_for(lambda: snapshot_ids(stack.kafka_bootstrap, f"{name}.{name}.docs"), 120,
                   "the snapshot to complete", platform)
    assert sorted(ids) == list(range(DOCS)), "documents lost or duplicated"
    assert "sent to the 'snapshot' queue" in platform.log("streamer")
    per_worker = {label: chunks_read(platform, label, name) for label in platform.snapshot_workers}
    assert all(per_worker.values()), f"chunks read per snapshot worker: {per_worker}"
    planned = int(re.search(rf"{name}\.docs planned as (\d+) chunks", platform.log("streamer")).group(1))
    assert planned > 10 and sum(per_worker.values()) == planned - 1, per_worker  # the coordinator reads the last


def test_snapshot_completes_exactly_once_after_kill9_of_a_snapshot_worker(platform, mongo_rs, unique_name, stack):
    name = "sk" + unique_name.replace("-", "")[-12:]
    seed(mongo_rs.uri, name)
    create_connector(platform, name, mongo_rs.uri)
    victim = "snap-a"
    node = platform.snapshot_workers[victim]
    heartbeats = redis.Redis.from_url(platform.env["REDIS_URL"])

    def victim_tasks() -> set:  # its heartbeat keys exist exactly while its chunk tasks run
        return {key for key in heartbeats.scan_iter("cdc:chunk-task:*") if heartbeats.get(key) == node.encode()}

    wait_for(lambda: chunks_read(platform, victim, name) >= 1, 120, "the victim to read a chunk", platform)
    # From now on the emulator delays every chunk query by 10 s: a task of the victim that starts after this point
    # is certainly inside its query for the next 10 s, so the kill catches it mid-chunk however fast chunks are read.
    mongo_rs.set_delay(10_000, commands=["find"])
    try:
        running_before = victim_tasks()  # tasks that may have passed their query before the delay
        wait_for(lambda: victim_tasks() - running_before, 120, "a chunk task of the victim started after the hold",
                 platform)
        platform.processes[victim].send_signal(signal.SIGKILL)
        platform.processes[victim].wait()
    finally:
        mongo_rs.set_delay(0)
    victim_log = platform.log(victim)
    received = set(re.findall(r"Task workers\.snapshot\.read_chunk\[([0-9a-f-]+)\] received", victim_log))
    finished = set(re.findall(r"Task workers\.snapshot\.read_chunk\[([0-9a-f-]+)\] succeeded", victim_log))
    lost = received - finished
    assert lost, "the kill did not catch a chunk task of the victim (it was meant to)"

    ids = wait_for(lambda: snapshot_ids(stack.kafka_bootstrap, f"{name}.{name}.docs"), 180,
                   "the snapshot to complete without the killed worker", platform)
    assert sorted(ids) == list(range(DOCS)), "documents lost or duplicated across the kill"
    assert chunks_read(platform, "snap-b", name) > 0
    coordinator = platform.log("streamer")
    noticed = set(re.findall(r"snapshot chunk task ([0-9a-f-]+) lost", coordinator))
    assert lost <= noticed, f"chunk tasks lost with the killed worker and never sent again: {lost - noticed}"
