"""provide.transaction.metadata on the real MariaDB and Kafka: BEGIN/END records on `<prefix>.transaction` keyed and
named by the GTID, with their counts, the `transaction` block of each binlog event (none on snapshot reads), a source
transaction larger than max.batch.size (one BEGIN, one END, its state carried in the offsets between the Kafka
batches), and a kill -9 in the middle of such a transaction followed by a restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from connectors.core.java_hash_map import iteration_order
from tests.integration.kafka_reading import read_topic
from tests.mariadb.test_source import BOOTSTRAP, ROOT, InProcess, properties

pytestmark = pytest.mark.integration


def records(topic: str, count: int, timeout: float = 60.0):
    """The topic's read_committed records once it holds at least `count`."""
    deadline = time.monotonic() + timeout
    found = []
    while time.monotonic() < deadline:
        try:
            found = read_topic(BOOTSTRAP, topic, timeout=5)
        except KeyError:
            found = []
        if len(found) >= count:
            return found
        time.sleep(0.3)
    raise AssertionError(f"{topic}: {len(found)} records, wanted {count}")


def values(found) -> list[dict | None]:
    return [None if r.value is None else json.loads(r.value) for r in found]


def by_status(found) -> list[tuple[str, str, int | None, list | None]]:
    out = []
    for record in found:
        value = json.loads(record.value)
        assert json.loads(record.key) == {"id": value["id"]}
        collections = value["data_collections"]
        out.append((value["status"], value["id"], value["event_count"],
                    None if collections is None else [(c["data_collection"], c["event_count"]) for c in collections]))
    return out


def test_blocks_begin_end_counts_and_a_transaction_larger_than_a_batch(mariadb, mariadb_db):
    db = mariadb_db
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)", "CREATE TABLE u (id INT PRIMARY KEY)",
                    "INSERT INTO t VALUES (0, 0)", database=db)
    props = properties(mariadb, db, **{"provide.transaction.metadata": "true", "max.batch.size": "5"})
    prefix = props["topic.prefix"]
    runner = InProcess(props)
    try:
        records(f"{prefix}.{db}.t", 1)  # the snapshot is read: what follows is streamed
        mariadb.execute("BEGIN", "INSERT INTO t VALUES (1, 1)", "INSERT INTO u VALUES (1)",
                        "UPDATE t SET v = 2 WHERE id = 1", "COMMIT", database=db)
        mariadb.execute("INSERT INTO t SELECT seq, 0 FROM seq_100_to_111", database=db)  # 12 > max.batch.size
        mariadb.execute("DELETE FROM t WHERE id = 0", database=db)
        boundaries = by_status(records(f"{prefix}.transaction", 6))
        t = values(records(f"{prefix}.{db}.t", 1 + 2 + 12 + 2))
        u = values(records(f"{prefix}.{db}.u", 1))
    finally:
        runner.close()

    assert t[0]["op"] == "r" and t[0]["transaction"] is None
    small, big, last = t[1]["source"]["gtid"], t[3]["source"]["gtid"], t[15]["source"]["gtid"]
    assert len({small, big, last}) == 3 and small.count("-") == 2  # MariaDB GTIDs: domain-server-sequence
    counts = {f"{db}.t": 2, f"{db}.u": 1}  # listed in Debezium's HashMap order, which depends on the names
    assert boundaries == [
        ("BEGIN", small, None, None), ("END", small, 3, [(name, counts[name]) for name in iteration_order(counts)]),
        ("BEGIN", big, None, None), ("END", big, 12, [(f"{db}.t", 12)]),
        ("BEGIN", last, None, None), ("END", last, 1, [(f"{db}.t", 1)]),
    ]
    assert t[1]["transaction"] == {"id": small, "total_order": 1, "data_collection_order": 1}
    assert u[0]["transaction"] == {"id": small, "total_order": 2, "data_collection_order": 1}
    assert t[2]["transaction"] == {"id": small, "total_order": 3, "data_collection_order": 2}
    assert [v["transaction"] for v in t[3:15]] == [
        {"id": big, "total_order": n, "data_collection_order": n} for n in range(1, 13)]
    assert t[15]["op"] == "d" and t[15]["transaction"]["id"] == last and t[16] is None
    states = [json.loads(r.value).get("transaction") for r in read_topic(BOOTSTRAP, props["offset.storage.topic"])]
    carried = [s for s in states if s and s["id"] == big]
    assert carried and all(0 < s["total"] < 12 for s in carried)
    assert not states[-1]


def start(module: str, path, log_path) -> subprocess.Popen:
    with open(log_path, "ab") as log:
        return subprocess.Popen([sys.executable, "-m", module, "run", str(path), "--bootstrap-servers", BOOTSTRAP],
                                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def test_kill_minus_nine_inside_a_transaction_then_restart(mariadb, mariadb_db, tmp_path):
    db = mariadb_db
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)", "INSERT INTO t VALUES (0, 0)", database=db)
    props = properties(mariadb, db, **{"provide.transaction.metadata": "true", "max.batch.size": "8"})
    prefix, offsets_topic = props["topic.prefix"], props["offset.storage.topic"]
    path = tmp_path / "connector.json"
    path.write_text(json.dumps(props))
    log_path = tmp_path / "runner.log"
    topic = f"{prefix}.{db}.t"

    runner = start("tests.integration.held_mid_transaction", path, log_path)
    try:
        records(topic, 1)
        mariadb.execute("INSERT INTO t SELECT seq, 0 FROM seq_1_to_40", database=db)
        deadline = time.monotonic() + 60
        held = None
        while held is None:  # the runner committed part of the transaction and holds there
            assert runner.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            offsets = read_topic(BOOTSTRAP, offsets_topic)
            held = json.loads(offsets[-1].value).get("transaction") if offsets else None
            time.sleep(0.1)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(10)
        assert 0 < held["total"] < 40 and held["per_collection"] == {f"{db}.t": held["total"]}
        assert len(read_topic(BOOTSTRAP, topic)) == 1 + held["total"]  # read_committed: only the committed part
        runner = start("connectors", path, log_path)
        boundaries = by_status(records(f"{prefix}.transaction", 2))
        events = values(records(topic, 41))
    finally:
        runner.send_signal(signal.SIGTERM)
        runner.wait(60)
    assert boundaries == [("BEGIN", held["id"], None, None), ("END", held["id"], 40, [(f"{db}.t", 40)])]
    assert held["id"] == events[1]["source"]["gtid"]
    assert [v["after"]["id"] for v in events[1:]] == list(range(1, 41))
    assert [v["transaction"] for v in events[1:]] == [
        {"id": held["id"], "total_order": n, "data_collection_order": n} for n in range(1, 41)]
    time.sleep(1)  # nothing more comes: no second BEGIN/END, no repeated event
    assert len(read_topic(BOOTSTRAP, f"{prefix}.transaction")) == 2 and len(read_topic(BOOTSTRAP, topic)) == 41
