"""Standalone mode: one mongod started without --replSet, as drivers and the connector see it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pymongo
import pytest
from pymongo import monitoring
from pymongo.errors import OperationFailure

from devstack.mongo import start_standalone

ROOT = Path(__file__).resolve().parents[2]


class _Replies(monitoring.CommandListener):
    def __init__(self):
        self.replies = []

    def started(self, event):
        pass

    def succeeded(self, event):
        self.replies.append(event.reply)

    def failed(self, event):
        pass


@pytest.fixture(scope="module")
def standalone():
    handle = start_standalone()
    yield handle
    handle.stop()


@pytest.fixture
def client(standalone):
    c = pymongo.MongoClient(standalone.uri, serverSelectionTimeoutMS=5000)
    yield c
    c.close()


def test_hello_has_no_replica_set_fields_and_pymongo_sees_a_standalone(standalone, client):
    assert standalone.uri == f"mongodb://{standalone.hosts[0]}/"
    hello = client.admin.command("hello")
    assert hello["isWritablePrimary"] is True and hello["maxWireVersion"] == 21
    for field in ("setName", "hosts", "primary", "secondary", "me", "setVersion", "electionId", "lastWrite"):
        assert field not in hello
    client.admin.command("ping")
    assert client.topology_description.topology_type_name == "Single"
    (server,) = client.topology_description.server_descriptions().values()
    assert server.server_type_name == "Standalone"


def test_change_stream_fails_with_the_servers_error(client):
    client.shop.orders.insert_one({"_id": 1})
    for watch in (client.shop.orders.watch, client.shop.watch, client.watch):
        with pytest.raises(OperationFailure) as error:
            watch()
        assert error.value.code == 40573
        assert error.value.details["errmsg"] == "The $changeStream stage is only supported on replica sets"
        assert error.value.details["codeName"] == "Location40573"


def test_crud_works_without_cluster_time_or_oplog(standalone):
    listener = _Replies()
    c = pymongo.MongoClient(standalone.uri, event_listeners=[listener])
    try:
        coll = c.shop.items
        coll.insert_many([{"_id": i, "n": i} for i in range(5)])
        coll.update_one({"_id": 1}, {"$inc": {"n": 10}})
        assert [d["n"] for d in coll.find(sort=[("_id", 1)])] == [0, 11, 2, 3, 4]
        assert listener.replies
        for reply in listener.replies:
            assert "$clusterTime" not in reply and "operationTime" not in reply
            assert "opTime" not in reply and "electionId" not in reply
        assert "oplog.rs" not in c.local.list_collection_names()
        assert c.local["oplog.rs"].count_documents({}) == 0
    finally:
        c.close()


def test_replication_commands_and_transactions_are_refused(client):
    for command in ("replSetGetStatus", "replSetGetConfig", "replSetStepDown"):
        with pytest.raises(OperationFailure) as error:
            client.admin.command(command)
        assert (error.value.code, error.value.details["codeName"]) == (76, "NoReplicationEnabled")
    with client.start_session() as session, pytest.raises(OperationFailure) as error:
        with session.start_transaction():
            client.shop.t.insert_one({"x": 1}, session=session)
    assert error.value.code == 20
    assert "only allowed on a replica set member or mongos" in str(error.value)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_devstack_cli_standalone_mode():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "devstack", "mongo", "--standalone", "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        line = proc.stdout.readline().strip()
        assert line == f"mongodb://127.0.0.1:{port}/", proc.stderr.read()
        c = pymongo.MongoClient(line, serverSelectionTimeoutMS=5000)
        assert "setName" not in c.admin.command("hello")
        with pytest.raises(OperationFailure) as error:
            c.db.coll.watch()
        assert error.value.code == 40573
        c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0


def test_cli_refuses_replica_set_options_with_standalone():
    done = subprocess.run([sys.executable, "-m", "devstack.mongo", "--standalone", "--members", "3"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "--standalone serves one server" in done.stderr
