"""provide.transaction.metadata on the real PostgreSQL and Kafka: BEGIN/END records on `<prefix>.transaction` with
their counts, the `transaction` block of each streamed event (none on snapshot reads), a source transaction larger
than max.batch.size (one BEGIN, one END, its state carried in the offsets between the Kafka batches), and a kill -9
in the middle of such a transaction followed by a restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.integration.kafka_reading import read_topic
from tests.postgres.test_exactly_once import write_connector_json
from tests.postgres.test_source import Running, events, payloads, pg_config

pytestmark = [pytest.mark.integration]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def by_status(records) -> list[tuple[str, str, int | None, list | None]]:
    out = []
    for record in records:
        value = json.loads(record.value)
        assert json.loads(record.key) == {"id": value["id"]}
        collections = value["data_collections"]
        out.append((value["status"], value["id"], value["event_count"],
                    None if collections is None else [(c["data_collection"], c["event_count"]) for c in collections]))
    return out


def transaction_id(value: dict) -> str:
    """`<txId>:<commit LSN>`: the event's transaction block's id, which starts with its source block's txId."""
    block = value["transaction"]["id"]
    assert block.startswith(f"{value['source']['txId']}:") and int(block.split(":")[1]) > value["source"]["lsn"]
    return block


def test_blocks_begin_end_counts_and_a_transaction_larger_than_a_batch(pg_db, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "pgtx" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE items (id int PRIMARY KEY, label text)")
    pg_db.execute("CREATE TABLE tags (id int PRIMARY KEY)")
    pg_db.execute("INSERT INTO items VALUES (0, 'snapshot')")
    config = pg_config(pg_db, name, **{"provide.transaction.metadata": "true", "max.batch.size": 5})
    running = Running(config, bootstrap)
    try:
        events(bootstrap, f"{name}.public.items", 1)  # the snapshot is read: what follows is streamed
        pg_db.execute("BEGIN; INSERT INTO items VALUES (1, 'a'); INSERT INTO tags VALUES (1); "
                      "UPDATE items SET label = 'b' WHERE id = 1; COMMIT")
        pg_db.execute("INSERT INTO items SELECT g, 'big' FROM generate_series(100, 111) g")  # 12 > max.batch.size
        pg_db.execute("DELETE FROM items WHERE id = 0")
        boundaries = by_status(events(bootstrap, f"{name}.transaction", 6))
        items = payloads(events(bootstrap, f"{name}.public.items", 1 + 2 + 12 + 2))
        tags = payloads(events(bootstrap, f"{name}.public.tags", 1))
    finally:
        assert running.stop() == {pg_db.name: "stopped"}

    assert items[0]["op"] == "r" and items[0]["transaction"] is None
    first, update = items[1], items[2]
    small = transaction_id(first)
    big = transaction_id(items[3])
    last = transaction_id(items[15])
    assert len({small, big, last}) == 3
    assert boundaries == [
        ("BEGIN", small, None, None), ("END", small, 3, [("public.items", 2), ("public.tags", 1)]),
        ("BEGIN", big, None, None), ("END", big, 12, [("public.items", 12)]),
        ("BEGIN", last, None, None), ("END", last, 1, [("public.items", 1)]),
    ]
    assert first["transaction"] == {"id": small, "total_order": 1, "data_collection_order": 1}
    assert tags[0]["transaction"] == {"id": small, "total_order": 2, "data_collection_order": 1}
    assert update["transaction"] == {"id": small, "total_order": 3, "data_collection_order": 2}
    assert [v["transaction"] for v in items[3:15]] == [
        {"id": big, "total_order": n, "data_collection_order": n} for n in range(1, 13)]
    assert items[15]["op"] == "d" and items[15]["transaction"] == {"id": last, "total_order": 1,
                                                                   "data_collection_order": 1}
    assert items[16] is None  # the tombstone is no event of the transaction
    # the big transaction spanned Kafka batches: offsets in between kept its open state
    states = [json.loads(r.value).get("transaction") for r in read_topic(bootstrap, f"{name}.offsets")]
    carried = [s for s in states if s and s["id"] == big]
    assert carried and all(0 < s["total"] < 12 for s in carried)
    assert not states[-1]  # ended


def start(module: str, config_path, bootstrap, log_path) -> subprocess.Popen:
    with open(log_path, "ab") as log:
        return subprocess.Popen([sys.executable, "-m", module, "run", str(config_path), "--bootstrap-servers",
                                 bootstrap], stdout=log, stderr=subprocess.STDOUT, cwd=REPO)


def test_kill_minus_nine_inside_a_transaction_then_restart(pg_db, stack, tmp_path, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "pgtk" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE items (id int PRIMARY KEY, label text)")
    pg_db.execute("INSERT INTO items VALUES (0, 'snapshot')")
    config_path = write_connector_json(pg_db, name, tmp_path, **{"max.batch.size": 8,
                                                                 "provide.transaction.metadata": "true"})
    log_path = tmp_path / "runner.log"
    topic = f"{name}.public.items"

    runner = start("tests.integration.held_mid_transaction", config_path, bootstrap, log_path)
    try:
        events(bootstrap, topic, 1)
        pg_db.execute("INSERT INTO items SELECT g, 'big' FROM generate_series(1, 40) g")
        deadline = time.monotonic() + 60
        held = None
        while held is None:  # the runner committed part of the transaction and holds there
            assert runner.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            offsets = read_topic(bootstrap, f"{name}.offsets")
            held = json.loads(offsets[-1].value).get("transaction") if offsets else None
            time.sleep(0.1)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(10)
        assert 0 < held["total"] < 40 and held["per_collection"] == {"public.items": held["total"]}
        assert len(read_topic(bootstrap, topic)) == 1 + held["total"]  # read_committed: only the committed part
        runner = start("connectors", config_path, bootstrap, log_path)
        boundaries = by_status(events(bootstrap, f"{name}.transaction", 2))
        values = payloads(events(bootstrap, topic, 41))
    finally:
        runner.send_signal(signal.SIGTERM)
        runner.wait(60)
    assert boundaries == [("BEGIN", held["id"], None, None), ("END", held["id"], 40, [("public.items", 40)])]
    assert [v["after"]["id"] for v in values[1:]] == list(range(1, 41))
    assert [v["transaction"] for v in values[1:]] == [
        {"id": held["id"], "total_order": n, "data_collection_order": n} for n in range(1, 41)]
    assert transaction_id(values[1]) == held["id"]
    time.sleep(1)  # nothing more comes: no second BEGIN/END, no repeated event
    assert len(read_topic(bootstrap, f"{name}.transaction")) == 2 and len(read_topic(bootstrap, topic)) == 41
