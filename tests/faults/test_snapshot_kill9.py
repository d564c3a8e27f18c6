"""kill -9 in the middle of a chunked snapshot: each restart reads only the chunks that were not committed, and a
read_committed consumer sees every document exactly once."""

from __future__ import annotations

import json
import re
import signal
import time

import pymongo
import pytest
from confluent_kafka import Producer

from connectors.kafka import OffsetStore
from connectors.kafka.sink import lane_transactional_ids
from connectors.mongodb.snapshots import SnapshotProgress
from tests.faults.test_exactly_once_kill9 import _start_runner
from tests.integration.kafka_reading import last_snapshot_record, read_topic
from tests.integration.pipeline_harness import topic_exists

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOCUMENTS = 30_000
CHUNK = 200
READ = re.compile(r"snapshot \S+: read chunk (\d+) ")


def _progress(store: OffsetStore, name: str) -> SnapshotProgress | None:
    snapshot = last_snapshot_record(store.bootstrap_servers, store.topic.name, name)
    return None if snapshot is None else SnapshotProgress.from_json(snapshot)


def _fence(bootstrap_servers: str, name: str) -> None:
    for lane_id in lane_transactional_ids(name, "rs0"):
        producer = Producer({"bootstrap.servers": bootstrap_servers, "transactional.id": lane_id})
        producer.init_transactions(30)
        producer.flush(5)


def _done(progress: SnapshotProgress) -> set[int]:
    return {c.number for c in progress.chunks() if progress.is_done(c)}


MEMBERS = 3
# Chunk reads (on the primary) each killed runner may do before the emulator holds every further one: enough for the
# chunks _kill_when waits for, and the two killed runners together read fewer than all of them.
FINDS_BEFORE_HOLD = 45


def _hold_reads_after(mongo_rs, finds: int) -> None:
    """Every member answers `finds` more find commands, then holds each further one (until the runner is dead), so
    a kill lands mid-snapshot however fast the machine reads."""
    assert 2 * finds < DOCUMENTS // CHUNK
    for index in range(MEMBERS):
        mongo_rs.configure_fail_point({"skip": finds}, {"failCommands": ["find"], "blockConnection": True,
                                                        "blockTimeMS": 600_000}, index=index)


def _release_reads(mongo_rs) -> None:
    for index in range(MEMBERS):
        mongo_rs.configure_fail_point("off", index=index)


def _kill_when(runner, store, name, at_least: int, mongo_rs, timeout: float = 60) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        progress = _progress(store, name)
        if progress is not None and progress.chunks_done >= at_least:
            try:
                runner.send_signal(signal.SIGKILL)
                runner.wait()
            finally:
                _release_reads(mongo_rs)
            # The dead runner's open transaction holds back read_committed readers until its successor fences
            # it (or transaction.timeout.ms passes): fence it now, as the restarted runner's producer will.
            _fence(store.bootstrap_servers, name)
            progress = _progress(store, name)  # what was committed when it died
            assert not progress.completed, "the snapshot finished before the kill"
            return _done(progress)
        time.sleep(0.05)
    raise AssertionError(f"the snapshot never reached {at_least} chunks")


def _chunks_read(log_path) -> list[int]:
    return [int(n) for n in READ.findall(log_path.read_text())]


def test_kill_minus_nine_mid_snapshot_resumes_at_the_unfinished_chunks(stack, mongo_rs, tmp_path, unique_name):
    name = "ks" + unique_name.replace("-", "")[-12:]
    client = pymongo.MongoClient(mongo_rs.uri)
    client[name].docs.insert_many([{"_id": i, "pad": "x" * 100} for i in range(DOCUMENTS)])
    config = {
        "name": name, "topic.prefix": name, "mongodb.connection.string": mongo_rs.uri,
        "database.include.list": name, "offset.storage.topic": f"{name}.offsets",
        "snapshot.chunk.size": CHUNK, "snapshot.max.threads": 2, "poll.interval.ms": 50,
    }
    config_path = tmp_path / "connector.json"
    config_path.write_text(json.dumps(config))
    store = OffsetStore(stack.kafka_bootstrap, f"{name}.offsets")
    logs = [tmp_path / f"runner-{i}.log" for i in range(3)]

    _hold_reads_after(mongo_rs, FINDS_BEFORE_HOLD)
    runner = _start_runner(config_path, stack.kafka_bootstrap, logs[0])
    done_1 = _kill_when(runner, store, name, 20, mongo_rs)
    _hold_reads_after(mongo_rs, FINDS_BEFORE_HOLD)
    runner = _start_runner(config_path, stack.kafka_bootstrap, logs[1])
    done_2 = _kill_when(runner, store, name, len(done_1) + 20, mongo_rs)
    runner = _start_runner(config_path, stack.kafka_bootstrap, logs[2])

    topic = f"{name}.{name}.docs"
    deadline = time.monotonic() + 90
    records = []
    while time.monotonic() < deadline:
        progress = _progress(store, name)
        if progress is not None and progress.completed and topic_exists(stack.kafka_bootstrap, topic):
            records = [r for r in read_topic(stack.kafka_bootstrap, topic) if r.value]
            break
        time.sleep(0.2)
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(30) == 0, logs[2].read_text()[-3000:]

    total = len(progress.chunks())
    assert total == DOCUMENTS // CHUNK
    read = [_chunks_read(log) for log in logs]
    # each restart read exactly the chunks not committed when the previous run died (plus none of the others)
    assert done_1 <= done_2 and len(done_1) >= 20
    assert not set(read[1]) & done_1, sorted(set(read[1]) & done_1)
    assert not set(read[2]) & done_2, sorted(set(read[2]) & done_2)
    assert set(read[2]) == set(range(total)) - done_2
    assert set(read[0]) >= done_1 and set(read[1]) >= done_2 - done_1
    assert f"{len(done_2)} already done" in logs[2].read_text()
    # read_committed: every document exactly once, one "last"
    ids = [json.loads(r.key)["id"] for r in records]
    assert len(ids) == DOCUMENTS and len(set(ids)) == DOCUMENTS
    assert [json.loads(r.value)["source"]["snapshot"] for r in records].count("last") == 1
