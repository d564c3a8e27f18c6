"""Each pipeline runs in a process of its own (workers/pipeline_process.py), a child of the Celery worker that took
its task: kill -9 of that process alone brings the pipeline back (its lease expires, the supervisor dispatches it
again); kill -9 of the worker takes the child with it (PR_SET_PDEATHSIG), and another worker takes over; a warm
shutdown of a worker stops its pipeline as a pause would. Nothing lost or duplicated for read_committed consumers
through all of it. The MongoDB replica set is the emulator (or MONGODB_URI); everything else as deployed."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pymongo
import pytest

from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import topic_exists
from tests.platform_processes import Platform

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_DB = 6  # apart from a running demo (0) and the other process tests (7-15)


def pipeline_processes(connector: str) -> dict[int, int]:
    """{pid: parent pid} of the pipeline processes running `connector`'s partitions."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if b"workers.pipeline_child" in argv and connector.encode() in argv and "State:\tZ" not in status:
            found[int(entry.name)] = int(status.split("PPid:\t", 1)[1].split()[0])
    return found


def alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


@pytest.fixture
def platform(stack, tmp_path):
    processes = Platform.with_worker(stack, tmp_path, REDIS_DB)
    yield processes
    processes.stop()


def test_a_pipeline_is_a_process_of_its_own_that_dies_with_its_worker(platform, mongo_rs, stack, unique_name):
    name = "pp" + unique_name.replace("-", "")[-12:]
    docs = pymongo.MongoClient(mongo_rs.uri)[name].docs
    docs.insert_many([{"_id": i} for i in range(50)])
    platform.create_connector({"name": name, "topic.prefix": name, "mongodb.connection.string": mongo_rs.uri,
                               "database.include.list": name, "poll.interval.ms": 100,
                               "offset.storage.topic": f"{name}.offsets", "topic.creation.default.partitions": 1})
    topic = f"{name}.{name}.docs"

    def ids() -> list[int]:
        if not topic_exists(stack.kafka_bootstrap, topic):
            return []
        records = read_topic(stack.kafka_bootstrap, topic, stable_only=True)
        return [json.loads(json.loads(r.value)["after"])["_id"] for r in records if r.value]

    platform.wait_for(lambda: len(ids()) >= 50, 90, "the snapshot of 50 documents")
    worker = platform.processes["worker"].pid
    first = platform.wait_for(lambda: pipeline_processes(name), 30, "the pipeline's process")
    [(child, parent)] = first.items()
    assert parent == worker and child != worker

    os.kill(child, signal.SIGKILL)  # the pipeline alone: the worker lives on and runs it again
    docs.insert_many([{"_id": i} for i in range(50, 100)])
    again = platform.wait_for(lambda: [pid for pid in pipeline_processes(name) if pid != child], 60,
                              "the pipeline to be started again after its process was killed")
    platform.wait_for(lambda: len(ids()) >= 100, 60, "the documents written around the kill")
    assert ids() == list(range(100)), "lost or duplicated events"

    platform.processes["worker"].send_signal(signal.SIGKILL)  # the worker: its pipeline process goes with it
    platform.processes["worker"].wait()
    platform.wait_for(lambda: not alive(again[0]), 10, "the pipeline's process to die with its worker")

    platform.start_worker("successor", concurrency=2)
    docs.insert_many([{"_id": i} for i in range(100, 150)])
    platform.wait_for(lambda: len(ids()) >= 150, 90, "the successor to take over")
    assert ids() == list(range(150)), "lost or duplicated events across the takeover"

    successor = platform.processes["successor"]
    running = platform.wait_for(lambda: pipeline_processes(name), 30, "the successor's pipeline process")
    successor.send_signal(signal.SIGTERM)  # warm shutdown: the pipeline stops as a pause would, then the worker ends
    platform.wait_for(lambda: successor.poll() is not None, 60, "the worker's warm shutdown", "successor")
    assert not any(alive(pid) for pid in running)
    assert set(platform.observed_phases(name).values()) == {"stopped"}
