"""The emulator process: replica sets, their member servers and background tasks, on one asyncio loop."""

from __future__ import annotations

import asyncio
import logging
import random
import socket

from devstack.mongo import persistence
from devstack.mongo.checkpoints import Checkpointer
from devstack.mongo.config import EmulatorConfig
from devstack.mongo.replset import SECONDARY, ReplicaSet
from devstack.mongo.server import Connection

log = logging.getLogger("devstack.mongo")


def _port_free(port: int, bind: str) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((bind, port))
        except OSError:
            return False
    return True


def find_free_ports(n: int, bind: str = "127.0.0.1", taken: set | None = None) -> list[int]:
    """n consecutive free ports."""
    taken = taken or set()
    for _ in range(200):
        base = random.randint(20000, 60000 - n)
        ports = list(range(base, base + n))
        if not taken.intersection(ports) and all(_port_free(p, bind) for p in ports):
            return ports
    raise OSError(f"could not find {n} consecutive free ports")


class Emulator:
    def __init__(self, configs: list[EmulatorConfig]):
        self.configs = configs
        self.replica_sets: list[ReplicaSet] = []
        self._tasks: list[asyncio.Task] = []
        self._conn_tasks: set[asyncio.Task] = set()
        self._checkpointers: dict[str, Checkpointer] = {}
        self.started = False

    async def start(self):
        taken: set[int] = set()
        for config in self.configs:
            ports = None
            if config.port == 0 and config.data_dir:
                ports = persistence.saved_ports(config)
                if ports and not all(_port_free(p, config.bind) for p in ports):
                    ports = None
            if ports is None:
                if config.port == 0:
                    ports = find_free_ports(config.members, config.bind, taken)
                else:
                    ports = [config.port + i for i in range(config.members)]
            taken.update(ports)
            rs = self.new_replica_set(config, ports)
            restored = bool(config.data_dir) and persistence.load(rs)
            if config.data_dir:
                rs.checkpoint = lambda rs=rs: persistence.save(rs)
            for m in rs.members:
                await self.start_member_server(m)
                m.alive = True
                m.state = SECONDARY
            if not restored and not config.standalone:
                rs.log_noop("initiating set")
            rs.elect(candidate=rs.members[0])
            self.replica_sets.append(rs)
            loop = asyncio.get_running_loop()
            if not config.standalone:
                self._tasks.append(loop.create_task(rs.noop_writer()))
            self._tasks.append(loop.create_task(rs.session_reaper()))
            if config.data_dir:
                checkpointer = self._checkpointers[rs.name] = Checkpointer(rs)
                self._tasks.append(loop.create_task(checkpointer.run()))
        self.started = True

    def new_replica_set(self, config: EmulatorConfig, ports: list[int]) -> ReplicaSet:
        return ReplicaSet(config, ports)

    async def start_member_server(self, member):
        async def on_connect(reader, writer):
            sock = writer.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    pass
            conn = Connection(member, reader, writer, self.start_member_server)
            task = asyncio.current_task()
            self._conn_tasks.add(task)
            try:
                await conn.serve()
            except asyncio.CancelledError:
                pass  # shutting down: end the connection task quietly
            finally:
                self._conn_tasks.discard(task)
                try:
                    writer.close()
                except Exception:  # noqa: S110 - the peer may be gone already
                    pass

        member.server = await asyncio.start_server(on_connect, member.rs.config.bind, member.port,
                                                   reuse_address=True, limit=2**20)

    async def stop(self):
        for t in self._tasks:
            t.cancel()
        for rs in self.replica_sets:
            if rs.config.data_dir:
                try:
                    if rs.name in self._checkpointers:
                        self._checkpointers[rs.name].wait()
                    persistence.save(rs)
                except Exception:
                    log.exception("final checkpoint of %s failed", rs.name)
            for m in rs.members:
                if m.server is not None:
                    m.server.close()
                    m.server = None
                m.drop_connections()
                m.alive = False
            rs.oplog.wake_all()
        for t in list(self._conn_tasks):
            t.cancel()
        await asyncio.sleep(0)
        self.started = False

    def uri(self, rs: ReplicaSet) -> str:
        return server_uri(rs.hosts, rs.name, rs.standalone)


def server_uri(hosts: list[str], set_name: str, standalone: bool) -> str:
    if standalone:
        return f"mongodb://{hosts[0]}/"
    return f"mongodb://{','.join(hosts)}/?replicaSet={set_name}"
