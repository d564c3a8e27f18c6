"""PostgreSQL initial-snapshot chunks read by Celery tasks on the `snapshot` queue (connectors/postgres/chunk_tasks.py,
workers/snapshots.py), against the real server, Kafka and Celery workers (tests/platform_processes.py).

- Chunk tasks import the pipeline's exported snapshot: the snapshot worker is started only after rows were updated,
  deleted and inserted (so after the slot's consistent point and before any chunk was read); every row of the
  consistent point is read once in its state at that point, every write arrives once through the stream after
  the snapshot, and the stream goes on.
- A chunk task whose exported snapshot is gone reads and writes nothing and fails for good
  (ExportedSnapshotGone); a chunk already committed is still reported as such; a resumed plan's task reads a fresh
  snapshot while its slot is at the plan's LSN and refuses once the slot moved (in process, real server and Kafka).
- A plan whose chunks went to self-committing tasks, stopped and resumed with threads: the threads commit like
  tasks, in a new snapshot, each row once.
- The pipeline's worker killed (-9) while its chunk tasks wait in the queue: those tasks find the snapshot gone and
  write nothing; the restarted pipeline resumes the plan, its tasks read the chunks in a new snapshot, and every
  row is read once.
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time

import psycopg2.extensions
import pytest
import redis

from connectors.core.snapshot.chunks import Chunk
from connectors.core.snapshot.executors import ChunkTaskFailed, ChunkTaskLost
from connectors.core.snapshot.markers import ChunkMarkers
from connectors.postgres import chunk_tasks
from connectors.postgres.config import PostgresConfig
from connectors.postgres.replication import ReplicationStream
from connectors.postgres.snapshot import ExportedSnapshotGone, PgChunkTask, ReadPoint
from connectors.postgres.source import Database, SlotSource
from connectors.runner import ConnectorRunner
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import topic_exists
from tests.platform_processes import Platform
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration]

REDIS_DB = 5  # apart from a running demo (0) and the other process tests (6-15)
PG_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
ROWS = 2000
CHUNK = 100


def properties(pg_db, name: str) -> dict:
    dsn = psycopg2.extensions.parse_dsn(pg_db.dsn)
    return {"name": name, "topic.prefix": name, "connector.class": PG_CLASS, "database.hostname": dsn["host"],
            "database.port": int(dsn["port"]), "database.user": dsn["user"], "database.password": dsn["password"],
            "database.dbname": pg_db.name, "slot.name": f"s_{name}", "offset.storage.topic": f"{name}.offsets",
            "poll.interval.ms": 50, "publication.autocreate.mode": "filtered", "table.include.list": "public.items",
            "snapshot.chunk.size": CHUNK, "snapshot.max.threads": 2, "topic.creation.default.partitions": 1}


def events(bootstrap: str, topic: str) -> list[dict]:
    """Every committed event's envelope, in order ([] while the topic does not exist)."""
    if not topic_exists(bootstrap, topic):
        return []
    values = [json.loads(r.value) for r in read_topic(bootstrap, topic, stable_only=True) if r.value is not None]
    return [value.get("payload", value) for value in values]


def events_after_commit(bootstrap: str, topic: str, count: int) -> list[dict]:
    """`events` once at least `count` are readable: a transaction's commit returns before the broker has written its
    markers into the topic's partitions, and only then do read_committed readers see its events."""
    def enough() -> list[dict] | None:
        found = events(bootstrap, topic)
        return found if len(found) >= count else None

    return wait_for(enough, 30, f"{count} committed events on {topic}")


def replayed(envelopes: list[dict]) -> dict[int, int]:
    """{id: v} a consumer builds by applying the events in order."""
    state: dict[int, int] = {}
    for envelope in envelopes:
        if envelope["op"] == "d":
            state.pop(envelope["before"]["id"], None)
        else:
            state[envelope["after"]["id"]] = envelope["after"]["v"]
    return state


def table_state(pg_db) -> dict[int, int]:
    return dict(pg_db.execute("SELECT id, v FROM items"))


def seed(pg_db) -> None:
    pg_db.execute("CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL)")
    pg_db.execute("INSERT INTO items SELECT g, 0 FROM generate_series(1, %s) g", (ROWS,))


def write_after_the_consistent_point(pg_db) -> None:
    """Updates in every chunk, two deletes and 50 inserts, in three transactions."""
    pg_db.execute("UPDATE items SET v = v + 1 WHERE id % 7 = 0")
    pg_db.execute("DELETE FROM items WHERE id IN (5, 1500)")
    pg_db.execute("INSERT INTO items SELECT g, 1 FROM generate_series(%s, %s) g", (ROWS + 1, ROWS + 50))


def chunks_read(platform: Platform, label: str, name: str) -> int:
    return len(re.findall(rf"snapshot chunk of {name}/\S+: \d+ rows on \S+$", platform.log(label), re.MULTILINE))


@pytest.fixture
def platform(pg_db, stack, tmp_path):  # after pg_db: stopped before its database is dropped
    processes = Platform.with_snapshot_queue(stack, tmp_path, REDIS_DB)
    yield processes
    processes.stop()


def test_chunk_tasks_read_in_the_exported_snapshot_with_writes_during_the_snapshot(platform, pg_db, stack,
                                                                                   unique_name):
    name = "pgc" + unique_name.replace("-", "")[-12:]
    seed(pg_db)
    platform.create_connector(properties(pg_db, name))
    # Sent once the slot (with its exported snapshot) exists and the plan is committed; no worker reads them yet.
    platform.wait_for(lambda: f"snapshot chunks of {name}/{pg_db.name} sent to the 'snapshot' queue"
                      in platform.log("streamer"), 90, "chunk tasks on the snapshot queue", "streamer")
    write_after_the_consistent_point(pg_db)
    platform.start_worker("snap", queues="snapshot", concurrency=2)

    topic = f"{name}.public.items"
    expected = table_state(pg_db)
    envelopes = platform.wait_for(lambda: (found := events(stack.kafka_bootstrap, topic))
                                  and replayed(found) == expected and found, 120,
                                  "the snapshot and the writes made during it", "snap")
    reads = [e for e in envelopes if e["op"] == "r"]
    assert sorted(e["after"]["id"] for e in reads) == list(range(1, ROWS + 1)), "rows lost or read twice"
    assert {e["after"]["v"] for e in reads} == {0}, "a chunk was not read in the exported snapshot"
    assert reads[-1]["source"]["snapshot"] == "last"
    changes = envelopes[len(reads):]
    assert all(e["op"] != "r" for e in changes), "a snapshot event after the stream's first"
    updated = sorted(e["after"]["id"] for e in changes if e["op"] == "u")
    assert updated == [i for i in range(1, ROWS + 1) if i % 7 == 0], "updates lost or repeated"
    assert sorted(e["before"]["id"] for e in changes if e["op"] == "d") == [5, 1500]
    assert sorted(e["after"]["id"] for e in changes if e["op"] == "c") == list(range(ROWS + 1, ROWS + 51))

    planned = int(re.search(r"public\.items planned as (\d+) chunks", platform.log("streamer")).group(1))
    assert planned == ROWS // CHUNK and chunks_read(platform, "snap", name) == planned - 1  # the coordinator: last
    assert "(in the exported snapshot)" in platform.log("snap")

    pg_db.execute("UPDATE items SET v = 42 WHERE id = 1")
    platform.wait_for(lambda: replayed(events(stack.kafka_bootstrap, topic)).get(1) == 42, 60,
                      "the stream after the snapshot", "streamer")


def test_a_killed_pipeline_leaves_chunk_tasks_that_write_nothing_and_its_successor_resumes_the_plan(
        platform, pg_db, stack, unique_name):
    name = "pgk" + unique_name.replace("-", "")[-12:]
    seed(pg_db)
    platform.create_connector(properties(pg_db, name))
    broker = redis.Redis.from_url(platform.env["REDIS_URL"])
    platform.wait_for(lambda: broker.llen("snapshot") == 2, 90, "both chunk tasks in the broker's snapshot queue",
                      "streamer")  # capacity: snapshot.max.threads x 1 (no snapshot worker seen)
    write_after_the_consistent_point(pg_db)
    streamer = platform.processes["streamer"]
    streamer.send_signal(signal.SIGKILL)  # its pipeline process dies with it, and the exported snapshot with that
    streamer.wait()
    platform.wait_for(lambda: pg_db.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                                            (f"s_{name}",)) == [(False,)], 30, "the exporting connection to close")

    platform.start_worker("snap", queues="snapshot", concurrency=2)
    gone = platform.wait_for(
        lambda: len(found := re.findall(r"failed on \S+ \(fatal\): ExportedSnapshotGone", platform.log("snap"))) >= 2
        and found, 60, "the dead pipeline's chunk tasks to find its snapshot gone", "snap")
    assert len(gone) == 2
    topic = f"{name}.public.items"
    assert not [e for e in events(stack.kafka_bootstrap, topic) if e["op"] == "r"], "a task of the dead pipeline wrote"

    platform.start_worker("streamer-2", queues="streaming,default", concurrency=2)
    expected = table_state(pg_db)
    envelopes = platform.wait_for(lambda: (found := events(stack.kafka_bootstrap, topic))
                                  and replayed(found) == expected and found, 180,
                                  "the resumed snapshot and the stream", "streamer-2")
    reads = [e for e in envelopes if e["op"] == "r"]
    read_ids = sorted(e["after"]["id"] for e in reads)
    assert read_ids == sorted(set(read_ids)), "a row read twice"
    # a new snapshot of the plan's ranges: rows deleted before it are not in it; rows inserted beyond the plan's last
    # key arrive through the stream only
    assert set(read_ids) == set(range(1, ROWS + 1)) - {5, 1500}, "rows lost"
    assert "resumed" in platform.log("streamer-2") and "(in the resumed snapshot's export)" in platform.log("snap")
    # every chunk was read in the resumed snapshot's export, after the writes: the stream drops what they hold and
    # brings only the inserts past the plan, once each
    changes = [e for e in envelopes if e["op"] != "r"]
    assert [e["op"] for e in changes] == ["c"] * 50, "a change the resumed chunks hold came again"
    assert sorted(e["after"]["id"] for e in changes) == list(range(ROWS + 1, ROWS + 51))


def test_a_chunk_task_reads_only_in_its_snapshot(pg_db, stack, unique_name):
    name = "pgt" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL)")
    pg_db.execute("INSERT INTO items SELECT g, 0 FROM generate_series(1, 10) g")
    pg_db.execute("CREATE PUBLICATION p_items FOR TABLE items")
    config = PostgresConfig.from_properties({**properties(pg_db, name), "publication.name": "p_items"})
    bootstrap, topic = stack.kafka_bootstrap, f"{name}.public.items"
    exporting = ReplicationStream(config.dsn(), config.slot_name, [config.publication_name])
    created = exporting.create_slot(export_snapshot=True)
    pg_db.execute("UPDATE items SET v = 1")  # after the consistent point

    def task(number: int, exported: str | None) -> PgChunkTask:
        point = ReadPoint(time.time_ns() // 1000, created.consistent_point, exported)
        return PgChunkTask(name, pg_db.name, "snap-1", Chunk("public.items", 0, number, None, None, True, 10), point)

    def run(chunk_task: PgChunkTask):
        builder = SlotSource(config, Database(pg_db.name)).event_builder()
        try:
            return chunk_tasks.run_chunk_task(config, bootstrap, chunk_task, builder)
        finally:
            builder.close()

    try:
        first = run(task(0, created.snapshot_name))
        assert first.rows == 10 and not first.already_committed
        # the exported snapshot's state
        assert [e["after"]["v"] for e in events_after_commit(bootstrap, topic, 10)] == [0] * 10
    finally:
        exporting.close()  # the exported snapshot dies with its connection

    with pytest.raises(ExportedSnapshotGone) as gone:
        run(task(1, created.snapshot_name))
    assert not chunk_tasks.chunk_error_retriable(gone.value)
    assert run(task(0, created.snapshot_name)).already_committed  # committed before: no import needed
    markers = ChunkMarkers(bootstrap, config.offset_storage_topic).load(name, pg_db.name, "snap-1")
    assert sorted(markers) == [0] and len(events(bootstrap, topic)) == 10, "the refused task wrote"

    resumed = run(task(1, None))  # the plan says resumed: a new snapshot, while the slot is at the plan's LSN
    assert resumed.rows == 10
    assert [e["after"]["v"] for e in events_after_commit(bootstrap, topic, 20)][10:] == [1] * 10
    assert all(e["source"]["lsn"] == created.consistent_point for e in events(bootstrap, topic))

    wait_for(lambda: pg_db.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                                   (config.slot_name,)) == [(False,)], 30, "the exporting walsender to end")
    pg_db.execute("SELECT pg_drop_replication_slot(%s)", (config.slot_name,))  # a new snapshot would recreate it
    with pytest.raises(chunk_tasks.SnapshotSuperseded):
        run(task(2, None))
    assert len(events(bootstrap, topic)) == 20

    # the coordinator's side: a lost or passing failure is sent again, the snapshot gone fails the run
    reader = SlotSource(config, Database(pg_db.name)).snapshot_reader()
    chunk = task(3, None).chunk
    assert reader.chunk_failure(ChunkTaskLost("lost"), chunk, remote=True) is None
    assert reader.chunk_failure(ChunkTaskFailed("OperationalError: x", True), chunk, remote=True) is None
    fatal = ChunkTaskFailed(f"ExportedSnapshotGone: {gone.value}", False)
    assert reader.chunk_failure(fatal, chunk, remote=True) is fatal


def test_a_resumed_plan_whose_chunks_went_to_tasks_is_read_by_self_committing_threads(pg_db, stack, unique_name,
                                                                                      monkeypatch):
    """Chunks committed by self-committing tasks (in process here: `chunk_tasks.self_committing_executor`, what a
    Celery task runs) until the run stops after two; rows changed while stopped; the restart reads the rest in
    threads, which must commit like tasks (a task of the first run may still be alive): in a new snapshot, each row
    once, and the stream brings the state up to date."""
    name = "pgr" + unique_name.replace("-", "")[-12:]
    seed(pg_db)
    config = PostgresConfig.from_properties({**properties(pg_db, name), "snapshot.max.threads": 1})
    bootstrap, topic = stack.kafka_bootstrap, f"{name}.public.items"
    original = SlotSource.offset_record
    stop = threading.Event()

    def offset_record(self, position, **kwargs):
        snapshot = kwargs.get("snapshot")
        if snapshot and snapshot["collections"] and snapshot["collections"][0]["done"].count("1") == 2:
            stop.set()
        return original(self, position, **kwargs)

    monkeypatch.setattr(SlotSource, "offset_record", offset_record)
    first = ConnectorRunner(config, bootstrap, stop, chunk_executor=chunk_tasks.self_committing_executor)
    assert first.run() == {pg_db.name: "stopped"}
    monkeypatch.undo()
    before = events(bootstrap, topic)
    assert 2 * CHUNK <= len(before) < ROWS and {e["source"]["snapshot"] for e in before} <= {"first", "true"}
    assert {e["after"]["v"] for e in before} == {0}
    write_after_the_consistent_point(pg_db)

    stop = threading.Event()
    second = ConnectorRunner(config, bootstrap, stop)  # threads: the coordinator makes them self-committing
    thread = threading.Thread(target=second.run, daemon=True)
    thread.start()
    try:
        expected = table_state(pg_db)
        envelopes = wait_for(lambda: (found := events(bootstrap, topic)) and replayed(found) == expected and found,
                             120, "the resumed snapshot and the stream")
    finally:
        stop.set()
        thread.join(60)
    assert not second.errors, second.errors
    read_ids = [e["after"]["id"] for e in envelopes if e["op"] == "r"]
    assert len(read_ids) == len(set(read_ids)), "a row read twice"
    assert set(range(1, ROWS + 1)) - {5, 1500} <= set(read_ids), "rows lost"
    resumed = [e for e in envelopes[len(before):] if e["op"] == "r"]
    assert any(e["after"]["v"] == 1 for e in resumed), "the resumed chunks were not read in a new snapshot"
