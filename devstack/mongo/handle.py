"""The in-process Python API: an emulator on a background thread, driven through a handle.

    from devstack.mongo import start_replica_set

    with start_replica_set(members=3) as rs:
        client = pymongo.MongoClient(rs.uri)
        rs.step_down()            # another member wins with a higher term
        rs.kill_member(0); rs.restart_member(0)
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace

from devstack.mongo.config import EmulatorConfig
from devstack.mongo.emulator import Emulator, server_uri


class EmulatorThread:
    """Runs an Emulator's asyncio loop on a daemon thread."""

    def __init__(self, configs: list[EmulatorConfig], emulator: Emulator | None = None):
        self.emulator = emulator or Emulator(configs)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="mongo-emulator", daemon=True)
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def _run(self):
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.emulator.start())
        except BaseException as exc:  # report start-up failures to the caller
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.emulator.stop())
        pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.close()

    def start(self):
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def call(self, fn, *args, timeout: float = 30.0):
        """Run fn(*args) on the loop thread (awaiting it if it is a coroutine function) and return its result."""
        async def runner():
            result = fn(*args)
            if asyncio.iscoroutine(result):
                result = await result
            return result
        return asyncio.run_coroutine_threadsafe(runner(), self.loop).result(timeout)

    def stop(self):
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(30)


class ReplicaSetHandle:
    """Control of one emulated replica set from tests and fixtures (thread-safe)."""

    def __init__(self, runner: EmulatorThread, index: int = 0, owns_runner: bool = True):
        self._runner = runner
        self._rs = runner.emulator.replica_sets[index]
        self._owns = owns_runner

    # -- description --
    @property
    def name(self) -> str:
        return self._rs.name

    @property
    def hosts(self) -> list[str]:
        return list(self._rs.hosts)

    @property
    def ports(self) -> list[int]:
        return [m.port for m in self._rs.members]

    @property
    def standalone(self) -> bool:
        return self._rs.standalone

    @property
    def uri(self) -> str:
        return server_uri(self.hosts, self.name, self.standalone)

    def member_uri(self, index: int) -> str:
        """A direct connection to one member (for reads on a secondary, faults on one node...)."""
        return f"mongodb://{self.hosts[index]}/?directConnection=true"

    @property
    def term(self) -> int:
        return self._rs.term

    def primary_index(self) -> int | None:
        p = self._runner.call(lambda: self._rs.primary)
        return p.idx if p is not None else None

    def status(self) -> dict:
        def build():
            rs = self._rs
            return {"term": rs.term, "primary": rs.primary.idx if rs.primary else None,
                    "members": [{"index": m.idx, "name": m.name, "state": m.state, "alive": m.alive,
                                 "connections": len(m.connections)} for m in rs.members],
                    "oplog_entries": len(rs.oplog), "oplog_first": rs.oplog.first.ts if rs.oplog.first else None}
        return self._runner.call(build)

    def change_streams_built_ahead(self) -> int:
        """How many change stream cursors hold a batch built ahead of their next getMore (the emulator builds it
        while the client reads the last one): tests gate on it."""
        def count():
            return sum(1 for member in self._rs.members for cursor in member.cursors.cursors.values()
                       if getattr(cursor, "prefetched", None))
        return self._runner.call(count)

    def cpu_seconds(self) -> float:
        """CPU time the emulator's thread has used so far (what its work costs, apart from its clients')."""
        return self._runner.call(time.thread_time)

    # -- elections and faults --
    def wait_for_primary(self, timeout: float = 10.0, not_index: int | None = None) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            idx = self.primary_index()
            if idx is not None and idx != not_index:
                return idx
            time.sleep(0.02)
        raise TimeoutError(f"no primary in replica set {self.name} after {timeout}s")

    def step_down(self, seconds: float = 60, election_delay: float | None = None, wait: bool = True,
                  force: bool = False) -> int | None:
        """Step the primary down; another member wins with a higher term. Returns the new primary's index."""
        old = self.primary_index()
        if old is None:
            raise RuntimeError("there is no primary to step down")
        self._runner.call(lambda: self._rs.step_down(self._rs.members[old], seconds, force, election_delay))
        if wait:
            return self.wait_for_primary(not_index=old if len(self.hosts) > 1 else None)
        return None

    def elect(self, index: int) -> None:
        def run():
            rs = self._rs
            target = rs.members[index]
            if target.is_primary:
                return
            primary = rs.primary
            if primary is not None:
                primary.state = "SECONDARY"
                rs._interrupt(primary)
            target.frozen_until = 0
            rs.elect(candidate=target)
        self._runner.call(run)

    def freeze(self, index: int, seconds: float) -> None:
        self._runner.call(lambda: self._rs.freeze(self._rs.members[index], seconds))

    def kill_member(self, index: int) -> None:
        self._runner.call(self._rs.kill_member, self._rs.members[index])

    def restart_member(self, index: int) -> None:
        self._runner.call(self._rs.restart_member, self._rs.members[index],
                          self._runner.emulator.start_member_server)

    def drop_connections(self, index: int | None = None) -> None:
        def run():
            for m in self._rs.members if index is None else [self._rs.members[index]]:
                m.drop_connections()
        self._runner.call(run)

    def set_delay(self, ms: float, index: int | None = None, commands: list[str] | None = None) -> None:
        def run():
            for m in self._rs.members if index is None else [self._rs.members[index]]:
                if commands:
                    for c in commands:
                        m.command_delays[c] = ms
                else:
                    m.reply_delay_ms = ms
                    if not ms:
                        m.command_delays.clear()
        self._runner.call(run)

    def configure_fail_point(self, mode, data: dict | None = None, index: int | None = None,
                             name: str = "failCommand") -> None:
        def run():
            idx = index if index is not None else (self._rs.primary.idx if self._rs.primary else 0)
            self._rs.members[idx].failpoints.configure(name, mode, data or {})
        self._runner.call(run)

    def set_oplog_limits(self, max_entries: int | None = None, max_bytes: int | None = None) -> None:
        self._runner.call(self._rs.oplog.set_limits, max_entries, max_bytes)

    def noop(self, msg: str = "emulator noop"):
        return self._runner.call(lambda: self._rs.log_noop(msg).ts)

    def checkpoint(self) -> None:
        from devstack.mongo import persistence

        self._runner.call(lambda: persistence.save(self._rs))

    # -- lifecycle --
    def stop(self) -> None:
        if self._owns:
            self._runner.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start_replica_set(members: int = 3, port: int = 0, replset: str = "rs0", **options) -> ReplicaSetHandle:
    """Start an emulated replica set on a background thread. `port=0` picks free consecutive ports.

    Options are the fields of `EmulatorConfig` (host, oplog_max_entries, oplog_max_bytes, election_timeout,
    stepdown_election_delay, noop_interval, kill_cursors_on_stepdown, data_dir, checkpoint_interval...).
    """
    config = EmulatorConfig(members=members, port=port, replset=replset, **options)
    runner = EmulatorThread([config]).start()
    return ReplicaSetHandle(runner)


def start_standalone(port: int = 0, **options) -> ReplicaSetHandle:
    """Start one emulated mongod that is not a replica set member (no setName in hello, no oplog, `$changeStream`
    fails with 40573), for testing how clients handle a standalone server. `uri` has no replicaSet option."""
    options.setdefault("noop_interval", 0)
    config = EmulatorConfig(members=1, port=port, standalone=True, **options)
    return ReplicaSetHandle(EmulatorThread([config]).start())


def start_replica_sets(count: int, members: int = 3, port: int = 0, **options) -> list[ReplicaSetHandle]:
    """Several independent replica sets (rs0, rs1, ...) served by one background emulator."""
    base = EmulatorConfig(members=members, port=port, **options)
    configs = [replace(base, replset=f"{options.get('replset', 'rs')}{i}" if "replset" in options else f"rs{i}",
                       port=(port + i * members) if port else 0) for i in range(count)]
    runner = EmulatorThread(configs).start()
    handles = [ReplicaSetHandle(runner, i, owns_runner=(i == 0)) for i in range(count)]
    return handles
