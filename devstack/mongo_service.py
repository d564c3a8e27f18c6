"""The MongoDB side of the stack: the replica-set emulator, unless MONGODB_URI names a real deployment."""

from __future__ import annotations

import importlib.util
import os
import sys

from devstack import settings
from devstack.process import ManagedProcess, StackError, port_in_use, wait_until

process = ManagedProcess("mongo")


def emulator_available() -> bool:
    return importlib.util.find_spec("devstack.mongo.cli") is not None


def uses_real_mongodb() -> bool:
    return bool(os.environ.get("MONGODB_URI"))


def has_primary(uri: str | None = None) -> bool:
    import pymongo

    try:
        client = pymongo.MongoClient(uri or settings.mongodb_uri(), serverSelectionTimeoutMS=1000)
        try:
            client.admin.command("ping")
            return client.primary is not None
        finally:
            client.close()
    except Exception:
        return False


def up() -> str:
    if uses_real_mongodb():
        return "using MONGODB_URI (not started by devstack)"
    if not emulator_available():
        return "emulator not built yet (skipped)"
    if process.is_running():
        wait_until(has_primary, 30, "the emulator to elect a primary", process)
        return "already running"
    ports = [settings.MONGO_PORT + i for i in range(settings.MONGO_MEMBERS)]
    taken = [p for p in ports if port_in_use(p)]
    if taken:
        raise StackError(
            f"port(s) {taken} are taken by another program, so the MongoDB emulator cannot start. Stop it, "
            "choose other ports with DEVSTACK_MONGO_PORT, or point MONGODB_URI at a real deployment."
        )
    data_dir = settings.STATE_DIR / "mongo"
    data_dir.mkdir(parents=True, exist_ok=True)
    process.start([
        sys.executable, "-m", "devstack.mongo", "--members", str(settings.MONGO_MEMBERS),
        "--port", str(settings.MONGO_PORT), "--replset", settings.MONGO_REPLSET, "--data-dir", str(data_dir),
    ], cwd=settings.PROJECT_ROOT)
    wait_until(has_primary, 30, "the emulator to elect a primary", process)
    return f"started: {settings.emulator_uri()}"


def down() -> bool:
    return process.stop()
