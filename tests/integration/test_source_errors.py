"""Clear errors for a wrong password, unreachable hosts and a server that is not a replica set (the emulator's
standalone mode)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pymongo
import pytest

from connectors import AuthenticationFailed, SourceUnreachable
from connectors.config.types import CaptureScope
from connectors.core.metrics import StreamingMetrics
from connectors.core.stream import Backoff, ReaderFailed
from connectors.mongodb.errors import NotAReplicaSet
from connectors.mongodb.filters import WatchTarget
from connectors.mongodb.stream import ChangeStreamReader, StartPosition, StreamOptions
from connectors.mongodb.topology import discover
from connectors.runner import ConnectorRunner
from tests.integration.pipeline_harness import connector_config
from tests.reader_queue import ReaderQueue

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_hosts_name_the_hosts(stack):
    port = _free_port()
    config = connector_config("unreachable", f"mongodb://127.0.0.1:{port}/?replicaSet=rs0",
                              mongodb__server__selection__timeout__ms=500)
    with pytest.raises(SourceUnreachable) as error:
        discover(config.mongo_client_options())
    assert f"127.0.0.1:{port}" in str(error.value) and "cannot reach MongoDB" in str(error.value)


def test_wrong_password_names_the_user_never_the_password(stack, mongo_rs):
    if not hasattr(mongo_rs, "step_down"):
        pytest.skip("the emulator refuses every credential; a real server needs a user set up for this test")
    config = connector_config("badauth", mongo_rs.uri, mongodb__user="reporter", mongodb__password="s3cr3t-pw")
    with pytest.raises(AuthenticationFailed) as error:
        discover(config.mongo_client_options())
    assert "'reporter'" in str(error.value) and "mongodb.password" in str(error.value)
    assert "s3cr3t-pw" not in str(error.value)


@pytest.fixture(scope="module")
def standalone():
    """A mongod that is not a replica set member (the emulator's standalone mode)."""
    if os.environ.get("MONGODB_URI"):
        pytest.skip("needs the emulator's standalone mode")
    from devstack.mongo import start_standalone

    handle = start_standalone()
    yield handle
    handle.stop()


def _says_standalone_and_the_fix(message: str, host: str) -> None:
    assert host in message
    assert "standalone server, not a" in message and "replica set" in message
    assert "--replSet" in message and "rs.initiate()" in message
    assert "Traceback" not in message


@pytest.mark.parametrize("uri_options", ["", "?replicaSet=rs0"], ids=["plain-uri", "uri-asks-for-rs0"])
def test_standalone_server_is_refused_with_the_fix(stack, standalone, unique_name, uri_options):
    config = connector_config(unique_name, standalone.uri + uri_options, mongodb__server__selection__timeout__ms=1500)
    runner = ConnectorRunner(config, stack.kafka_bootstrap)
    with pytest.raises(NotAReplicaSet) as error:
        runner.run()
    _says_standalone_and_the_fix(str(error.value), standalone.hosts[0])
    assert not runner.pipelines


def test_standalone_server_fails_the_cli_run_without_a_traceback(stack, standalone, unique_name, tmp_path):
    config = {"name": unique_name, "topic.prefix": unique_name, "mongodb.connection.string": standalone.uri,
              "offset.storage.topic": f"{unique_name}.offsets"}
    path = tmp_path / "connector.json"
    path.write_text(json.dumps({"name": unique_name, "config": config}))
    done = subprocess.run([sys.executable, "-m", "connectors", "run", str(path), "--bootstrap-servers",
                           stack.kafka_bootstrap], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error: MongoDB at "), done.stderr
    _says_standalone_and_the_fix(done.stderr, standalone.hosts[0])


def test_change_stream_refused_by_a_standalone_fails_at_once(standalone):
    """A server that answers $changeStream with 40573 (it was restarted without --replSet) is not retried."""
    client = pymongo.MongoClient(standalone.uri, serverSelectionTimeoutMS=5000)
    out = ReaderQueue()
    reader = ChangeStreamReader(client, WatchTarget(CaptureScope.DATABASE, "inventory"), [], StreamOptions(),
                                StartPosition(), out, StreamingMetrics("standalone", "rs0"),
                                Backoff(initial_ms=60_000, max_attempts=16), threading.Event())
    try:
        reader.start()
        item = out.get(timeout=30)
        assert isinstance(item, ReaderFailed)
        assert isinstance(item.error, NotAReplicaSet)
        assert "standalone server" in str(item.error) and "--replSet" in str(item.error)
        reader.join(10)
    finally:
        client.close()
