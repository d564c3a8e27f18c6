"""The CLI (a separate process, as `python -m devstack up` runs it) and persistence to a data directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import bson
import pymongo
import pytest

from devstack.mongo import start_replica_set
from devstack.mongo.emulator import find_free_ports
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


def _start_cli(*args):
    proc = subprocess.Popen([sys.executable, "-m", "devstack.mongo", "--port", "0", "--noop-interval", "0", *args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = proc.stdout.readline().strip()
    assert line.startswith("mongodb://"), proc.stderr.read()
    return proc, line


def _stop(proc):
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0


def test_cli_prints_uri_and_stops_cleanly_on_sigterm():
    proc, uri = _start_cli("--members", "3", "--replset", "clirs")
    try:
        assert uri.endswith("/?replicaSet=clirs") and uri.count(",") == 2
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
        client.t.c.insert_one({"x": 1})
        # the write proves only that the primary was discovered: pymongo monitors each member on its own thread
        wait_for(lambda: len(client.secondaries) == 2, 30, "pymongo to discover both secondaries")
        client.close()
    finally:
        _stop(proc)


def test_done_when_three_member_rs0_as_devstack_runs_it(tmp_path):
    """The issue's "done when", on an emulator process started the way `python -m devstack up` starts it (only
    the ports differ from 27017-27019): pymongo discovers rs0 from the three seeds, sees a primary and two
    secondaries, writes, watches, and the watch survives a step-down with no lost or repeated event."""
    ports = find_free_ports(3)
    proc = subprocess.Popen([sys.executable, "-m", "devstack", "mongo", "--members", "3", "--port", str(ports[0]),
                             "--replset", "rs0", "--data-dir", str(tmp_path)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        uri = proc.stdout.readline().strip()
        assert uri == f"mongodb://{','.join(f'127.0.0.1:{p}' for p in ports)}/?replicaSet=rs0", proc.stderr.read()
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
        coll = client.shop.orders
        coll.insert_one({"_id": -1})
        # pymongo monitors each member on its own thread: the write only proves the primary was discovered
        discovery_deadline = time.monotonic() + 30
        while len(client.secondaries) < 2 and time.monotonic() < discovery_deadline:
            time.sleep(0.1)
        assert client.primary is not None and len(client.secondaries) == 2
        assert {client.primary, *client.secondaries} == {("127.0.0.1", p) for p in ports}
        old_primary = client.primary
        seen: list = []
        with coll.watch(max_await_time_ms=100) as stream:
            def read():
                deadline = time.monotonic() + 60
                while len(seen) < 200 and time.monotonic() < deadline:
                    try:
                        change = stream.try_next()
                    except pymongo.errors.ConnectionFailure:
                        # as with mongod: the one automatic resume can land on the old primary before the
                        # driver has seen the election (NotPrimaryError); the next try_next resumes again
                        time.sleep(0.05)
                        continue
                    if change is not None:
                        seen.append(change["documentKey"]["_id"])
            reader = threading.Thread(target=read)
            reader.start()
            for i in range(200):
                coll.insert_one({"_id": i})
                if i == 80:
                    client.admin.command("replSetStepDown", 10)
            reader.join(70)
        assert seen == list(range(200))
        wait_for(lambda: client.primary not in (None, old_primary) and len(client.secondaries) == 2, 30,
                 "pymongo to see the new primary and two secondaries")
        assert client.admin.command("replSetGetStatus")["set"] == "rs0"
        client.close()
    finally:
        _stop(proc)


def test_cli_serves_several_replica_sets():
    proc, first = _start_cli("--members", "1", "--replsets", "2")
    try:
        second = proc.stdout.readline().strip()
        assert first.endswith("replicaSet=rs0") and second.endswith("replicaSet=rs1")
        a, b = pymongo.MongoClient(first), pymongo.MongoClient(second)
        a.t.c.insert_one({"in": "rs0"})
        assert b.t.c.count_documents({}) == 0
        assert a.admin.command("hello")["setName"] != b.admin.command("hello")["setName"]
        a.close()
        b.close()
    finally:
        _stop(proc)


def test_cli_admin_commands_drive_faults_in_another_process():
    proc, uri = _start_cli()
    try:
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
        old = client.admin.command("emulatorStatus")["primary"]
        client.admin.command("emulatorStepDown", seconds=5)
        deadline = time.monotonic() + 10
        while client.admin.command("emulatorStatus")["primary"] in (None, old) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.admin.command("emulatorStatus")["primary"] not in (None, old)
        client.t.c.insert_one({"after": "stepdown"})
        client.close()
    finally:
        _stop(proc)


def test_data_directory_survives_a_restart_with_resume_tokens(tmp_path):
    proc, uri = _start_cli("--data-dir", str(tmp_path), "--replset", "persist")
    client = pymongo.MongoClient(uri)
    coll = client.t.c
    coll.create_index("k", unique=True)
    with coll.watch() as stream:
        coll.insert_one({"_id": 1, "k": "a"})
        token = stream.next()["_id"]
    coll.insert_one({"_id": 2, "k": "b"})
    client.close()
    _stop(proc)
    assert (tmp_path / "persist" / "oplog.bson").exists()

    proc, uri2 = _start_cli("--data-dir", str(tmp_path), "--replset", "persist")
    try:
        assert uri2 == uri          # the same ports again
        client = pymongo.MongoClient(uri2)
        coll = client.t.c
        assert [d["_id"] for d in coll.find()] == [1, 2]
        assert [i["name"] for i in coll.list_indexes()] == ["_id_", "k_1"]
        with pytest.raises(pymongo.errors.DuplicateKeyError):
            coll.insert_one({"k": "a"})
        with coll.watch(resume_after=token) as stream:
            assert stream.next()["documentKey"] == {"_id": 2}
        hello = client.admin.command("hello")
        assert int(hello["electionId"].binary[4:].hex(), 16) >= 2   # a new term after the restart
        client.close()
    finally:
        _stop(proc)


def _checkpointed_ids(directory: Path) -> list:
    try:
        documents = bson.decode_all((directory / "catalog.bson").read_bytes())
    except FileNotFoundError:  # between the two renames of a checkpoint
        return []
    return [d["_id"] for chunk in documents for d in chunk.get("docs", [])]


def test_a_background_checkpoint_holds_the_writes_before_it_after_a_kill9(tmp_path):
    """Checkpoints while serving are written by a forked child; what it wrote is what a restart after kill -9
    (no final checkpoint) finds."""
    proc, uri = _start_cli("--data-dir", str(tmp_path), "--replset", "bg")
    try:
        client = pymongo.MongoClient(uri)
        client.t.c.insert_many([{"_id": i, "pad": "x" * 100} for i in range(2_000)])
        deadline = time.monotonic() + 60
        while len(_checkpointed_ids(tmp_path / "bg")) < 2_000:
            assert time.monotonic() < deadline, "no checkpoint came"
            time.sleep(0.2)
        client.t.c.insert_one({"_id": "served-after-a-checkpoint"})
        client.close()
    finally:
        proc.kill()
        proc.wait(20)
    proc, uri = _start_cli("--data-dir", str(tmp_path), "--replset", "bg")
    try:
        client = pymongo.MongoClient(uri)
        ids = {d["_id"] for d in client.t.c.find({}, {"_id": 1})}
        assert set(range(2_000)) <= ids
        client.close()
    finally:
        _stop(proc)


def test_in_process_checkpoint_and_reload(tmp_path):
    rs = start_replica_set(members=1, data_dir=str(tmp_path), replset="inproc", noop_interval=0)
    client = pymongo.MongoClient(rs.uri)
    client.t.c.insert_many([{"_id": i} for i in range(10)])
    client.close()
    rs.checkpoint()
    rs.stop()
    rs2 = start_replica_set(members=1, data_dir=str(tmp_path), replset="inproc", noop_interval=0)
    try:
        client = pymongo.MongoClient(rs2.uri)
        assert client.t.c.count_documents({}) == 10
        client.close()
    finally:
        rs2.stop()
