"""A worker frozen (SIGSTOP, it and its pipeline process) past its lease is a zombie: the other worker takes the
pipeline over, and when the zombie continues (SIGCONT) its lease is gone and Kafka fences its producer, so it stops.
Its last reports still reach the control plane; they must not overwrite what the new owner reports: the stored phase
stays `streaming` on the new owner, no error of the zombie's is stored, and the activity log shows the zombie's
reports as not stored. Everything runs as deployed (tests/platform_processes.py); MongoDB is the emulator."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time

import pytest
import redis

from bench.faults.platform import process_tree
from tests.faults.test_pipeline_processes import alive, pipeline_processes
from tests.platform_processes import Platform

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_DB = 1  # apart from a running demo (0) and the other process tests (2-15)


@pytest.fixture
def platform(stack, tmp_path):
    processes = Platform(stack, tmp_path, REDIS_DB)
    processes.migrate()
    yield processes
    processes.stop()


def lease_holder(platform: Platform, connector: str) -> str | None:
    value = redis.Redis.from_url(platform.env["REDIS_URL"]).get(f"cdc:lease:{connector}:rs0")
    return value.decode().split("|", 1)[0] if value else None


def observed(platform: Platform, connector: str) -> dict:
    """The stored state of rs0 and the activity log (oldest first), as the control plane keeps them."""
    out = platform.django(
        "import json\nfrom web.connectors.models import ActivityEntry, ReplicaSetState\n"
        f"state = ReplicaSetState.objects.filter(connector__name={connector!r}, replica_set='rs0').first()\n"
        f"log = ActivityEntry.objects.filter(connector__name={connector!r}).order_by('at', 'id')\n"
        "print(json.dumps({'phase': state and state.phase, 'worker': state and state.worker,\n"
        "                  'last_error': state and state.last_error,\n"
        "                  'activity': [[e.worker, e.kind, e.text] for e in log]}))")
    return json.loads(out.strip().splitlines()[-1])


def thaw(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def freeze_outside_a_write(platform: Platform, worker_pid: int) -> list[int]:
    """SIGSTOP of a worker and its pipeline processes at a moment none of them holds SQLite's write lock: the
    platform's test database is one SQLite file, and a writer frozen inside its transaction would stall every other
    process's writes (the new owner's reports among them) until it continues. Returns the stopped processes."""
    for _ in range(30):
        frozen = process_tree(worker_pid)
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        probe = sqlite3.connect(platform.tmp_path / "db.sqlite3", timeout=3)
        try:
            probe.execute("BEGIN IMMEDIATE")  # takes the write lock, or fails while a frozen process holds it
            probe.rollback()
            return frozen
        except sqlite3.OperationalError:
            thaw(frozen)
            time.sleep(0.3)
        finally:
            probe.close()
    pytest.fail("the worker was inside a database write each time it was frozen")


def streaming_on(platform: Platform, connector: str, node: str) -> bool:
    state = observed(platform, connector)
    return state["phase"] == "streaming" and state["worker"] == node


def test_a_zombie_worker_leaves_the_new_owners_state_alone(platform, mongo_rs, unique_name):
    name = "zr" + unique_name.replace("-", "")[-12:]
    platform.create_connector({"name": name, "topic.prefix": name, "mongodb.connection.string": mongo_rs.uri,
                               "database.include.list": name, "snapshot.mode": "never", "poll.interval.ms": 100,
                               "offset.storage.topic": f"{name}.offsets", "topic.creation.default.partitions": 1})
    nodes = {"wa": platform.start_worker("wa", concurrency=2), "wb": platform.start_worker("wb", concurrency=2)}
    platform.start_beat()

    zombie_node = platform.wait_for(lambda: lease_holder(platform, name), 90, "a worker to run the pipeline")
    platform.wait_for(lambda: streaming_on(platform, name, zombie_node), 90, "the first owner to stream")
    zombie = next(label for label, node in nodes.items() if node == zombie_node)
    survivor_node = nodes["wb" if zombie == "wa" else "wa"]
    worker_pid = platform.processes[zombie].pid
    [child] = platform.wait_for(lambda: [pid for pid, parent in pipeline_processes(name).items()
                                         if parent == worker_pid], 30, "the first owner's pipeline process")

    frozen = freeze_outside_a_write(platform, worker_pid)
    try:
        platform.wait_for(lambda: lease_holder(platform, name) == survivor_node, 120,
                          "the other worker to take the pipeline over (the zombie's lease expired)")
        platform.wait_for(lambda: streaming_on(platform, name, survivor_node), 90, "the new owner to stream")
        before = observed(platform, name)
    finally:
        thaw(frozen)
    platform.wait_for(lambda: not alive(child), 90, "the zombie's pipeline to stop once it found itself fenced")
    time.sleep(1)  # one report interval of the new owner, which a flicker on the zombie's report would show

    after = observed(platform, name)
    assert (after["phase"], after["worker"]) == ("streaming", survivor_node)
    assert after["last_error"] == before["last_error"]
    from_zombie = [text for worker, kind, text in after["activity"][len(before["activity"]):]
                   if worker == zombie_node and kind in ("state", "error")]
    assert from_zombie, "the zombie's last reports did not reach the control plane"
    assert all("not stored" in text and survivor_node in text for text in from_zombie), from_zombie
