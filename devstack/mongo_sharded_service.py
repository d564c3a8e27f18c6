"""An emulated sharded MongoDB cluster as a service of the stack (`python -m devstack up mongo-sharded`): a mongos
on DEVSTACK_MONGO_SHARDED_PORT (default the replica set's port + 40), then a config server replica set and
DEVSTACK_MONGO_SHARDS shards of DEVSTACK_MONGO_MEMBERS members on the ports after it. Started only when named;
`status` and `down` handle it like the other services. The cluster keeps no data directory: it starts empty."""

from __future__ import annotations

import os
import sys

from devstack import settings
from devstack.mongo_service import emulator_available
from devstack.process import ManagedProcess, StackError, port_in_use, wait_until

process = ManagedProcess("mongo-sharded")


def port() -> int:
    return int(os.environ.get("DEVSTACK_MONGO_SHARDED_PORT") or settings.MONGO_PORT + 40)


def shards() -> int:
    return int(os.environ.get("DEVSTACK_MONGO_SHARDS", "2"))


def uri() -> str:
    return f"mongodb://127.0.0.1:{port()}/"


def ports() -> list[int]:
    """mongos, then the config server's and each shard's members (as `devstack.mongo --shards` lays them out)."""
    return list(range(port(), port() + 1 + settings.MONGO_MEMBERS * (shards() + 1)))


def serves() -> bool:
    """mongos answers and lists every shard."""
    import pymongo

    try:
        client = pymongo.MongoClient(uri(), serverSelectionTimeoutMS=1000)
        try:
            return len(list(client.config.shards.find())) == shards()
        finally:
            client.close()
    except Exception:
        return False


def up() -> str:
    if not emulator_available():
        return "emulator not built yet (skipped)"
    if process.is_running():
        wait_until(serves, 60, "the sharded cluster to answer through mongos", process)
        return "already running"
    taken = [p for p in ports() if port_in_use(p)]
    if taken:
        raise StackError(
            f"port(s) {taken} are taken by another program, so the sharded MongoDB emulator cannot start. Stop it "
            "or choose other ports with DEVSTACK_MONGO_SHARDED_PORT."
        )
    process.start([
        sys.executable, "-m", "devstack.mongo", "--shards", str(shards()), "--members", str(settings.MONGO_MEMBERS),
        "--port", str(port()),
    ], cwd=settings.PROJECT_ROOT)
    wait_until(serves, 60, "the sharded cluster to answer through mongos", process)
    return f"started: {uri()} (mongos; {shards()} shards of {settings.MONGO_MEMBERS} members)"


def down() -> bool:
    return process.stop()
