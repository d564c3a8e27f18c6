"""An emulated sharded cluster: a config server replica set, N shard replica sets and a `mongos` router, served
by one emulator process (one asyncio loop), like `python -m devstack mongo --shards 2 --members 3` runs it.

Ports are consecutive from the first one: mongos, then the config servers, then each shard's members.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from dataclasses import replace

from bson.objectid import ObjectId

from devstack.mongo import mongos_commands, mongos_crud, mongos_streams  # noqa: F401 - they register their commands
from devstack.mongo.cluster import ClusterClock, ClusterReplicaSet, ShardedCluster
from devstack.mongo.config import EmulatorConfig
from devstack.mongo.emulator import Emulator, find_free_ports
from devstack.mongo.mongos import Router, RouterConnection

log = logging.getLogger("devstack.mongo")
CONFIG_SET = "configRepl"


def cluster_configs(shards: int, members: int, port: int, base: EmulatorConfig) -> tuple[int, list[EmulatorConfig]]:
    """The mongos port and the replica sets' configs (config servers first, then shard0, shard1, ...)."""
    if port == 0:
        ports = find_free_ports(1 + members * (shards + 1), base.bind)
        port = ports[0]
    names = [CONFIG_SET] + [f"shard{i}" for i in range(shards)]
    configs = [replace(base, replset=name, members=members, port=port + 1 + i * members, data_dir=None)
               for i, name in enumerate(names)]
    return port, configs


class ShardedEmulator(Emulator):
    def __init__(self, shards: int = 2, members: int = 3, port: int = 0, base: EmulatorConfig | None = None):
        base = base or EmulatorConfig()
        self.mongos_port, configs = cluster_configs(shards, members, port, base)
        super().__init__(configs)
        self.base = base
        self.clock = ClusterClock()
        self.cluster: ShardedCluster | None = None
        self.router: Router | None = None
        self._router_conns: set[asyncio.Task] = set()

    def new_replica_set(self, config, ports):
        return ClusterReplicaSet(config, ports, self.clock)

    async def start(self):
        await super().start()
        self.cluster = ShardedCluster(self.replica_sets[0], self.replica_sets[1:], self.clock)
        self.cluster.write_shards()
        self.router = Router(self.cluster, self.base.host, self.mongos_port, self.base)
        await self.start_router()
        self._tasks.append(asyncio.get_running_loop().create_task(self.cluster.balancer()))

    async def start_router(self):
        router = self.router

        async def on_connect(reader, writer):
            sock = writer.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    pass
            conn = RouterConnection(router, reader, writer, None)
            task = asyncio.current_task()
            self._conn_tasks.add(task)
            try:
                await conn.serve()
            except asyncio.CancelledError:
                pass
            finally:
                self._conn_tasks.discard(task)
                try:
                    writer.close()
                except Exception:  # noqa: S110 - the peer may be gone already
                    pass

        router.server = await asyncio.start_server(on_connect, self.base.bind, router.port, reuse_address=True,
                                                   limit=2**20)
        router.alive = True

    async def stop_router(self):
        router = self.router
        if router.server is not None:
            router.server.close()
            router.server = None
        router.alive = False
        router.drop_connections()
        for cursor in list(router.cursors.cursors.values()):
            close = getattr(cursor, "close", None)
            if close is not None:
                close()
        router.cursors.cursors.clear()
        router.txns.clear()

    async def restart_router(self):
        """mongos goes away (connections, cursors and routed transactions lost) and comes back."""
        await self.stop_router()
        self.router.process_id = ObjectId()
        await self.start_router()

    async def stop(self):
        if self.router is not None:
            await self.stop_router()
        await super().stop()

    @property
    def mongos_uri(self) -> str:
        return f"mongodb://{self.base.host}:{self.mongos_port}/"
