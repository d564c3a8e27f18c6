"""`python -m devstack up mongo-sharded` starts an emulated sharded cluster (mongos, config server, two shards) as a
service of the stack; `status` shows it with its mongos URI, `down mongo-sharded` stops it; a bare `up` leaves it
alone. Run as the CLI runs, in separate processes, on a home and ports of its own."""

from __future__ import annotations

import os
import subprocess
import sys

import pymongo

from devstack import settings
from devstack.mongo.emulator import find_free_ports


def test_up_status_down_mongo_sharded(tmp_path):
    members = 1
    mongos = find_free_ports(1 + members * 3)[0]
    env = {**os.environ, "DEVSTACK_HOME": str(tmp_path), "DEVSTACK_MONGO_SHARDED_PORT": str(mongos),
           "DEVSTACK_MONGO_MEMBERS": str(members)}
    env.pop("MONGODB_URI", None)

    def devstack(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "devstack", *args], env=env, cwd=settings.PROJECT_ROOT,
                              capture_output=True, text=True, timeout=180)

    started = devstack("up", "mongo-sharded")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        uri = f"mongodb://127.0.0.1:{mongos}/"
        assert f"started: {uri}" in started.stdout, started.stdout
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
        try:
            assert client.admin.command("hello")["msg"] == "isdbgrid"
            assert [s["_id"] for s in client.admin.command("listShards")["shards"]] == ["shard0", "shard1"]
        finally:
            client.close()
        status = devstack("status").stdout
        line = next(line for line in status.splitlines() if line.startswith("mongo-sharded "))
        assert "running (pid" in line and uri in line, status
        again = devstack("up", "mongo-sharded")
        assert "already running" in again.stdout, again.stdout + again.stderr
    finally:
        stopped = devstack("down", "mongo-sharded")
    assert "mongo-sharded" in stopped.stdout and "stopped" in stopped.stdout, stopped.stdout + stopped.stderr
    line = next(line for line in devstack("status").stdout.splitlines() if line.startswith("mongo-sharded "))
    assert "stopped" in line, line
