"""The in-process API of an emulated sharded cluster (for pytest fixtures):

    with start_sharded_cluster(shards=2, members=3) as cluster:
        client = pymongo.MongoClient(cluster.uri)         # mongos
        cluster.shard(0).step_down()                       # a ReplicaSetHandle per shard
        cluster.move_chunk("db.c", {"k": 10}, "shard1")
"""

from __future__ import annotations

from devstack.mongo.config import EmulatorConfig
from devstack.mongo.handle import EmulatorThread, ReplicaSetHandle
from devstack.mongo.sharded import ShardedEmulator


class ShardedClusterHandle:
    def __init__(self, runner: EmulatorThread):
        self._runner = runner
        self._emulator: ShardedEmulator = runner.emulator

    @property
    def uri(self) -> str:
        return self._emulator.mongos_uri

    @property
    def shard_names(self) -> list[str]:
        return list(self._emulator.cluster.shards)

    def shard(self, index: int) -> ReplicaSetHandle:
        return ReplicaSetHandle(self._runner, 1 + index, owns_runner=False)

    @property
    def config_server(self) -> ReplicaSetHandle:
        return ReplicaSetHandle(self._runner, 0, owns_runner=False)

    def shard_collection(self, ns: str, key: dict, unique: bool = False):
        self._runner.call(lambda: self._emulator.cluster.shard_collection(ns, key, unique))

    def split(self, ns: str, middle: dict):
        self._runner.call(lambda: self._emulator.cluster.split(ns, middle))

    def move_chunk(self, ns: str, find: dict, to: str) -> int:
        async def run():
            cluster = self._emulator.cluster
            return await cluster.move_chunk_when_idle(ns, cluster.find_chunk(ns, find), to)
        return self._runner.call(run)

    def move_chunk_at(self, ns: str, index: int) -> int:
        """Move the collection's chunk number `index` (modulo their count) to the next shard."""
        async def run():
            cluster = self._emulator.cluster
            chunks = cluster.sharded(ns).chunks
            chunk = chunks[index % len(chunks)]
            names = list(cluster.shards)
            to = names[(names.index(chunk.shard) + 1) % len(names)]
            return await cluster.move_chunk_when_idle(ns, chunk, to)
        return self._runner.call(run)

    def set_mongos_delay(self, ms: float, commands: list[str] | None = None):
        """Delay mongos's replies (to the given commands, or all); 0 clears."""
        def run():
            router = self._emulator.router
            if commands:
                for name in commands:
                    router.command_delays[name] = ms
            else:
                router.reply_delay_ms = ms
                if not ms:
                    router.command_delays.clear()
        self._runner.call(run)

    def chunks(self, ns: str) -> list[dict]:
        def run():
            coll = self._emulator.cluster.sharded(ns)
            return [{"min": c.min, "max": c.max, "shard": c.shard} for c in coll.chunks]
        return self._runner.call(run)

    def set_balancer(self, on: bool):
        self._runner.call(lambda: self._emulator.cluster.set_balancer(on))

    def migrations(self) -> int:
        return self._runner.call(lambda: self._emulator.cluster.migrations)

    def mongos_fail_points(self) -> MongosFailPoints:
        return MongosFailPoints(self)

    def restart_mongos(self):
        self._runner.call(self._emulator.restart_router)

    def stop(self):
        self._runner.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class MongosFailPoints:
    """The fail points of mongos, with a replica set handle's `hosts`/`configure_fail_point` (for test runners)."""

    def __init__(self, cluster: ShardedClusterHandle):
        self._cluster = cluster
        self.hosts = [cluster.uri.removeprefix("mongodb://").rstrip("/")]

    def configure_fail_point(self, mode, data: dict | None = None, index: int | None = None,
                             name: str = "failCommand") -> None:
        router = self._cluster._emulator.router
        self._cluster._runner.call(lambda: router.failpoints.configure(name, mode, data or {}))


def start_sharded_cluster(shards: int = 2, members: int = 3, port: int = 0, **options) -> ShardedClusterHandle:
    """Start a config server replica set, `shards` shard replica sets of `members` members each and a mongos, on
    a background thread. Options are `EmulatorConfig` fields (election_timeout, noop_interval...)."""
    base = EmulatorConfig(**options)
    emulator = ShardedEmulator(shards, members, port, base)
    return ShardedClusterHandle(EmulatorThread([], emulator).start())
