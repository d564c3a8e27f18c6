"""The PostgreSQL source through the core pipeline, against the real PostgreSQL and the real Kafka: snapshot in the
slot's exported snapshot then streaming (writes made during the snapshot arrive once, through the stream),
Debezium PostgreSQL events with and without schemas, tombstones, restart without loss or duplicate, the slot
acknowledged only after commits, the idle slot released, a missing slot refused (or re-snapshotted)."""

from __future__ import annotations

import gc
import json
import threading
import time

import pytest

from connectors import HistoryLost
from connectors.core.collector import BATCH_THRESHOLDS
from connectors.kafka import OffsetStore
from connectors.postgres.config import PostgresConfig
from connectors.postgres.pgoutput import lsn_from_text
from connectors.postgres.snapshot import PgSnapshotReader
from connectors.runner import ConnectorRunner
from tests.integration.kafka_reading import read_topic

pytestmark = [pytest.mark.integration]


def pg_config(pg_db, name: str, **extra) -> PostgresConfig:
    import psycopg2.extensions

    dsn = psycopg2.extensions.parse_dsn(pg_db.dsn)
    props = {
        "name": name, "topic.prefix": name, "database.hostname": dsn["host"], "database.port": dsn["port"],
        "database.user": dsn["user"], "database.password": dsn.get("password"), "database.dbname": pg_db.name,
        "slot.name": pg_db.name, "publication.autocreate.mode": "filtered", "offset.storage.topic": f"{name}.offsets",
        "poll.interval.ms": 100, **extra,
    }
    return PostgresConfig.from_properties(props)


class Running:
    """A ConnectorRunner in a thread; `stop()` stops it and returns its outcomes."""

    def __init__(self, config, bootstrap):
        self.stop_event = threading.Event()
        self.runner = ConnectorRunner(config, bootstrap, self.stop_event)
        self.outcomes = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.outcomes = self.runner.run()

    def stop(self):
        self.stop_event.set()
        self.thread.join(60)
        assert not self.thread.is_alive()
        return self.outcomes


def events(bootstrap, topic, count, timeout=60.0):
    """The topic's read_committed records once it holds at least `count` (fails after `timeout`)."""
    deadline = time.monotonic() + timeout
    records = []
    while time.monotonic() < deadline:
        try:
            records = read_topic(bootstrap, topic, timeout=5)
        except KeyError:
            records = []
        if len(records) >= count:
            return records
        time.sleep(0.3)
    raise AssertionError(f"{topic}: {len(records)} records, wanted {count}")


def payloads(records):
    return [None if r.value is None else json.loads(r.value) for r in records]


@pytest.fixture
def items(pg_db):
    pg_db.execute("CREATE TABLE items (id int PRIMARY KEY, label text NOT NULL, price numeric(10,2))")
    pg_db.execute("INSERT INTO items SELECT g, 'row ' || g, g * 1.5 FROM generate_series(1, 5) g")
    return pg_db


def test_snapshot_then_stream_with_writes_during_the_snapshot(items, stack, unique_name, monkeypatch):
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    config = pg_config(items, name)
    original = PgSnapshotReader.capture_start

    def capture_then_write(self):
        start = original(self)
        # after the exported snapshot, before any row is read: these must come through the stream, once
        items.execute("INSERT INTO items VALUES (6, 'during', 9)")
        items.execute("UPDATE items SET label = 'changed during' WHERE id = 1")
        items.execute("DELETE FROM items WHERE id = 2")
        return start

    monkeypatch.setattr(PgSnapshotReader, "capture_start", capture_then_write)
    running = Running(config, bootstrap)
    topic = f"{name}.public.items"
    try:
        records = events(bootstrap, topic, 5 + 1 + 1 + 2)
        values = payloads(records)
        ops = [v["op"] if v else None for v in values]
        assert ops == ["r"] * 5 + ["c", "u", "d", None], ops
        snap = [v["after"] for v in values[:5]]
        assert snap == [{"id": i, "label": f"row {i}", "price": v["after"]["price"]} for i, v in zip(
            range(1, 6), values[:5], strict=True)]
        assert [v["source"]["snapshot"] for v in values[:5]] == ["first"] + ["true"] * 3 + ["last"]
        assert values[5]["after"] == {"id": 6, "label": "during", "price": "A4Q="}  # 9.00 as a Decimal
        assert values[6]["after"]["label"] == "changed during" and values[6]["before"] is None
        assert values[7]["before"]["id"] == 2 and values[7]["after"] is None
        assert json.loads(records[7].key) == {"id": 2} and records[8].value is None
        source = values[5]["source"]
        assert source["connector"] == "postgresql" and source["db"] == items.name and source["table"] == "items"
        assert source["schema"] == "public" and source["txId"] and source["lsn"] and source["name"] == name
        # a later change, then the slot is acknowledged past it once committed
        items.execute("INSERT INTO items VALUES (7, 'streamed', 1)")
        events(bootstrap, topic, 10)
        lsn = items.execute("SELECT pg_current_wal_lsn()::text")[0][0]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            flushed = items.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
                                    (items.name,))[0][0]
            if lsn_from_text(flushed) >= lsn_from_text(lsn):
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"slot not acknowledged past {lsn}: {flushed}")
    finally:
        assert running.stop() == {items.name: "stopped"}

    # changes made while stopped arrive after a restart, and nothing is repeated
    items.execute("BEGIN; UPDATE items SET price = 2 WHERE id = 3; INSERT INTO items VALUES (8, 'offline', 0); "
                  "COMMIT")
    running = Running(config, bootstrap)
    try:
        records = events(bootstrap, topic, 12)
        time.sleep(1)
        records = read_topic(bootstrap, topic)
        ops = [json.loads(r.value)["op"] if r.value else None for r in records]
        assert ops == ["r"] * 5 + ["c", "u", "d", None, "c", "u", "c"], ops
    finally:
        running.stop()
    stored = json.loads(OffsetStore(bootstrap, f"{name}.offsets").read_value(
        json.dumps([name, {"server": name}], separators=(",", ":")).encode())[0])
    assert stored["lsn_commit"] and stored["lsn_proc"] and stored.get("txId"), stored
    assert stored["transaction_completed"], stored


def test_schemas_enabled_events_and_truncate(items, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    config = pg_config(items, name, **{"schemas.enable": "true", "snapshot.mode": "no_data",
                                       "skipped.operations": "none"})
    running = Running(config, bootstrap)
    topic = f"{name}.public.items"
    try:
        deadline = time.monotonic() + 30
        while not items.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND active",
                                (items.name,)):
            assert time.monotonic() < deadline, "slot never became active"
            time.sleep(0.1)
        items.execute("UPDATE items SET label = 'x' WHERE id = 1")
        items.execute("TRUNCATE items")
        records = events(bootstrap, topic, 2)
    finally:
        running.stop()
    update, truncate = (json.loads(r.value) for r in records[:2])
    assert update["schema"]["name"] == f"{name}.public.items.Envelope"
    fields = {f["field"]: f for f in update["schema"]["fields"]}
    assert fields["after"]["name"] == f"{name}.public.items.Value"
    assert fields["source"]["name"] == "io.debezium.connector.postgresql.Source"
    assert update["payload"]["op"] == "u" and update["payload"]["after"]["label"] == "x"
    assert json.loads(records[0].key) == {
        "schema": {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}],
                   "optional": False, "name": f"{name}.public.items.Key"},
        "payload": {"id": 1}}
    assert truncate["payload"]["op"] == "t" and records[1].key is None


def test_slot_dropped_while_stopped_fails_clearly_or_resnapshots(items, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    config = pg_config(items, name)
    running = Running(config, bootstrap)
    topic = f"{name}.public.items"
    events(bootstrap, topic, 5)
    running.stop()
    deadline = time.monotonic() + 30
    while items.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND active", (items.name,)):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    items.execute("SELECT pg_drop_replication_slot(%s)", (items.name,))
    items.execute("INSERT INTO items VALUES (9, 'lost while the slot was gone', 1)")

    running = Running(config, bootstrap)
    running.thread.join(60)
    assert running.outcomes == {items.name: "failed"}
    error = running.runner.errors[items.name]
    assert isinstance(error, HistoryLost)
    assert "does not exist" in str(error) and "when_needed" in str(error)

    config = pg_config(items, name, **{"snapshot.mode": "when_needed"})
    running = Running(config, bootstrap)
    try:
        records = events(bootstrap, topic, 5 + 6)
        values = payloads(records)
        assert [v["op"] for v in values[5:]] == ["r"] * 6
        assert {v["after"]["id"] for v in values[5:]} == {1, 2, 3, 4, 5, 9}
    finally:
        running.stop()


def wait_active(db, timeout=30.0):
    """The slot is in use and past its consistent point: a change committed from now on is streamed. (A slot being
    created is already listed active, but what commits before its consistent point is never decoded; its
    confirmed_flush_lsn is set once that point is reached.)"""
    deadline = time.monotonic() + timeout
    while not db.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND active "
                         "AND confirmed_flush_lsn IS NOT NULL", (db.name,)):
        assert time.monotonic() < deadline, "slot never became active"
        time.sleep(0.1)


class _WritingWhenStreaming(ConnectorRunner):
    """Inserts a row from the pipeline's own thread the moment its phase becomes "streaming"."""

    def __init__(self, config, bootstrap, db, stop):
        super().__init__(config, bootstrap, stop)
        self.db = db
        self.collector_thresholds = None  # the garbage collector's, while streaming

    def pipeline(self, partition, on_phase=None):
        def insert_when_streaming(phase):
            if phase == "streaming":
                self.collector_thresholds = gc.get_threshold()
                self.db.execute("INSERT INTO items VALUES (100, 'at streaming', 1)")
        return super().pipeline(partition, insert_when_streaming)


def test_a_change_written_when_the_phase_shows_streaming_is_captured(items, stack, unique_name):
    """With snapshot.mode=no_data the slot is created when streaming starts; the phase says "streaming" only once
    it exists, so a change committed then is in the topic (it used to show before, and such a change was lost)."""
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    stop = threading.Event()
    runner = _WritingWhenStreaming(pg_config(items, name, **{"snapshot.mode": "no_data"}), bootstrap, items, stop)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        values = payloads(events(bootstrap, f"{name}.public.items", 1, timeout=30))
    finally:
        stop.set()
        thread.join(60)
    assert not runner.errors, runner.errors
    assert [(v["op"], v["after"]["id"]) for v in values] == [("c", 100)]
    assert runner.collector_thresholds == BATCH_THRESHOLDS  # streams under core.collector's policy


def test_idle_slot_is_acknowledged_while_only_unpublished_tables_change(items, stack, unique_name):
    """Nothing captured happens, yet WAL grows (a table outside the publication is written): the keepalive position
    is committed and acknowledged, so the slot's confirmed flush follows the WAL instead of holding it."""
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    items.execute("CREATE TABLE other (id serial PRIMARY KEY, payload text)")
    config = pg_config(items, name, **{"snapshot.mode": "no_data", "table.include.list": "public.items",
                                       "status.update.interval.ms": 1000})
    running = Running(config, bootstrap)
    try:
        wait_active(items)
        start = lsn_from_text(items.execute("SELECT pg_current_wal_lsn()::text")[0][0])
        for _ in range(20):
            items.execute("INSERT INTO other (payload) SELECT repeat('x', 1000) FROM generate_series(1, 200)")
        written = lsn_from_text(items.execute("SELECT pg_current_wal_lsn()::text")[0][0])
        assert written - start > 2_000_000
        deadline = time.monotonic() + 60
        while True:
            flushed = lsn_from_text(items.execute(
                "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s", (items.name,))[0][0])
            if flushed >= written:
                break
            assert time.monotonic() < deadline, f"confirmed flush {flushed} stayed behind {written}"
            time.sleep(0.3)
    finally:
        running.stop()
    stored = json.loads(OffsetStore(bootstrap, f"{name}.offsets").read_value(
        json.dumps([name, {"server": name}], separators=(",", ":")).encode())[0])
    assert stored["lsn_proc"] >= written  # the offset-only commit came first, then the acknowledgement


def test_bad_configurations_are_refused_by_property(tmp_path):
    import subprocess
    import sys

    from connectors.postgres.config import validate

    problems = {p.property: p.message for p in validate({
        "name": "x", "topic.prefix": "x", "database.hostname": "h", "database.user": "u", "database.dbname": "d",
        "snapshot.mode": "sometimes", "publication.autocreate.mode": "everything", "decimal.handling.mode": "exact",
        "plugin.name": "decoderbufs", "database.prot": "5432",
        "column.mask.hash.MD4.with.salt.s": "a.b.c", "tombstones.on.delete": "maybe"})}
    assert set(problems) == {"snapshot.mode", "publication.autocreate.mode", "decimal.handling.mode", "plugin.name",
                             "database.prot", "column.mask.hash.MD4.with.salt.********",
                             "tombstones.on.delete"}, problems
    assert "did you mean 'database.port'" in problems["database.prot"]
    assert "when_needed" in problems["snapshot.mode"]
    missing = {p.property for p in validate({"connector.class": "postgres"})}
    assert {"name", "topic.prefix", "database.hostname", "database.user", "database.dbname"} <= missing

    path = tmp_path / "pg.json"
    path.write_text(json.dumps({"name": "x", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
                                "topic.prefix": "x", "database.hostname": "h", "database.user": "u",
                                "database.dbname": "d", "database.password": "s3cret", "snapshot.mode": "sometimes"}))
    for command in ("validate", "run"):
        done = subprocess.run([sys.executable, "-m", "connectors", command, str(path)], capture_output=True,
                              text=True, timeout=60)
        output = done.stdout + done.stderr
        assert done.returncode != 0 and "snapshot.mode" in output and "Traceback" not in output, output
        assert "s3cret" not in output


def test_wrong_password_fails_clearly(items, stack, unique_name, tmp_path):
    import subprocess
    import sys

    import psycopg2.extensions

    name = "pg" + unique_name.replace("-", "")[-12:]
    dsn = psycopg2.extensions.parse_dsn(items.dsn)
    path = tmp_path / "pg.json"
    path.write_text(json.dumps({
        "name": name, "connector.class": "postgres", "topic.prefix": name, "database.hostname": dsn["host"],
        "database.port": dsn["port"], "database.user": dsn["user"], "database.password": "not-the-password",
        "database.dbname": items.name, "offset.storage.topic": f"{name}.offsets", "connect.max.attempts": 1}))
    done = subprocess.run([sys.executable, "-m", "connectors", "run", str(path), "--bootstrap-servers",
                           stack.kafka_bootstrap], capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in output, output
    assert "password authentication failed" in output and "not-the-password" not in output


def test_toast_with_both_identities_and_schema_change_mid_stream(pg_db, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    big = "".join(chr(65 + (i * 7919) % 26) for i in range(20_000))  # incompressible enough to be TOASTed
    for table in ("dflt", "wide"):
        pg_db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, doc text, n int NOT NULL)")
        pg_db.execute(f"ALTER TABLE {table} ALTER COLUMN doc SET STORAGE EXTERNAL")
        pg_db.execute(f"INSERT INTO {table} VALUES (1, %s, 0)", (big,))  # noqa: S608 - a constant name
    pg_db.execute("ALTER TABLE wide REPLICA IDENTITY FULL")
    config = pg_config(pg_db, name, **{"snapshot.mode": "no_data"})
    running = Running(config, bootstrap)
    try:
        wait_active(pg_db)
        pg_db.execute("UPDATE dflt SET n = 1")
        pg_db.execute("UPDATE wide SET n = 1")
        pg_db.execute("DELETE FROM dflt")
        pg_db.execute("ALTER TABLE wide ADD COLUMN note varchar(10)")
        pg_db.execute("UPDATE wide SET note = 'added', n = 2")
        pg_db.execute("ALTER TABLE wide DROP COLUMN note")
        pg_db.execute("ALTER TABLE wide ALTER COLUMN n TYPE bigint")
        pg_db.execute("UPDATE wide SET n = 3")
        dflt = payloads(events(bootstrap, f"{name}.public.dflt", 3))
        full = payloads(events(bootstrap, f"{name}.public.wide", 3))
    finally:
        running.stop()
    # DEFAULT identity: the unchanged TOASTed value is unavailable, before is null; a delete's before is the key
    assert dflt[0]["op"] == "u" and dflt[0]["after"]["doc"] == "__debezium_unavailable_value"
    assert dflt[0]["before"] is None
    assert dflt[1]["op"] == "d" and dflt[1]["before"] == {"id": 1, "doc": None, "n": 0} and dflt[2] is None
    # FULL identity: the old row fills the unchanged TOASTed value
    assert full[0]["after"] == {"id": 1, "doc": big, "n": 1} and full[0]["before"]["n"] == 0
    assert full[1]["after"] == {"id": 1, "doc": big, "n": 2, "note": "added"}
    assert full[2]["after"] == {"id": 1, "doc": big, "n": 3}


def test_snapshot_in_primary_key_chunks_across_threads(pg_db, stack, unique_name, monkeypatch):
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE big (id int PRIMARY KEY, label text)")
    pg_db.execute("INSERT INTO big SELECT g, 'r' || g FROM generate_series(1, 2500) g")
    pg_db.execute("CREATE TABLE pair (a text, b int, v int, PRIMARY KEY (a, b))")
    pg_db.execute("INSERT INTO pair SELECT chr(97 + g % 5), g, g FROM generate_series(1, 700) g")
    pg_db.execute("CREATE TABLE loose (v int)")
    pg_db.execute("INSERT INTO loose SELECT generate_series(1, 50)")
    original = PgSnapshotReader.capture_start

    def capture_then_write(self):
        start = original(self)
        pg_db.execute("UPDATE big SET label = 'during' WHERE id IN (1, 1200, 2500)")
        pg_db.execute("INSERT INTO big VALUES (2501, 'during')")
        return start

    monkeypatch.setattr(PgSnapshotReader, "capture_start", capture_then_write)
    config = pg_config(pg_db, name, **{"snapshot.chunk.size": 300, "snapshot.max.threads": 3})
    running = Running(config, bootstrap)
    try:
        big = payloads(events(bootstrap, f"{name}.public.big", 2500 + 4))
        pair = payloads(events(bootstrap, f"{name}.public.pair", 700))
        loose = payloads(events(bootstrap, f"{name}.public.loose", 50))
    finally:
        running.stop()
    reads = [v for v in big if v["op"] == "r"]
    assert sorted(v["after"]["id"] for v in reads) == list(range(1, 2501))
    assert all(v["after"]["label"] == f"r{v['after']['id']}" for v in reads)  # as of the snapshot
    assert [(v["op"], v["after"]["id"]) for v in big if v["op"] != "r"] == [("u", 1), ("u", 1200), ("u", 2500),
                                                                             ("c", 2501)]
    assert sorted((v["after"]["a"], v["after"]["b"]) for v in pair) == sorted(
        (chr(97 + g % 5), g) for g in range(1, 701))
    assert sorted(v["after"]["v"] for v in loose) == list(range(1, 51))
    markers = [v["source"]["snapshot"] for v in big + pair + loose if v["op"] == "r"]
    assert markers.count("last") == 1 and markers.count("first") == 1
    assert markers.count("first_in_data_collection") == markers.count("last_in_data_collection") == 2
    assert set(markers) == {"first", "first_in_data_collection", "true", "last_in_data_collection", "last"}


def test_heartbeats_and_the_action_query(items, stack, unique_name):
    """heartbeat.action.query writes to an unpublished table: its WAL moves the keepalive position, each heartbeat
    commits it with a record on __debezium-heartbeat.<prefix>."""
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    items.execute("CREATE TABLE beats (at timestamptz DEFAULT now())")
    config = pg_config(items, name, **{"snapshot.mode": "no_data", "table.include.list": "public.items",
                                       "heartbeat.interval.ms": 300, "status.update.interval.ms": 1000,
                                       "heartbeat.action.query": "INSERT INTO beats DEFAULT VALUES"})
    running = Running(config, bootstrap)
    try:
        wait_active(items)
        items.execute("INSERT INTO beats DEFAULT VALUES")  # WAL moves: the first keepalive, the first heartbeat
        records = events(bootstrap, f"__debezium-heartbeat.{name}", 3)
    finally:
        running.stop()
    assert json.loads(records[0].key) == {"serverName": name}
    assert set(json.loads(records[0].value)) == {"ts_ms"}
    assert items.execute("SELECT count(*) FROM beats")[0][0] >= 3  # the action query ran at each heartbeat


def test_table_without_replica_identity_is_reported_at_start(pg_db, stack, unique_name, caplog):
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE keyless (v int)")
    config = pg_config(pg_db, name, **{"snapshot.mode": "no_data"})
    caplog.set_level("WARNING", logger="connectors.postgres.source")
    running = Running(config, bootstrap)
    try:
        wait_active(pg_db)
    finally:
        running.stop()
    assert any("public.keyless is published with no primary key and REPLICA IDENTITY DEFAULT" in r.getMessage()
               for r in caplog.records), caplog.text


def test_slot_drop_on_stop(items, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    running = Running(pg_config(items, name, **{"slot.drop.on.stop": "true"}), bootstrap)
    try:
        events(bootstrap, f"{name}.public.items", 5)
        assert items.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (items.name,))
    finally:
        assert running.stop() == {items.name: "stopped"}
    assert not items.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (items.name,))


def test_a_slot_name_taken_in_another_database_fails_at_once_and_is_left_alone(items, postgres, stack, unique_name):
    """A slot serves one database: the server refuses another database's slot on every try, so the pipeline fails
    at once saying so (it used to retry for minutes), and never drops that slot to make its own."""
    from connectors.postgres.preflight import problems

    other = f"{items.name}_x"
    postgres.execute(f'CREATE DATABASE "{other}"')
    try:
        postgres.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (items.name,), dbname=other)
        name = "pg" + unique_name.replace("-", "")[-12:]
        for mode in ("initial", "no_data"):
            running = Running(pg_config(items, name, **{"snapshot.mode": mode}), stack.kafka_bootstrap)
            running.thread.join(60)
            assert running.outcomes == {items.name: "failed"}, mode
            message = str(running.runner.errors[items.name])
            assert f"belongs to database '{other}'" in message and "slot.name" in message, message
        assert items.execute("SELECT database FROM pg_replication_slots WHERE slot_name = %s",
                             (items.name,)) == [(other,)]
        assert [prop for prop, _ in problems(pg_config(items, name))] == ["slot.name"]
    finally:
        postgres.execute("SELECT pg_drop_replication_slot(%s)", (items.name,))
        postgres.execute(f'DROP DATABASE "{other}" WITH (FORCE)')


def stopped_after_two_of_ten_chunks(pg_db, name: str, bootstrap, monkeypatch, **properties) -> PostgresConfig:
    """A connector of chunks of 100 rows (one thread, and `properties`), run until its snapshot committed two chunks
    of its first table, then stopped; its configuration."""
    from connectors.postgres.source import SlotSource

    config = pg_config(pg_db, name, **{"snapshot.chunk.size": 100, "snapshot.max.threads": 1, **properties})

    original = SlotSource.offset_record
    stopped: list[str] = []

    def offset_record(self, position, **kwargs):
        snapshot = kwargs.get("snapshot")
        if snapshot and snapshot["collections"] and snapshot["collections"][0]["done"].count("1") == 2:
            stopped.append(snapshot["collections"][0]["done"])
            running.stop_event.set()
        return original(self, position, **kwargs)

    monkeypatch.setattr(SlotSource, "offset_record", offset_record)
    running = Running(config, bootstrap)
    running.thread.join(60)
    monkeypatch.undo()
    assert stopped and not running.runner.errors
    return config


def test_a_snapshot_stopped_between_chunks_resumes_its_plan_in_a_new_snapshot(pg_db, stack, unique_name, monkeypatch):
    """Stopped once two of ten chunks are committed, with changes made while it is stopped: the restart keeps the
    plan, the slot and the stream position, and reads only the eight other chunks, in a snapshot a temporary slot
    exports (the first export is gone). The stream from the first snapshot then brings the changes of the rows read
    then and drops those the later chunks hold: every row's events are its read and its changes since, once each,
    in order. No session of the snapshot outlives it, nor does the temporary slot."""
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE big (id int PRIMARY KEY, label text)")
    pg_db.execute("INSERT INTO big SELECT g, 'r' || g FROM generate_series(1, 1000) g")
    config = stopped_after_two_of_ten_chunks(pg_db, name, bootstrap, monkeypatch)
    first = [v for v in payloads(read_topic(bootstrap, f"{name}.public.big")) if v]
    assert len(first) == 200 and {v["op"] for v in first} == {"r"}
    done_ids = {v["after"]["id"] for v in first}

    unread = max(set(range(1, 1001)) - done_ids)  # in the last chunk, read after the restart
    read_early = min(done_ids)
    pg_db.execute("UPDATE big SET label = 'changed' WHERE id IN (%s, %s)", (read_early, unread))
    pg_db.execute("DELETE FROM big WHERE id = %s", (unread - 1,))
    pg_db.execute("INSERT INTO big VALUES (1001, 'new')")  # past the plan's last key: no chunk holds it
    # a key moved out of a chunk read later to past the plan: only its new row is news
    pg_db.execute("UPDATE big SET id = 2000 WHERE id = %s", (unread - 2,))

    running = Running(config, bootstrap)
    try:
        events(bootstrap, f"{name}.public.big", 998 + 3)  # the reads, then u, c and the moved key's c
        pg_db.execute("UPDATE big SET label = 'sentinel' WHERE id = %s", (read_early,))
        values = []
        deadline = time.monotonic() + 60
        while not values or values[-1]["after"]["label"] != "sentinel":
            assert time.monotonic() < deadline, "the update after the resumed snapshot never arrived"
            values = [v for v in payloads(read_topic(bootstrap, f"{name}.public.big")) if v]
        lingering = pg_db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND state = 'idle in transaction'")[0][0]
        view_slots = pg_db.execute("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE %s",
                                   (f"{config.slot_name[:40]}_view_%",))
    finally:
        running.stop()
    assert lingering == 0, "a snapshot session still holds its snapshot while streaming"
    assert view_slots == [], "the resumed snapshot's temporary slot outlived it"
    reads = [v["after"]["id"] for v in values if v["op"] == "r"]
    assert sorted(reads) == sorted(set(range(1, 1001)) - {unread - 1, unread - 2}), "a row read twice or never"
    ops: dict[str, int] = {}
    for value in values:
        ops[value["op"]] = ops.get(value["op"], 0) + 1
    assert ops == {"r": 998, "u": 2, "c": 2}, ops
    chain = [(v["op"], v["after"]["label"]) for v in values if (v["after"] or v["before"])["id"] == read_early]
    assert chain == [("r", f"r{read_early}"), ("u", "changed"), ("u", "sentinel")]
    assert [(v["op"], v["after"]["label"]) for v in values if v["after"]["id"] == unread] == [("r", "changed")]
    assert [(v["op"], v["after"]["id"]) for v in values if v["op"] == "c"] == [("c", 1001), ("c", 2000)]


def test_a_truncate_while_a_snapshot_is_stopped_leaves_a_consumer_with_the_tables_rows(pg_db, stack, unique_name,
                                                                                      monkeypatch):
    """TRUNCATE, then inserts (into ranges read before the stop, ranges read after it, past the plan) and an update,
    while the snapshot is stopped: the truncate's event comes after the resumed chunks' reads, so the rows written
    since, which those chunks hold, come again after it. A read_committed consumer that applies every event (the
    truncate emptying its table) ends with the table's rows, and never sees a create of a key it holds."""
    bootstrap = stack.kafka_bootstrap
    name = "pgt" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE big (id int PRIMARY KEY, label text)")
    pg_db.execute("INSERT INTO big SELECT g, 'r' || g FROM generate_series(1, 1000) g")
    # truncates are captured (Debezium skips them by default: a consumer then keeps the rows read before one)
    config = stopped_after_two_of_ten_chunks(pg_db, name, bootstrap, monkeypatch, **{"skipped.operations": "none"})
    topic = f"{name}.public.big"
    read_first = {v["after"]["id"] for v in payloads(read_topic(bootstrap, topic)) if v}
    unread = sorted(set(range(1, 1001)) - read_first)[-60:-10]  # in chunks read after the restart
    pg_db.execute("TRUNCATE big")
    pg_db.execute("INSERT INTO big SELECT g, 'n' || g FROM unnest(%s::int[]) g",
                  (sorted(read_first)[:20] + unread + [1500],))
    pg_db.execute("UPDATE big SET label = 'changed' WHERE id = %s", (unread[5],))

    running = Running(config, bootstrap)
    try:
        pg_db.execute("INSERT INTO big VALUES (5000, 'sentinel')")
        deadline = time.monotonic() + 60
        while True:
            values = payloads(read_topic(bootstrap, topic))
            if any(v and v["op"] == "c" and v["after"]["id"] == 5000 for v in values):
                break
            assert time.monotonic() < deadline, "the insert after the resumed snapshot never arrived"
            time.sleep(0.2)
    finally:
        running.stop()
    state: dict[int, str] = {}
    for value in values:
        if value is None:
            continue  # a tombstone
        if value["op"] == "t":
            state.clear()
        elif value["op"] in ("r", "c"):
            assert value["after"]["id"] not in state, f"{value['op']} of a key the consumer holds: {value['after']}"
            state[value["after"]["id"]] = value["after"]["label"]
        elif value["op"] == "u":
            state[value["after"]["id"]] = value["after"]["label"]
        else:
            state.pop(value["before"]["id"], None)
    assert state == dict(pg_db.execute("SELECT id, label FROM big"))


# key columns, and their values for row g of generate_series(1, 1000)
RESUMED_KEYS = {
    # uuids: compared here by their canonical text (the server's byte order)
    "uuid": ("ref uuid", "md5(g::text)::uuid"),
    # text under an ICU collation (k0001 < K0002 < k0003, not the byte order) and numeric: compared by the server
    "text-icu-numeric": ("code text COLLATE \"und-x-icu\", n numeric",
                         "CASE WHEN g % 2 = 0 THEN 'K' ELSE 'k' END || lpad((g / 3)::text, 4, '0'), g % 3 + 0.5"),
}


@pytest.mark.parametrize("key", sorted(RESUMED_KEYS))
def test_a_resumed_snapshot_of_other_keys_gives_each_row_its_exact_chain(pg_db, stack, unique_name, monkeypatch,
                                                                          key):
    """As above with keys other than integers: rows of the chunks read after the restart keep only their read, rows
    read before it their read and their update; the delete of a row read after it does not come."""
    bootstrap = stack.kafka_bootstrap
    name = "pgu" + unique_name.replace("-", "")[-12:]
    columns, values = RESUMED_KEYS[key]
    names = [c.split()[0] for c in columns.split(", ")]
    pg_db.execute(f"CREATE TABLE accounts ({columns}, id int NOT NULL UNIQUE, v int NOT NULL, "
                  f"PRIMARY KEY ({', '.join(names)}))")
    pg_db.execute(f"INSERT INTO accounts SELECT {values}, g, 0 FROM generate_series(1, 1000) g")  # noqa: S608
    config = stopped_after_two_of_ten_chunks(pg_db, name, bootstrap, monkeypatch)
    topic = f"{name}.public.accounts"

    def key_of(row: dict) -> str:
        return json.dumps([row[n] for n in names], sort_keys=True)

    read_first = {key_of(v["after"]): v["after"]["id"] for v in payloads(read_topic(bootstrap, topic)) if v}
    assert len(read_first) == 200
    pg_db.execute("UPDATE accounts SET v = 1")  # every row, read or not
    pg_db.execute(f"DELETE FROM accounts WHERE id = (SELECT id FROM accounts WHERE id <> ALL(%s) "  # noqa: S608
                  f"ORDER BY {', '.join(n + ' DESC' for n in names)} LIMIT 1)", (list(read_first.values()),))
    first = min(read_first)

    running = Running(config, bootstrap)
    try:
        values = [v for v in payloads(events(bootstrap, topic, 999 + 200)) if v]
        pg_db.execute("UPDATE accounts SET v = 2 WHERE id = %s", (read_first[first],))
        while (values[-1]["after"] or {}).get("v") != 2:
            values = [v for v in payloads(events(bootstrap, topic, len(values) + 1)) if v]
    finally:
        running.stop()
    chains: dict[str, list[tuple[str, int | None]]] = {}
    for value in values:
        chains.setdefault(key_of(value["after"] or value["before"]), []).append(
            (value["op"], value["after"] and value["after"]["v"]))
    assert len(chains) == 999, "the delete of a row read after it came again"
    for row_key, chain in chains.items():
        expected = [("r", 0), ("u", 1)] if row_key in read_first else [("r", 1)]
        if row_key == first:
            expected.append(("u", 2))
        assert chain == expected, (row_key, chain)


@pytest.fixture
def forgotten_session(pg_db, monkeypatch, caplog):
    """A table `waits` of three rows and a session left in a transaction that updated one of them (it holds a
    transaction id); slot waits reported every 0.2 s."""
    import logging

    import psycopg2

    from connectors.postgres import slot_wait

    monkeypatch.setattr(slot_wait, "REPORT_EVERY_S", 0.2)
    caplog.set_level(logging.WARNING, logger=slot_wait.__name__)
    pg_db.execute("CREATE TABLE waits (id int PRIMARY KEY, v int NOT NULL)")
    pg_db.execute("INSERT INTO waits SELECT g, 0 FROM generate_series(1, 3) g")
    blocker = psycopg2.connect(pg_db.dsn, application_name="forgotten-session")
    blocker.cursor().execute("UPDATE waits SET v = 1 WHERE id = 1")
    yield blocker
    blocker.close()


def wait_reported(caplog, blocker, running) -> None:
    deadline = time.monotonic() + 30
    while f"pid {blocker.get_backend_pid()} " not in caplog.text:
        assert time.monotonic() < deadline, "the slot's wait was never reported"
        assert not running.runner.errors
        time.sleep(0.05)


def test_a_slot_waiting_for_an_open_transaction_names_it_and_goes_on_once_it_ends(pg_db, stack, unique_name,
                                                                                  forgotten_session, caplog):
    """A session idle in a transaction that holds a transaction id keeps the new slot (and so the snapshot) from
    starting: while it waits, the pipeline logs which session it waits for; once that transaction commits, the
    snapshot runs."""
    bootstrap = stack.kafka_bootstrap
    name = "pgw" + unique_name.replace("-", "")[-12:]
    blocker = forgotten_session
    running = Running(pg_config(pg_db, name), bootstrap)
    try:
        wait_reported(caplog, blocker, running)
        assert "forgotten-session" in caplog.text and "idle in transaction" in caplog.text
        assert not read_topic_or_none(bootstrap, f"{name}.public.waits"), "the snapshot started before the slot"
        blocker.commit()
        reads = payloads(events(bootstrap, f"{name}.public.waits", 3))
    finally:
        blocker.close()
        running.stop()
    assert sorted((v["after"]["id"], v["after"]["v"]) for v in reads) == [(1, 1), (2, 0), (3, 0)]


def test_a_stop_while_a_slot_waits_for_an_open_transaction_cancels_the_wait(pg_db, stack, unique_name,
                                                                            forgotten_session, caplog):
    """The pipeline stops (outcome "stopped", no error) while its slot still waits, with the transaction open."""
    bootstrap = stack.kafka_bootstrap
    name = "pgx" + unique_name.replace("-", "")[-12:]
    running = Running(pg_config(pg_db, name), bootstrap)
    wait_reported(caplog, forgotten_session, running)
    assert running.stop() == {pg_db.name: "stopped"} and not running.runner.errors
    assert forgotten_session.get_transaction_status() == 2  # TRANSACTION_STATUS_INTRANS: still open
    assert pg_db.execute("SELECT count(*) FROM pg_replication_slots WHERE database = %s", (pg_db.name,)) == [(0,)]


def read_topic_or_none(bootstrap, topic):
    try:
        return read_topic(bootstrap, topic, timeout=2)
    except KeyError:
        return None
