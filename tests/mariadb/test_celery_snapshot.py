"""MariaDB initial-snapshot chunks read by Celery tasks on the `snapshot` queue, each in a read view of its own
(connectors/mysql/chunk_tasks.py), and the stream from the pipeline's position dropping what those chunks already
hold (connectors/mysql/overlap.py), against the real server, Kafka and Celery workers (tests/platform_processes.py).

Every row has a version `v` that each update increments, so a consumer can tell an older state from a newer one.
Writes are made after the chunk tasks are queued and before the snapshot worker starts (updates, deletes, inserts
inside the chunks' ranges and beyond the last one, key changes into and out of the ranges), and go on while the
tasks read: for every key the events' `after` states only move forward (no regress, nothing twice), every row is
read once, the topic converges on the table, the stream goes on and its filter leaves the offset record. A
string-keyed table is read in the pipeline's own view. The pipeline killed (-9) with its chunk tasks queued: the
tasks commit their chunks (marker and read position), the restarted pipeline resumes the plan with them. In
process: the filter is stored with the snapshot's position, and a pipeline started again before its stream
passed the chunks' positions filters the same way (its whole window is replayed after the restart).
"""

from __future__ import annotations

import json
import random
import re
import signal
import threading

import pytest
import redis

from connectors.mysql import chunk_tasks
from connectors.mysql.position import OVERLAP_FIELD
from connectors.runner import ConnectorRunner
from connectors.sources import engine_config
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import topic_exists
from tests.platform_processes import Platform
from tests.topic_cleanup import tagged_suffix
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration]

REDIS_DB = 4  # apart from a running demo (0) and the other process tests (5-15)
SEEDED = list(range(2, 4001, 2))  # even keys: odd ones can be inserted inside the chunks' ranges (the plan: [2, 4000])
CHUNK = 100


def properties(mariadb, database: str, name: str) -> dict:
    return {"name": name, "topic.prefix": name, "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
            "database.hostname": mariadb.cdc.host, "database.port": mariadb.cdc.port,
            "database.user": mariadb.cdc.user, "database.password": mariadb.cdc.password,
            "database.server.id": random.randint(10_000, 4_000_000), "database.include.list": database,
            "offset.storage.topic": f"{name}.offsets", "poll.interval.ms": 50, "snapshot.chunk.size": CHUNK,
            "snapshot.max.threads": 2, "topic.creation.default.partitions": 1}


def events(bootstrap: str, topic: str) -> list[dict]:
    """Every committed event's envelope, in order ([] while the topic does not exist)."""
    if not topic_exists(bootstrap, topic):
        return []
    values = [json.loads(r.value) for r in read_topic(bootstrap, topic, stable_only=True) if r.value is not None]
    return [value.get("payload", value) for value in values]


def replayed(envelopes: list[dict], key: str = "id") -> dict:
    """{key: v} a consumer builds by applying the events in order."""
    state: dict = {}
    for envelope in envelopes:
        if envelope["op"] == "d":
            state.pop(envelope["before"][key], None)
        else:
            state[envelope["after"][key]] = envelope["after"]["v"]
    return state


def regressions(envelopes: list[dict], key: str = "id") -> list[str]:
    """Per key, events whose state is not newer than the one before (v must grow; a delete ends the row and only
    a create may follow it)."""
    last: dict = {}
    found = []
    for envelope in envelopes:
        row = envelope["before"] if envelope["op"] == "d" else envelope["after"]
        k = row[key]
        if envelope["op"] == "d":
            if k not in last or last[k] is None:
                found.append(f"delete of {k} the consumer never saw")
            last[k] = None
            continue
        previous = last.get(k, "absent")
        if envelope["op"] in ("r", "c"):
            if previous not in ("absent", None):
                found.append(f"{envelope['op']} of {k} at v={row['v']} after v={previous}")
        elif previous in ("absent", None) or row["v"] <= previous:
            found.append(f"u of {k} to v={row['v']} after {previous}")
        last[k] = row["v"]
    return found


def table_state(mariadb, database: str, table: str = "items", key: str = "id") -> dict:
    return dict(mariadb.execute(f"SELECT `{key}`, v FROM `{table}`", database=database))  # noqa: S608 - test names


def seed(mariadb, database: str) -> None:
    mariadb.execute("CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL)",
                    "INSERT INTO items SELECT seq, 0 FROM seq_2_to_4000_step_2",
                    "CREATE TABLE tags (name varchar(20) PRIMARY KEY, v int NOT NULL)",
                    "INSERT INTO tags VALUES ('a', 0), ('b', 0), ('c', 0)", database=database)


def write_before_the_chunks_are_read(mariadb, database: str, tags: bool = True) -> None:
    """Updates in every chunk, deletes, inserts inside the ranges and beyond the last one, key changes."""
    statements = [
        "UPDATE items SET v = v + 1 WHERE id % 7 = 0",
        "DELETE FROM items WHERE id IN (6, 1500, 3998)",
        "INSERT INTO items SELECT seq, 1 FROM seq_1_to_4000 WHERE seq % 50 = 1",
        "INSERT INTO items SELECT seq, 1 FROM seq_4001_to_4050",
        "FLUSH BINARY LOGS",  # the chunks' positions are in a later binlog file than the stream's start
        "UPDATE items SET v = v + 1 WHERE id % 3 = 0",
        "UPDATE items SET id = 4100, v = v + 1 WHERE id = 10",  # out of the ranges
        "UPDATE items SET id = 11, v = v + 1 WHERE id = 3000",  # into another chunk's range
    ]
    if tags:
        statements.append("UPDATE tags SET v = v + 1 WHERE name = 'b'")
    for statement in statements:
        mariadb.execute(statement, database=database)


class Writer(threading.Thread):
    """Increments the version of random rows, one transaction each, until stopped."""

    def __init__(self, mariadb, database: str):
        super().__init__(daemon=True)
        self.mariadb, self.database = mariadb, database
        self.stopped = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        rng = random.Random(7)
        try:
            while not self.stopped.is_set():
                ids = ",".join(str(rng.randrange(1, 4001)) for _ in range(5))
                self.mariadb.execute(f"UPDATE items SET v = v + 1 WHERE id IN ({ids})",  # noqa: S608 - numbers
                                     database=self.database)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error

    def stop(self) -> None:
        self.stopped.set()
        self.join(30)
        assert self.error is None, self.error


def stored_offset(bootstrap: str, name: str) -> dict:
    records = [r for r in read_topic(bootstrap, f"{name}.offsets", stable_only=True) if r.value is not None]
    return json.loads(records[-1].value)


def chunks_read(platform: Platform, label: str, name: str) -> int:
    return len(re.findall(rf"snapshot chunk of {name}/\S+: \d+ rows on \S+$", platform.log(label), re.MULTILINE))


def converged(platform: Platform, mariadb, database: str, bootstrap: str, name: str, writer: Writer,
              label: str) -> list[dict]:
    """Once the snapshot completed (the tags table is its last), stops the writer and waits for the items topic to
    converge on the table; checks no key's state went back or came twice and every row was read once; returns the
    items topic's envelopes. `label`: the worker whose log a failed wait shows."""
    tags_topic = f"{name}.{database}.tags"
    platform.wait_for(lambda: any(e["source"].get("snapshot") == "last" for e in events(bootstrap, tags_topic)),
                      180, "the snapshot to complete", label)
    writer.stop()
    expected = table_state(mariadb, database)
    envelopes = platform.wait_for(lambda: (found := events(bootstrap, f"{name}.{database}.items"))
                                  and replayed(found) == expected and found, 120, "the topic to converge on the table",
                                  label)
    assert regressions(envelopes) == [], "a key's state went back or came twice"
    read_ids = [e["after"]["id"] for e in envelopes if e["op"] == "r"]
    assert sorted(read_ids) == sorted(k for k in expected if 2 <= k <= 4000), "rows lost or read twice"
    return envelopes


@pytest.fixture
def platform(mariadb, stack, tmp_path):
    processes = Platform.with_snapshot_queue(stack, tmp_path, REDIS_DB)
    yield processes
    processes.stop()


def test_chunk_tasks_read_in_views_of_their_own_and_the_stream_keeps_every_key_in_order(platform, mariadb,
                                                                                       mariadb_db, stack,
                                                                                       unique_name):
    name = "mdc" + unique_name.replace("-", "")[-12:]
    seed(mariadb, mariadb_db)
    platform.create_connector(properties(mariadb, mariadb_db, name))
    platform.wait_for(lambda: f"snapshot chunks of {name}/{name} sent to the 'snapshot' queue"
                      in platform.log("streamer"), 90, "chunk tasks on the snapshot queue", "streamer")
    write_before_the_chunks_are_read(mariadb, mariadb_db)
    writer = Writer(mariadb, mariadb_db)
    writer.start()
    platform.start_worker("snap", queues="snapshot", concurrency=2)
    topic, tags_topic = f"{name}.{mariadb_db}.items", f"{name}.{mariadb_db}.tags"
    bootstrap = stack.kafka_bootstrap
    envelopes = converged(platform, mariadb, mariadb_db, bootstrap, name, writer, "snap")
    expected = table_state(mariadb, mariadb_db)
    reads = [e for e in envelopes if e["op"] == "r"]
    assert all(e["op"] != "r" for e in envelopes[len(reads):]), "a snapshot event after the stream's first"
    assert {e["after"]["id"] for e in envelopes if e["op"] == "c"} >= {1, *range(4001, 4051), 4100}  # outside the plan
    positions = {(e["source"]["file"], e["source"]["pos"]) for e in reads}
    assert len(positions) > 1, "every chunk was read at one position: the test did not read in views of their own"
    start_file = re.search(r"streaming from (\S+):\d+ drops the changes", platform.log("streamer")).group(1)  # P0
    assert all(file > start_file for file, _ in positions), "a rotation between P0 and the chunks' positions"
    assert {e["source"]["file"] for e in events(bootstrap, tags_topic) if e["op"] == "r"} == {start_file}

    planned = int(re.search(rf"{mariadb_db}\.items planned as (\d+) chunks", platform.log("streamer")).group(1))
    assert planned == len(SEEDED) // CHUNK and chunks_read(platform, "snap", name) == planned
    assert "(in a view of its own at" in platform.log("snap")
    tags = events(bootstrap, tags_topic)  # one chunk, the snapshot's last: read by the pipeline in its view at P0
    assert [(e["op"], e["after"]["name"], e["after"]["v"]) for e in tags] == [
        ("r", "a", 0), ("r", "b", 0), ("r", "c", 0), ("u", "b", 1)]

    mariadb.execute("UPDATE items SET v = v + 1000 WHERE id = 2", database=mariadb_db)
    platform.wait_for(lambda: replayed(events(bootstrap, topic)).get(2) == expected[2] + 1000, 60,
                      "the stream after the snapshot", "streamer")
    assert OVERLAP_FIELD not in stored_offset(bootstrap, name), "the filter outlived the chunks' positions"


def test_a_killed_pipeline_with_chunk_tasks_queued_is_resumed_with_every_key_in_order(platform, mariadb, mariadb_db,
                                                                                     stack, unique_name):
    name = "mdk" + unique_name.replace("-", "")[-12:]
    seed(mariadb, mariadb_db)
    platform.create_connector(properties(mariadb, mariadb_db, name))
    broker = redis.Redis.from_url(platform.env["REDIS_URL"])
    # in flight: snapshot.max.threads x 1 (no snapshot worker seen) + 1 (the thread reading in the pipeline's view),
    # all integer-key chunks at first: three tasks
    platform.wait_for(lambda: broker.llen("snapshot") == 3, 90, "three chunk tasks in the broker's snapshot queue",
                      "streamer")
    write_before_the_chunks_are_read(mariadb, mariadb_db, tags=False)
    streamer = platform.processes["streamer"]
    streamer.send_signal(signal.SIGKILL)  # its pipeline process (and read view) dies with it
    streamer.wait()

    platform.start_worker("snap", queues="snapshot", concurrency=2)
    platform.wait_for(lambda: chunks_read(platform, "snap", name) >= 3, 60, "the dead pipeline's chunk tasks", "snap")
    writer = Writer(mariadb, mariadb_db)
    writer.start()
    platform.start_worker("streamer-2", queues="streaming,default", concurrency=2)
    bootstrap = stack.kafka_bootstrap
    converged(platform, mariadb, mariadb_db, bootstrap, name, writer, "streamer-2")
    tags_topic = f"{name}.{mariadb_db}.tags"
    assert "resumed" in platform.log("streamer-2")
    assert replayed(events(bootstrap, tags_topic), key="name") == table_state(mariadb, mariadb_db, "tags", "name")


def test_the_filter_is_stored_with_the_position_and_a_restart_in_its_window_keeps_every_key_in_order(
        mariadb, mariadb_db, stack):
    name = "mdr" + tagged_suffix()
    seed(mariadb, mariadb_db)
    props = properties(mariadb, mariadb_db, name)
    _, config = engine_config({**props, "snapshot.mode": "initial_only"})  # stops before the stream starts

    def own_views(context):
        # called once P0 and the plan are committed, before any chunk is read: every chunk is read after these
        write_before_the_chunks_are_read(mariadb, mariadb_db)
        return chunk_tasks.self_committing_executor(context)

    bootstrap = stack.kafka_bootstrap
    assert ConnectorRunner(config, bootstrap, threading.Event(), chunk_executor=own_views).run() == {
        name: "snapshot-done"}
    assert OVERLAP_FIELD in stored_offset(bootstrap, name), "the completed snapshot's position lacks its filter"
    mariadb.execute("UPDATE items SET v = v + 1 WHERE id % 5 = 0", database=mariadb_db)  # after every chunk

    _, config = engine_config({**props, "snapshot.mode": "initial"})
    stop = threading.Event()
    runner = ConnectorRunner(config, bootstrap, stop)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    topic = f"{name}.{mariadb_db}.items"
    try:
        expected = table_state(mariadb, mariadb_db)
        envelopes = wait_for(lambda: (found := events(bootstrap, topic)) and replayed(found) == expected and found,
                             90, "the restarted stream to converge on the table")
    finally:
        stop.set()
        thread.join(60)
    assert not runner.errors
    assert regressions(envelopes) == [], "a key's state went back or came twice"
    read_ids = [e["after"]["id"] for e in envelopes if e["op"] == "r"]
    assert sorted(read_ids) == sorted(k for k in expected if 2 <= k <= 4000), "rows lost or read twice"
    assert OVERLAP_FIELD not in stored_offset(bootstrap, name), "the filter outlived the chunks' positions"
