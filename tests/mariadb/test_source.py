"""The MySQL/MariaDB source through the real core, a real MariaDB and real Kafka: snapshot under concurrent writes,
streaming, restart, kill -9 under load, purged binlog, failed checks. Every test replays the topic as a
read_committed consumer and checks the chain of events per key: an insert or read only when the key is absent, an
update's or delete's `before` equal to the state the topic had built, the final state equal to the table's. A
duplicate or a gap breaks the chain."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from connectors import ConnectorError
from connectors.mysql.binlog import BinlogPosition
from connectors.mysql.connection import connect
from connectors.runner import ConnectorRunner
from connectors.sources import engine_config
from devstack import settings as devstack_settings
from tests.integration.kafka_reading import read_topic
from tests.mariadb.binlog_reading import binlog_status
from tests.topic_cleanup import tagged_suffix
from tests.type_check import records_at_least

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP = devstack_settings.kafka_bootstrap()  # what the `stack` fixture gives, port overrides included


def properties(mariadb, database: str, **extra) -> dict:
    tag = tagged_suffix()
    return {
        "name": f"my-{tag}", "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "database.hostname": mariadb.cdc.host, "database.port": str(mariadb.cdc.port),
        "database.user": mariadb.cdc.user, "database.password": mariadb.cdc.password,
        "database.server.id": str(random.randint(10_000, 4_000_000)), "topic.prefix": f"my{tag}",
        "database.include.list": database, "offset.storage.topic": f"my{tag}.offsets",
        "offset.storage.partitions": "1", "value.converter.schemas.enable": "false",
        "key.converter.schemas.enable": "false", "poll.interval.ms": "100", "connect.backoff.initial.delay.ms": "200",
        **extra,
    }


def table_rows(mariadb, database: str) -> dict[int, dict]:
    rows = mariadb.execute("SELECT id, v, s FROM t ORDER BY id", database=database)
    return {r[0]: {"id": r[0], "v": r[1], "s": r[2]} for r in rows}


def replay(props: dict, database: str) -> tuple[dict[int, dict], dict[str, int]]:
    """The state a read_committed consumer builds from the topic, checking the chain of every key."""
    topic = f"{props['topic.prefix']}.{database}.t"
    state: dict[int, dict] = {}
    ops: dict[str, int] = {}
    try:
        records = read_topic(BOOTSTRAP, topic)
    except KeyError:
        return state, ops
    for record in records:
        key = json.loads(record.key)["id"]
        if record.value is None:
            assert key not in state, f"tombstone of {key} while it exists"
            continue
        event = json.loads(record.value)
        op = event["op"]
        ops[op] = ops.get(op, 0) + 1
        if op in ("r", "c"):
            assert key not in state, f"{op} of {key} while it exists (duplicate): {event}"
            state[key] = event["after"]
        elif op == "u":
            assert state.get(key) == event["before"], f"update of {key} from {event['before']}, topic had " \
                                                      f"{state.get(key)} (gap or duplicate)"
            state[key] = event["after"]
        else:
            assert state.get(key) == event["before"], f"delete of {key}: {event['before']} vs {state.get(key)}"
            del state[key]
    return state, ops


def wait_caught_up(mariadb, props, database, timeout=90.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    expected = table_rows(mariadb, database)
    while True:
        state, ops = replay(props, database)
        if state == expected:
            return ops
        assert time.monotonic() < deadline, f"topic never caught up: {len(state)} rows vs {len(expected)}"
        time.sleep(0.5)


class Writer(threading.Thread):
    """Random inserts, updates and deletes in small transactions (and now and then one of `big` rows)."""

    def __init__(self, mariadb, database: str, start_id: int, big: int = 0, seed: int = 1):
        super().__init__(daemon=True)
        self.mariadb, self.database, self.next_id, self.big = mariadb, database, start_id, big
        self.random = random.Random(seed)
        self.stop = threading.Event()
        self.transactions = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        connection = connect(self.mariadb.admin.with_database(self.database), autocommit=False)
        try:
            while not self.stop.is_set():
                with connection.cursor() as cursor:
                    if self.big and self.transactions % 10 == 5:
                        cursor.execute("UPDATE t SET v = v + 1 ORDER BY id LIMIT %s", (self.big,))
                    for _ in range(self.random.randint(1, 4)):
                        action = self.random.random()
                        if action < 0.4:
                            cursor.execute("INSERT INTO t VALUES (%s, %s, %s)", (self.next_id, 0, "new"))
                            self.next_id += 1
                        elif action < 0.8:
                            cursor.execute("UPDATE t SET v = v + 1, s = %s WHERE id = %s",
                                           (f"u{self.transactions}", self.random.randrange(self.next_id)))
                        else:
                            cursor.execute("DELETE FROM t WHERE id = %s", (self.random.randrange(self.next_id),))
                connection.commit()
                self.transactions += 1
                time.sleep(0.005)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error
        finally:
            connection.close()

    def finish(self) -> None:
        self.stop.set()
        self.join(30)
        assert self.error is None, self.error


def fill(mariadb, database: str) -> str:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))", database=database)
    values = ", ".join(f"({i}, 0, 's{i}')" for i in range(1000))
    mariadb.execute(f"INSERT INTO t VALUES {values}", database=database)  # noqa: S608 - literal numbers
    return database


@pytest.fixture
def filled(mariadb, mariadb_db):
    return fill(mariadb, mariadb_db)


class InProcess:
    def __init__(self, props: dict):
        _, self.config = engine_config(props)
        self.stop = threading.Event()
        self.runner = ConnectorRunner(self.config, BOOTSTRAP, self.stop)
        self.thread = threading.Thread(target=self.runner.run, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(60)
        assert not self.thread.is_alive()


def test_snapshot_under_writes_then_streaming_and_restart(mariadb, filled):
    props = properties(mariadb, filled, **{"snapshot.chunk.size": "100", "max.batch.size": "50"})
    writer = Writer(mariadb, filled, 1000)
    writer.start()
    runner = InProcess(props)
    try:
        while writer.transactions < 200:  # writes during the snapshot and after it
            assert writer.is_alive()
            time.sleep(0.05)
    finally:
        writer.finish()
    ops = wait_caught_up(mariadb, props, filled)
    assert ops.get("r", 0) > 900 and ops.get("u", 0) > 0 and ops.get("c", 0) > 0 and ops.get("d", 0) > 0
    runner.close()
    # stopped: changes made now are read after the restart, from the stored GTID position
    mariadb.execute("UPDATE t SET v = v + 100 WHERE id < 50", "DELETE FROM t WHERE id BETWEEN 50 AND 59",
                    database=filled)
    runner = InProcess(props)
    try:
        after = wait_caught_up(mariadb, props, filled)
    finally:
        runner.close()
    assert after["r"] == ops["r"]  # no second snapshot


def test_events_and_offset_layout(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))", database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"snapshot.mode": "no_data", "value.converter.schemas.enable": "true",
                                               "key.converter.schemas.enable": "true",
                                               "heartbeat.interval.ms": "100", "include.query": "true"})
    runner = InProcess(props)
    try:
        topic = f"{props['topic.prefix']}.{mariadb_db}.t"
        deadline = time.monotonic() + 60
        # the first heartbeat commits the reader's position: streaming from "now" has begun
        while not read_topic(BOOTSTRAP, props["offset.storage.topic"]):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        mariadb.execute("INSERT INTO t VALUES (1, 5, 'x')", "DELETE FROM t WHERE id = 1", database=mariadb_db)
        deadline = time.monotonic() + 60
        while True:
            try:
                records = read_topic(BOOTSTRAP, topic)
            except KeyError:
                records = []
            if len(records) >= 3:
                break
            assert time.monotonic() < deadline
            time.sleep(0.3)
    finally:
        runner.close()
    # the bytes the sink counted (the builder's count of its events, the sink's of the heartbeats) are those written
    written = [*read_topic(BOOTSTRAP, topic), *read_topic(BOOTSTRAP, f"__debezium-heartbeat.{props['topic.prefix']}")]
    assert sum(metrics["sink"]["bytes"] for metrics in runner.runner.metrics().values()) == sum(
        len(record.key or b"") + len(record.value or b"") for record in written)
    create, delete, tombstone = records
    key = json.loads(create.key)
    assert key["schema"]["name"] == f"{topic}.Key" and key["payload"] == {"id": 1}
    value = json.loads(create.value)
    assert value["schema"]["name"] == f"{topic}.Envelope" and value["schema"]["version"] == 2
    assert [f["field"] for f in value["schema"]["fields"]] == ["before", "after", "source", "transaction", "op",
                                                               "ts_ms", "ts_us", "ts_ns"]  # Debezium's order
    payload = value["payload"]
    assert payload["op"] == "c" and payload["before"] is None and payload["after"] == {"id": 1, "v": 5, "s": "x"}
    source = payload["source"]
    assert source["connector"] == "mariadb" and source["db"] == mariadb_db and source["table"] == "t"
    assert source["gtid"] and source["file"] and source["pos"] > 0 and source["row"] == 0
    assert source["query"] == "INSERT INTO t VALUES (1, 5, 'x')"
    assert json.loads(delete.value)["payload"]["op"] == "d" and tombstone.value is None
    offsets = read_topic(BOOTSTRAP, props["offset.storage.topic"])
    last = offsets[-1]
    assert json.loads(last.key) == [props["name"], {"server": props["topic.prefix"]}]
    stored = json.loads(last.value)
    assert {"file", "pos", "gtids", "event", "row", "ts_sec", "server_id"} <= set(stored)
    assert stored["gtids"] == binlog_status(mariadb).gtids
    beat = read_topic(BOOTSTRAP, f"__debezium-heartbeat.{props['topic.prefix']}")[0]
    assert json.loads(beat.key)["payload"] == {"serverName": props["topic.prefix"]}
    assert json.loads(beat.value)["schema"]["name"] == "io.debezium.connector.common.Heartbeat"


class _WritingWhenStreaming(ConnectorRunner):
    """Inserts a row from the pipeline's own thread the moment its phase becomes "streaming"."""

    def __init__(self, config, write):
        super().__init__(config, BOOTSTRAP, threading.Event())
        self.write = write

    def pipeline(self, partition, on_phase=None):
        return super().pipeline(partition, lambda phase: phase == "streaming" and self.write())


def test_a_change_written_when_the_phase_shows_streaming_is_captured(mariadb, mariadb_db):
    """snapshot.mode=no_data streams from "now": that is the binlog's end when the reader is opened, before the
    phase shows "streaming", so a change committed then is in the topic (the reader used to take it later)."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))", database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"snapshot.mode": "no_data"})
    _, config = engine_config(props)
    written = threading.Event()

    def write():
        mariadb.execute("INSERT INTO t VALUES (7, 1, 'now')", database=mariadb_db)
        written.set()

    runner = _WritingWhenStreaming(config, write)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        assert written.wait(60), runner.errors
        ops = wait_caught_up(mariadb, props, mariadb_db, timeout=30)
    finally:
        runner.stop.set()
        thread.join(60)
    assert not runner.errors, runner.errors
    assert ops == {"c": 1}


@pytest.mark.slow
def test_kill9_under_load_exactly_once(mariadb, filled, tmp_path):
    """kill -9 of the runner process at random moments while a writer runs (with transactions larger than
    max.batch.size), restarts, and a read_committed replay is exactly the table, every change once in order."""
    props = properties(mariadb, filled, **{"snapshot.chunk.size": "200", "max.batch.size": "64"})
    path = tmp_path / "connector.json"
    path.write_text(json.dumps(props))
    log_path = tmp_path / "runner.log"
    writer = Writer(mariadb, filled, 1000, big=300, seed=7)
    chooser = random.Random(11)

    def start():
        with open(log_path, "ab") as log:
            return subprocess.Popen([sys.executable, "-m", "connectors", "run", str(path), "--bootstrap-servers",
                                     BOOTSTRAP], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)

    def started(count: int) -> None:
        """Waits for the count-th pipeline start in the log: each kill lands on a runner that has started."""
        deadline = time.monotonic() + 120
        while log_path.read_text().count(" starting: ") < count:
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.1)

    process = start()
    writer.start()
    try:
        for run in range(1, 5):
            started(run)
            time.sleep(chooser.uniform(0.5, 3.0))
            assert process.poll() is None, log_path.read_text()[-3000:]
            process.send_signal(signal.SIGKILL)
            process.wait(10)
            process = start()
    finally:
        writer.finish()
    try:
        ops = wait_caught_up(mariadb, props, filled, timeout=180)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    assert writer.transactions > 50 and ops.get("u", 0) > 300
    log = log_path.read_text()
    assert log.count("starting: resuming at") + log.count("starting: resuming the snapshot") >= 3, log[-3000:]


@pytest.fixture
def own_filled(own_mariadb, own_mariadb_db):
    return fill(own_mariadb, own_mariadb_db)


def test_purged_binlog_fails_clearly_and_when_needed_resnapshots(own_mariadb, own_filled):
    """Purges the binlogs of a server of the test's own (the shared one keeps its history)."""
    mariadb, filled = own_mariadb, own_filled
    props = properties(mariadb, filled)
    runner = InProcess(props)
    try:
        wait_caught_up(mariadb, props, filled)
    finally:
        runner.close()
    mariadb.execute("UPDATE t SET v = 7 WHERE id = 3", database=filled)
    mariadb.execute("FLUSH BINARY LOGS")
    current = binlog_status(mariadb).file
    deadline = time.monotonic() + 30
    # the server keeps a file a replica's dump thread still reads (the stopped reader's goes within seconds)
    while mariadb.execute(f"PURGE BINARY LOGS TO '{current}'", "SHOW BINARY LOGS")[0][0] != current:
        assert time.monotonic() < deadline, "the binlog could not be purged"
        time.sleep(0.2)
    mariadb.execute("UPDATE t SET v = 8 WHERE id = 4", database=filled)
    runner = InProcess(props)
    runner.thread.join(60)
    error = next(iter(runner.runner.errors.values()))
    assert "purged" in str(error) and "when_needed" in str(error)
    props["snapshot.mode"] = "when_needed"
    runner = InProcess(props)
    try:
        deadline = time.monotonic() + 90
        while True:
            records = read_topic(BOOTSTRAP, f"{props['topic.prefix']}.{filled}.t")
            reads = [json.loads(r.value) for r in records if r.value and json.loads(r.value)["op"] == "r"]
            latest = {e["after"]["id"]: e["after"] for e in reads}
            if len(reads) >= 2000 and latest.get(4, {}).get("v") == 8:
                break
            assert time.monotonic() < deadline
            time.sleep(0.5)
    finally:
        runner.close()


def test_missing_privileges_are_reported_before_anything_is_written(mariadb, filled):
    user = f"weak{uuid.uuid4().hex[:6]}"
    mariadb.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'", f"GRANT SELECT ON *.* TO '{user}'@'%'")
    try:
        props = properties(mariadb, filled, **{"database.user": user, "database.password": "pw"})
        runner = InProcess(props)
        runner.thread.join(60)
        error = str(next(iter(runner.runner.errors.values())))
        assert "REPLICATION" in error and "pw" not in error.replace(user, "")
        assert replay(props, filled) == ({}, {})  # no event written
        assert read_topic(BOOTSTRAP, props["offset.storage.topic"]) == []  # no offset either
    finally:
        mariadb.execute(f"DROP USER '{user}'@'%'")


def test_binlog_position_round_trip():
    position = BinlogPosition(file="mariadb-bin.000002", pos=345, gtids="0-1-9", event=2, row=1)
    assert BinlogPosition.from_offset(position.to_offset()) == position


def test_restart_inside_a_source_transaction_larger_than_a_batch(mariadb, filled, monkeypatch):
    """A 1000-row transaction with max.batch.size=64: stopped right after a batch that ends inside it (the offset's
    event/row say how much of it is in Kafka), restarted: every row's update exactly once."""
    from connectors.mysql.source import ServerSource

    props = properties(mariadb, filled, **{"max.batch.size": "64"})
    runner = InProcess(props)
    try:
        wait_caught_up(mariadb, props, filled)
        original = ServerSource.offset_record
        inside: list[dict] = []

        def offset_record(self, position, **kwargs):
            if position is not None and (position.binlog.event or position.binlog.row) and not inside:
                inside.append(position.binlog.to_offset())
                runner.stop.set()  # this batch is the last one committed
            return original(self, position, **kwargs)

        monkeypatch.setattr(ServerSource, "offset_record", offset_record)
        mariadb.execute("UPDATE t SET v = v + 1", database=filled)
        runner.thread.join(60)
    finally:
        runner.close()
    monkeypatch.undo()
    assert inside, "no batch ended inside the transaction"
    stored = json.loads(read_topic(BOOTSTRAP, props["offset.storage.topic"])[-1].value)
    assert (stored["event"], stored["row"]) == (inside[0]["event"], inside[0]["row"])
    state, ops = replay(props, filled)
    assert 0 < ops.get("u", 0) < 1000  # part of the transaction is in Kafka
    runner = InProcess(props)
    try:
        ops = wait_caught_up(mariadb, props, filled)
    finally:
        runner.close()
    assert ops["u"] == 1000


def test_ddl_mid_stream(mariadb, mariadb_db):
    """Columns added, dropped and retyped while streaming: rows after each ALTER carry the new schema, and each DDL
    is a schema change event on <topic.prefix> (include.schema.changes, Debezium's default)."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))",
                    "INSERT INTO t VALUES (1, 1, 'a')", database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"value.converter.schemas.enable": "true"})
    runner = InProcess(props)
    topic = f"{props['topic.prefix']}.{mariadb_db}.t"
    try:
        deadline = time.monotonic() + 60
        while not read_topic(BOOTSTRAP, topic):
            assert time.monotonic() < deadline
            time.sleep(0.3)
        mariadb.execute("ALTER TABLE t ADD COLUMN extra VARCHAR(5) NOT NULL DEFAULT 'z'",
                        "INSERT INTO t (id, v, s) VALUES (2, 2, 'b')",
                        "ALTER TABLE t DROP COLUMN s", "UPDATE t SET v = 3 WHERE id = 1",
                        "ALTER TABLE t MODIFY v BIGINT NOT NULL", "INSERT INTO t (id, v) VALUES (3, 5000000000)",
                        "CREATE TABLE t2 (k VARCHAR(3) PRIMARY KEY)", database=mariadb_db)
        while len(streamed_schema_changes(props)) < 4:  # t2 described while it exists
            assert time.monotonic() < deadline
            time.sleep(0.3)
        mariadb.execute("DROP TABLE t2", database=mariadb_db)
        while len(records := read_topic(BOOTSTRAP, topic)) < 4 or len(streamed_schema_changes(props)) < 5:
            assert time.monotonic() < deadline
            time.sleep(0.3)
        changes = read_topic(BOOTSTRAP, props["topic.prefix"])
    finally:
        runner.close()
    events = [json.loads(r.value) for r in records]

    def after_fields(event):
        return {f["field"]: f["type"] for f in event["schema"]["fields"][1]["fields"]}

    assert [e["payload"]["op"] for e in events] == ["r", "c", "u", "c"]
    assert after_fields(events[0]) == {"id": "int32", "v": "int32", "s": "string"}
    assert events[1]["payload"]["after"] == {"id": 2, "v": 2, "s": "b", "extra": "z"}
    assert after_fields(events[2]) == {"id": "int32", "v": "int32", "extra": "string"}
    assert events[3]["payload"]["after"] == {"id": 3, "v": 5000000000, "extra": "z"}
    assert after_fields(events[3])["v"] == "int64"
    payloads = [json.loads(r.value)["payload"] for r in changes]
    snapshot = [p for p in payloads if p["source"]["snapshot"] == "true" and p["databaseName"] == mariadb_db]
    assert snapshot[-1]["ddl"].startswith("CREATE TABLE `t`")
    values = [p for p in payloads if p["source"]["snapshot"] == "false"]
    assert [v["ddl"].split()[0].upper() for v in values] == ["ALTER", "ALTER", "ALTER", "CREATE", "DROP"]
    assert all(json.loads(r.key) == {"databaseName": p["databaseName"]} for r, p in zip(changes, payloads,
                                                                                      strict=True))  # key schemas off
    kinds = [[(c["type"], c["id"]) for c in v["tableChanges"]] for v in values]
    assert kinds[0] == [("ALTER", f'"{mariadb_db}"."t"')] and kinds[3] == [("CREATE", f'"{mariadb_db}"."t2"')]
    assert kinds[4] == [("DROP", f'"{mariadb_db}"."t2"')]
    assert values[3]["tableChanges"][0]["table"]["primaryKeyColumnNames"] == ["k"]
    assert values[4]["tableChanges"][0]["table"] is None  # as Debezium's
    assert values[0]["source"]["gtid"] and values[0]["source"]["db"] == mariadb_db
    assert values[4]["ddl"] == f"DROP TABLE `{mariadb_db}`.`t2`"  # one per table, rewritten as Debezium's parser


def streamed_schema_changes(props: dict) -> list:
    try:
        changes = read_topic(BOOTSTRAP, props["topic.prefix"])
    except KeyError:
        return []
    return [c for c in changes if json.loads(c.value)["payload"]["source"]["snapshot"] == "false"]


def run_until_two_chunks_are_committed(props: dict, monkeypatch) -> None:
    """Runs the connector until its snapshot has committed two chunks of its first table, then stops it."""
    from connectors.mysql.source import ServerSource

    original = ServerSource.offset_record
    stopped: list[str] = []

    def offset_record(self, position, **kwargs):
        snapshot = kwargs.get("snapshot")
        if snapshot and snapshot["collections"] and snapshot["collections"][0]["done"].count("1") == 2:
            stopped.append(snapshot["collections"][0]["done"])
            runner.stop.set()
        return original(self, position, **kwargs)

    monkeypatch.setattr(ServerSource, "offset_record", offset_record)
    runner = InProcess(props)
    runner.thread.join(60)
    runner.close()
    monkeypatch.undo()
    assert stopped and not runner.runner.errors


def test_snapshot_stopped_between_chunks_resumes_its_plan(mariadb, filled, monkeypatch):
    """Stopped once two of ten chunks are committed, with changes made while it is stopped: the restart keeps the
    plan and the stream position and reads the eight other chunks only, in a new view. The stream from the first
    view's position drops the changes those chunks already hold (their read positions are kept with them), so the
    topic's chain holds: every row read once, a row of a chunk read before the stop updated after its read, a row
    of a chunk read after it only read (in its new state, or not at all once deleted)."""
    props = properties(mariadb, filled, **{"snapshot.chunk.size": "100"})
    run_until_two_chunks_are_committed(props, monkeypatch)
    state, ops = replay(props, filled)
    assert 0 < ops["r"] < 1000
    unread = max(set(range(1000)) - set(state))
    changes = [f"UPDATE t SET v = 1, s = 'changed' WHERE id IN ({min(state)}, {unread})",  # noqa: S608 - numbers
               f"DELETE FROM t WHERE id = {unread - 1}",  # noqa: S608 - a number
               "INSERT INTO t VALUES (5000, 0, 'new')"]
    mariadb.execute(*changes, database=filled)
    runner = InProcess(props)
    try:
        ops = wait_caught_up(mariadb, props, filled)
    finally:
        runner.close()
    assert ops == {"r": 999, "u": 1, "c": 1}


def assert_resumed_chains(values: list[dict], field: str, read_first: set, first: int, gone: int) -> None:
    """The chains a resumed snapshot's topic gives each row (by `field`): ("r", 0), ("u", 1) for a row read before the
    stop (all rows were updated to 1 while stopped), ("r", 1) for one read after it, ("u", 2) more for `first`
    (updated after the restart); `gone`, deleted while stopped before its chunk was read, never seen."""
    chains: dict[int, list[tuple[str, int | None]]] = {}
    for value in values:
        chains.setdefault((value["after"] or value["before"])[field], []).append(
            (value["op"], value["after"] and value["after"]["v"]))
    assert gone not in chains, f"the delete of a row read after it came again: {chains.get(gone)}"
    assert len(chains) == 999
    for row, chain in chains.items():
        expected = [("r", 0), ("u", 1)] if row in read_first else [("r", 1)]
        if row == first:
            expected.append(("u", 2))
        assert chain == expected, (row, chain)


def test_a_resumed_snapshot_of_string_keys_gives_each_row_its_exact_chain(mariadb, mariadb_db, monkeypatch):
    """As above with a (VARCHAR under a case-insensitive collation, INT) key, whose order is not the bytes' (k0001 <
    K0001 < k0002): the server says which chunk read after the restart holds a changed key. Rows of those chunks
    keep only their read, rows read before the stop their read and their update; a row deleted while stopped is
    never seen."""
    mariadb.execute("CREATE TABLE a (code VARCHAR(10) COLLATE utf8mb4_unicode_ci, n INT, id INT NOT NULL UNIQUE, "
                    "v INT NOT NULL, PRIMARY KEY (code, n))", database=mariadb_db)
    values = ", ".join(f"('{'k' if g % 2 else 'K'}{g // 3:04d}', {g % 3}, {g}, 0)" for g in range(1000))
    mariadb.execute(f"INSERT INTO a VALUES {values}", database=mariadb_db)  # noqa: S608 - literals
    props = properties(mariadb, mariadb_db, **{"snapshot.chunk.size": "100"})
    topic = f"{props['topic.prefix']}.{mariadb_db}.a"
    run_until_two_chunks_are_committed(props, monkeypatch)
    read_first = {json.loads(r.value)["after"]["id"] for r in read_topic(BOOTSTRAP, topic)}
    assert 0 < len(read_first) < 1000
    gone = mariadb.execute(f"SELECT id FROM a WHERE id NOT IN ({', '.join(map(str, read_first))}) "  # noqa: S608
                           "ORDER BY code DESC, n DESC LIMIT 1", database=mariadb_db)[0][0]
    mariadb.execute("UPDATE a SET v = 1", f"DELETE FROM a WHERE id = {gone}", database=mariadb_db)  # noqa: S608
    first = min(read_first)
    runner = InProcess(props)
    try:
        deadline = time.monotonic() + 90
        mariadb.execute(f"UPDATE a SET v = 2 WHERE id = {first}", database=mariadb_db)  # noqa: S608 - a number
        while True:
            values = [json.loads(r.value) for r in read_topic(BOOTSTRAP, topic) if r.value is not None]
            if values and (values[-1]["after"] or {}).get("v") == 2:
                break
            assert time.monotonic() < deadline, "the update after the resumed snapshot never arrived"
            time.sleep(0.5)
    finally:
        runner.close()
    assert not runner.runner.errors
    assert_resumed_chains(values, "id", read_first, first, gone)


def test_binlog_connection_killed_under_load(mariadb, filled, caplog):
    """The server drops the connector's binlog connection (KILL of its dump thread) three times under write load:
    the reader reopens from the last change it queued, and the topic still holds every change once, in order."""
    user = f"rk{uuid.uuid4().hex[:6]}"
    mariadb.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'",
                    f"GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT, RELOAD, LOCK TABLES ON *.* TO '{user}'@'%'")
    props = properties(mariadb, filled, **{"database.user": user, "database.password": "pw",
                                           "max.batch.size": "64"})
    writer = Writer(mariadb, filled, 1000, big=200, seed=3)
    runner = InProcess(props)
    try:
        wait_caught_up(mariadb, props, filled)
        writer.start()
        killed = 0
        deadline = time.monotonic() + 60
        while killed < 3:
            assert time.monotonic() < deadline, "no binlog dump thread of the connector to kill"
            time.sleep(0.7)
            dumps = [row[0] for row in mariadb.execute("SHOW PROCESSLIST")
                     if row[1] == user and row[4] == "Binlog Dump"]
            for thread_id in dumps:
                mariadb.execute(f"KILL {thread_id}")
                killed += 1
        writer.finish()
        wait_caught_up(mariadb, props, filled)
    finally:
        writer.stop.set()
        runner.close()
        mariadb.execute(f"DROP USER '{user}'@'%'")
    assert not runner.runner.errors
    assert "reopening the binlog" in caplog.text


def test_snapshot_of_composite_text_keys_and_keyless_tables(mariadb, mariadb_db):
    """Chunks over a (VARCHAR, INT) primary key in the server's collation order, and a table without a key read
    whole: every row once."""
    mariadb.execute("CREATE TABLE c (a VARCHAR(5), b INT, v INT, PRIMARY KEY (a, b))",
                    "CREATE TABLE n (v INT)", database=mariadb_db)
    rows = [(a, b) for a in ("a", "B", "c", "é", "F") for b in range(4)]
    values = ", ".join(f"('{a}', {b}, {b})" for a, b in rows)
    mariadb.execute(f"INSERT INTO c VALUES {values}", "INSERT INTO n VALUES (1), (1), (2)",  # noqa: S608
                    database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"snapshot.chunk.size": "3", "snapshot.mode": "initial_only"})
    runner = InProcess(props)
    runner.thread.join(60)
    runner.close()
    assert not runner.runner.errors
    keys = [tuple(json.loads(r.key).values()) for r in read_topic(BOOTSTRAP, f"{props['topic.prefix']}.{mariadb_db}.c")]
    assert sorted(keys) == sorted(rows) and len(keys) == len(set(keys))
    keyless = read_topic(BOOTSTRAP, f"{props['topic.prefix']}.{mariadb_db}.n")
    assert sorted(json.loads(r.value)["after"]["v"] for r in keyless) == [1, 1, 2]
    assert all(r.key is None for r in keyless)


def test_snapshot_mode_never_reads_the_binlog_from_its_beginning(mariadb, filled):
    """Debezium's never: no snapshot, the binlog from the oldest file the server keeps (the table's 1000 inserts and
    later changes are streamed as c/u events)."""
    props = properties(mariadb, filled, **{"snapshot.mode": "never"})
    mariadb.execute("UPDATE t SET v = 1 WHERE id = 5", database=filled)
    runner = InProcess(props)
    try:
        ops = wait_caught_up(mariadb, props, filled, timeout=180)
    finally:
        runner.close()
    assert "r" not in ops and ops["c"] == 1000 and ops["u"] == 1


def test_snapshot_of_a_nullable_message_key_reads_every_row(mariadb, mariadb_db):
    """message.key.columns naming a nullable column: the snapshot reads rows whose key is NULL too, once each (its
    chunks are the primary key's ranges), and their keys, read or streamed, hold a null in an optional field."""
    mariadb.execute("CREATE TABLE m (id INT PRIMARY KEY, code INT NULL, v INT)", database=mariadb_db)
    rows = [(i, None if i % 4 == 0 else i % 7) for i in range(1, 41)]
    values = ", ".join(f"({i}, {'NULL' if c is None else c}, {i})" for i, c in rows)
    mariadb.execute(f"INSERT INTO m VALUES {values}", database=mariadb_db)  # noqa: S608
    props = properties(mariadb, mariadb_db, **{"snapshot.chunk.size": "3", "key.converter.schemas.enable": "true",
                                               "message.key.columns": rf"{mariadb_db}\.m:code"})
    topic = f"{props['topic.prefix']}.{mariadb_db}.m"
    runner = InProcess(props)
    try:
        records_at_least(runner, BOOTSTRAP, topic, len(rows))
        mariadb.execute("INSERT INTO m VALUES (41, NULL, 41)", database=mariadb_db)
        records = records_at_least(runner, BOOTSTRAP, topic, len(rows) + 1)
    finally:
        runner.close()
    values = [json.loads(r.value)["after"] for r in records]
    assert sorted(v["id"] for v in values) == [*(i for i, _ in rows), 41]
    keys = [json.loads(r.key) for r in records]
    assert all(k["schema"]["fields"] == [{"type": "int32", "optional": True, "field": "code"}] for k in keys)
    assert [k["payload"]["code"] for k in keys] == [v["code"] for v in values]
    assert keys[-1]["payload"] == {"code": None}


def test_a_failed_snapshot_leaves_no_view_holding_the_tables(mariadb, filled, monkeypatch):
    """A snapshot that fails after its view is open: the view's transaction ends with the pipeline (it held the
    tables' metadata locks for as long as the error was kept, and a DROP or ALTER waited)."""
    from connectors.mysql.snapshot_reader import MySqlSnapshotReader

    original = MySqlSnapshotReader.read_chunk

    def read_chunk(self, builder, chunk, *args, **kwargs):
        if chunk.number > 0:
            raise ConnectorError("a chunk that cannot be read")
        return original(self, builder, chunk, *args, **kwargs)

    monkeypatch.setattr(MySqlSnapshotReader, "read_chunk", read_chunk)
    runner = InProcess(properties(mariadb, filled, **{"snapshot.chunk.size": "100"}))
    runner.thread.join(60)
    assert "a chunk that cannot be read" in str(runner.runner.errors)  # gate: failed, the error is still held
    try:
        mariadb.execute("SET SESSION lock_wait_timeout = 10", "DROP TABLE t", database=filled)
    finally:
        runner.close()
        for (session,) in mariadb.execute(  # without the fix: the view's session (else the teardown waits for it)
                f"SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '{mariadb.cdc.user}'"):  # noqa: S608
            mariadb.execute(f"KILL {session}")
