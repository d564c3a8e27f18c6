"""`--source mongodb-sharded`: an emulated sharded cluster (two shards of three members, a config server replica set
and a mongos), captured through mongos, with chunk migrations running throughout the campaign: the connector must
give 0 lost / 0 duplicated / 0 reordered, and no event for a migration.

The campaign's collections are sharded on a hashed `_id` (two chunks per shard); a mover thread moves one chunk to
the other shard every `MOVE_INTERVAL` seconds. The step-down scenario steps down a shard's primary, source-restart
restarts mongos, source-crash kills a shard's primary (started again once another member is primary).
"""

from __future__ import annotations

import threading
from pathlib import Path

from bench.faults.sources import MongoSource

MOVE_INTERVAL = 0.3


class ChunkMover(threading.Thread):
    def __init__(self, cluster):
        super().__init__(name="chunk-mover", daemon=True)
        self.cluster = cluster
        self.namespaces: list[str] = []
        self.stop = threading.Event()
        self.moves = 0

    def run(self):
        turn = 0
        while not self.stop.wait(MOVE_INTERVAL):
            for ns in list(self.namespaces):
                try:
                    self.cluster.move_chunk_at(ns, turn)
                    self.moves += 1
                except Exception:  # noqa: BLE001, S112 - a shard without primary (step-down): next turn
                    continue
            turn += 1


class ShardedMongoSource(MongoSource):
    kind = "mongodb"
    default_scenarios = ("kill-streaming", "kill-snapshot", "broker-stop", "broker-kill", "step-down",
                         "source-restart", "source-crash")
    scenarios = (*default_scenarios, "broker-stop-commit", "broker-stop-snapshot", "commit-stall")

    def __init__(self, cluster=None):
        super().__init__(None)
        self.cluster = cluster
        self.mover: ChunkMover | None = None

    def start(self, workdir: Path, ports: range | None = None) -> str:
        from devstack.mongo.sharded_handle import start_sharded_cluster
        from devstack.private_kafka import free_ports

        first = free_ports(10, ports)[0] if ports is not None else 0
        self.cluster = start_sharded_cluster(shards=2, members=3, port=first, election_timeout=0.3,
                                             stepdown_election_delay=0.05, noop_interval=0.5)
        self.rs = self.cluster   # uri (mongos) for the writer and the connector
        self.mover = ChunkMover(self.cluster)
        self.mover.start()
        return f"sharded cluster {self.cluster.uri} (2 shards x 3 members), chunks migrating every {MOVE_INTERVAL}s"

    def stop(self) -> None:
        if self.mover is not None:
            self.mover.stop.set()
            self.mover.join(30)
        if self.cluster is not None:
            self.cluster.stop()

    def prepare(self, name: str) -> None:
        for collection in ("events", "preload"):
            ns = f"{name}.{collection}"
            self.cluster.shard_collection(ns, {"_id": "hashed"})
            self.mover.namespaces.append(ns)

    def slow_snapshot(self) -> None:
        self.cluster.set_mongos_delay(100, commands=["find"])

    def hold_snapshot(self) -> None:
        self.cluster.set_mongos_delay(600_000, commands=["find"])

    def normal_reads(self) -> None:
        self.cluster.set_mongos_delay(0)

    def step_down(self) -> None:
        self.cluster.shard(0).step_down(seconds=1)

    def restart(self) -> None:
        """mongos restarts (the shards and config servers keep running); returns once it accepts connections."""
        self.cluster.restart_mongos()

    def crash(self) -> None:
        """Shard 0's primary is killed; once another member has won the election, it starts again."""
        shard = self.cluster.shard(0)
        killed = shard.primary_index()
        shard.kill_member(killed)
        shard.wait_for_primary(timeout=60, not_index=killed)
        shard.restart_member(killed)
