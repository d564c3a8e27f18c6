"""A sharded cluster's state: one clock for every replica set, the databases' primary shards, sharded collections
and their chunks (kept in the config server's `config.*` collections), chunk migrations and the balancer.

Every replica set of a cluster takes its oplog timestamps from one clock, so timestamps are unique across shards
and a change stream through `mongos` can merge the shards' events in cluster-time order.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time

from bson.int64 import Int64
from bson.min_key import MinKey
from bson.timestamp import Timestamp

from devstack.mongo.bsonutil import MISSING, hash_key
from devstack.mongo.errors import CommandError
from devstack.mongo.oplog import Op
from devstack.mongo.query import get_path
from devstack.mongo.replset import ReplicaSet
from devstack.mongo.shardkeys import Chunk, ShardedCollection, ShardKey, hashed_split_points
from devstack.mongo.storage import new_uuid

log = logging.getLogger("devstack.mongo")
MIGRATED = {"fromMigrate": True}


class ClusterClock:
    def __init__(self):
        self.last = Timestamp(0, 0)

    def next(self, now: float | None = None) -> Timestamp:
        now = int(time.time() if now is None else now)
        last = self.last
        self.last = Timestamp(now, 1) if now > last.time else Timestamp(last.time, last.inc + 1)
        return self.last


class ClusterReplicaSet(ReplicaSet):
    """A shard or the config server: a replica set whose timestamps come from the cluster's clock."""

    def __init__(self, config, ports, clock: ClusterClock):
        super().__init__(config, ports)
        self.clock = clock
        self.shard_keys: dict[str, list[str]] = {}   # sharded collection -> its shard key's fields

    def document_key(self, ns: str, doc: dict) -> dict:
        """As mongod logs it for a sharded collection: the shard key's fields (their values, not hashes), then _id."""
        fields = self.shard_keys.get(ns)
        if not fields:
            return {"_id": doc["_id"]}
        key = {}
        for field in fields:
            value = get_path(doc, field)
            if value is not MISSING:
                key[field] = value
        key["_id"] = doc["_id"]
        return key

    def next_ts(self, now: float | None = None) -> Timestamp:
        ts = self.clock.next(now)
        self.last_ts = ts
        if ts > self.cluster_time:
            self.cluster_time = ts
        return ts


class ShardedCluster:
    def __init__(self, config_rs: ClusterReplicaSet, shards: list[ClusterReplicaSet], clock: ClusterClock):
        self.config_rs = config_rs
        self.shards = {rs.name: rs for rs in shards}
        self.clock = clock
        self.databases: dict[str, str] = {}      # database -> primary shard
        self.collections: dict[str, ShardedCollection] = {}
        self.balancer_on = False
        self.migrations = 0
        # held by mongos while a command routes by chunk ownership, and by migrations: a command never sees a
        # chunk move half way through it (mongod's shard versioning and range deleter guarantee the same)
        self.routing = asyncio.Lock()

    # ---- config.* documents ---------------------------------------------------------------------------------
    def _config_put(self, name: str, doc: dict):
        rs = self.config_rs
        coll = rs.catalog.get_collection("config", name) or rs.create_collection("config", name, {})
        old = coll.get(doc["_id"])
        if old is None:
            coll.insert(doc)
            rs.log_op(Op("i", coll.ns, coll.uuid, o=doc, o2={"_id": doc["_id"]}))
        else:
            coll.replace(old, doc)
            rs.log_op(Op("u", coll.ns, coll.uuid, o=doc, o2={"_id": doc["_id"]}))

    def _config_delete(self, name: str, id_value):
        rs = self.config_rs
        coll = rs.catalog.get_collection("config", name)
        doc = coll.get(id_value) if coll is not None else None
        if doc is not None:
            coll.delete(doc)
            rs.log_op(Op("d", coll.ns, coll.uuid, o={"_id": id_value}))

    def write_shards(self):
        for name, rs in self.shards.items():
            self._config_put("shards", {"_id": name, "host": f"{name}/{','.join(rs.hosts)}", "state": 1,
                                        "topologyTime": self.clock.last})
        self._config_put("settings", {"_id": "balancer", "mode": "off", "stopped": True})

    def _chunk_doc(self, coll: ShardedCollection, chunk: Chunk) -> dict:
        return {"_id": chunk.id, "uuid": coll.uuid, "min": chunk.min, "max": chunk.max, "shard": chunk.shard,
                "lastmod": Timestamp(*chunk.version), "onCurrentShardSince": chunk.since,
                "history": [{"validAfter": chunk.since, "shard": chunk.shard}]}

    def _write_collection(self, coll: ShardedCollection):
        self._config_put("collections", {
            "_id": coll.ns, "lastmodEpoch": coll.epoch, "lastmod": datetime.datetime.now(datetime.UTC),
            "timestamp": coll.timestamp, "uuid": coll.uuid, "key": coll.key.pattern, "unique": coll.unique,
            "noBalance": False})

    # ---- databases ------------------------------------------------------------------------------------------
    def primary_shard(self, db: str, create: bool = True) -> str | None:
        """The shard holding the database's unsharded collections (`config` for admin and config)."""
        if db in ("admin", "config"):
            return "config"
        primary = self.databases.get(db)
        if primary is None and create:
            counts = {name: 0 for name in self.shards}
            for shard in self.databases.values():
                counts[shard] += 1
            primary = min(counts, key=lambda name: (counts[name], list(self.shards).index(name)))
            self.databases[db] = primary
            self._config_put("databases", {"_id": db, "primary": primary, "partitioned": True,
                                           "version": {"uuid": new_uuid(), "timestamp": self.clock.next(),
                                                       "lastMod": 1}})
        return primary

    def drop_database(self, db: str):
        for ns in [ns for ns in self.collections if ns.startswith(db + ".")]:
            self.drop_collection(ns)
        if self.databases.pop(db, None) is not None:
            self._config_delete("databases", db)

    # ---- collections ----------------------------------------------------------------------------------------
    def shard_collection(self, ns: str, pattern, unique: bool = False) -> ShardedCollection:
        db, _, name = ns.partition(".")
        if not name or db in ("admin", "local", "config"):
            raise CommandError(20, f"can't shard {ns}")
        key = ShardKey(pattern)
        existing = self.collections.get(ns)
        if existing is not None:
            if existing.key.pattern != key.pattern:
                raise CommandError(23, f"sharding already enabled for collection {ns} with options "
                                       f"{{ shardKey: {existing.key.pattern} }}",
                                   code_name_override="AlreadyInitialized")
            return existing
        primary = self.primary_shard(db)
        primary_rs = self.shards[primary]
        local = primary_rs.catalog.get_collection(db, name)
        uuid = local.uuid if local is not None else new_uuid()
        coll = ShardedCollection(ns, key, uuid, unique, self.clock.next())
        names = list(self.shards)
        if key.hashed is not None and (local is None or not len(local)):
            # like shardCollection on an empty collection with a hashed key: two chunks per shard, spread out
            points = hashed_split_points(2 * len(names))
            bounds = [key.global_min()] + [self._hashed_bound(key, p) for p in points] + [key.global_max()]
            for i in range(len(bounds) - 1):
                coll.chunks.append(Chunk(bounds[i], bounds[i + 1], names[i * len(names) // (len(bounds) - 1)],
                                         (1, i), since=coll.timestamp))
        else:
            coll.chunks.append(Chunk(key.global_min(), key.global_max(), primary, (1, 0), since=coll.timestamp))
        for shard in coll.shards():
            self.ensure_local(shard, db, name, uuid)
        for rs in self.shards.values():
            rs.shard_keys[ns] = key.fields
        self.collections[ns] = coll
        # the primary shard notes it in its oplog (a no-op), which change streams show as a shardCollection event
        primary_rs.log_op(Op("n", ns, uuid, o={"msg": {"shardCollection": ns}},
                             o2={"shardCollection": ns, "key": key.pattern, "unique": unique,
                                 "presplitHashedZones": False, "capped": False}))
        self._write_collection(coll)
        for chunk in coll.chunks:
            self._config_put("chunks", self._chunk_doc(coll, chunk))
        return coll

    @staticmethod
    def _hashed_bound(key: ShardKey, point: Int64) -> dict:
        return {f: (point if f == key.hashed else MinKey()) for f in key.fields}


    def ensure_local(self, shard: str, db: str, name: str, uuid):
        """The collection on one shard, with the cluster-wide UUID (created like mongod creates it)."""
        rs = self.shards[shard]
        local = rs.catalog.get_collection(db, name)
        if local is not None:
            return local
        local = rs.catalog.create_collection(db, name, {}, uuid=uuid)
        rs.log_op(Op("c", f"{db}.$cmd", uuid, o={"create": name, "idIndex": {"v": 2, "key": {"_id": 1},
                                                                               "name": "_id_"}}))
        return local

    def drop_collection(self, ns: str):
        coll = self.collections.pop(ns, None)
        if coll is None:
            return
        for rs in self.shards.values():
            rs.shard_keys.pop(ns, None)
        self._config_delete("collections", ns)
        for chunk in coll.chunks:
            self._config_delete("chunks", chunk.id)

    def owner(self, ns: str, doc) -> str:
        """The shard that holds (or will hold) `doc` of collection `ns`."""
        coll = self.collections.get(ns)
        if coll is None:
            return self.primary_shard(ns.partition(".")[0])
        return coll.chunk_for(coll.key.value_of(doc)).shard

    def targets(self, ns: str, flt) -> list[str]:
        """The shards a query must visit: one when it pins the shard key, else every shard owning a chunk."""
        coll = self.collections.get(ns)
        if coll is None:
            return [self.primary_shard(ns.partition(".")[0])]
        key = coll.key.value_from_filter(flt)
        if key is not None:
            return [coll.chunk_for(key).shard]
        return coll.shards()

    # ---- chunks ---------------------------------------------------------------------------------------------
    def sharded(self, ns: str) -> ShardedCollection:
        coll = self.collections.get(ns)
        if coll is None:
            raise CommandError(118, f"Collection {ns} is not sharded.", code_name_override="NamespaceNotSharded")
        return coll

    def split(self, ns: str, middle: dict) -> tuple[Chunk, Chunk]:
        coll = self.sharded(ns)
        if set(middle) != set(coll.key.fields):
            raise CommandError(2, f"split point {middle} does not match the shard key {coll.key.pattern}")
        middle = {f: middle[f] for f in coll.key.fields}
        chunk = coll.chunk_containing(middle)
        if chunk is None or coll.key.order(chunk.min) == coll.key.order(middle):
            raise CommandError(2, f"cannot split on {middle}: it is already a chunk boundary")
        right = Chunk(dict(middle), chunk.max, chunk.shard, coll.next_version(False), since=chunk.since)
        chunk.max = dict(middle)
        chunk.version = coll.next_version(False)
        coll.chunks.insert(coll.chunks.index(chunk) + 1, right)
        self._config_put("chunks", self._chunk_doc(coll, chunk))
        self._config_put("chunks", self._chunk_doc(coll, right))
        return chunk, right

    def find_chunk(self, ns: str, find=None, bounds=None) -> Chunk:
        coll = self.sharded(ns)
        if bounds is not None:
            if not isinstance(bounds, list) or len(bounds) != 2:
                raise CommandError(9, "bounds must be [min, max]")
            chunk = coll.chunk_with_bounds(bounds[0], bounds[1])
            if chunk is None:
                raise CommandError(2, f"no chunk with bounds {bounds} in {ns}")
            return chunk
        if not isinstance(find, dict):
            raise CommandError(9, "moveChunk needs 'find' or 'bounds'")
        key = coll.key.value_from_filter(find)
        if key is None:
            raise CommandError(2, f"'find' must give every shard key field of {coll.key.pattern}")
        return coll.chunk_for(key)

    async def move_chunk_when_idle(self, ns: str, chunk: Chunk, to: str) -> int:
        async with self.routing:
            return self.move_chunk(ns, chunk, to)

    def move_chunk(self, ns: str, chunk: Chunk, to: str) -> int:
        """Move a chunk's documents to another shard: inserts on the recipient and deletes on the donor, each
        logged with `fromMigrate: true`. It runs in one step of the event loop, so no read sees a document on
        both shards or on neither. Returns how many documents moved."""
        if to not in self.shards:
            raise CommandError(70, f"Shard {to} not found", code_name_override="ShardNotFound")
        coll = self.sharded(ns)
        if chunk.shard == to:
            return 0
        db, _, name = ns.partition(".")
        donor_rs, recipient_rs = self.shards[chunk.shard], self.shards[to]
        if donor_rs.primary is None or recipient_rs.primary is None:
            raise CommandError(133, f"no primary in shard {chunk.shard if donor_rs.primary is None else to}",
                               code_name_override="FailedToSatisfyReadPreference")
        donor = donor_rs.catalog.get_collection(db, name)
        recipient = self.ensure_local(to, db, name, coll.uuid)
        moving = [doc for doc in (donor.values() if donor is not None else ()) if coll.in_chunk(chunk, doc)]
        for doc in moving:
            recipient.insert(doc)
            recipient_rs.log_op(Op("i", ns, coll.uuid, o=doc, o2=recipient_rs.document_key(ns, doc), extra=MIGRATED))
        chunk.shard = to
        chunk.version = coll.next_version(True)
        chunk.since = self.clock.last
        self._config_put("chunks", self._chunk_doc(coll, chunk))
        for doc in moving:
            donor.delete(doc)
            entry = donor_rs.log_op(Op("d", ns, coll.uuid, o=donor_rs.document_key(ns, doc), extra=MIGRATED))
            donor_rs.txns.note_write(ns, hash_key(doc["_id"]), entry.ts, doc)
        self.migrations += 1
        self._config_put("changelog", {"_id": f"migration-{self.migrations}", "what": "moveChunk.commit",
                                       "ns": ns, "time": datetime.datetime.now(datetime.UTC),
                                       "details": {"min": chunk.min, "max": chunk.max, "to": to,
                                                   "docs": len(moving)}})
        log.info("moved chunk %s..%s of %s to %s (%d documents)", chunk.min, chunk.max, ns, to, len(moving))
        return len(moving)

    # ---- balancer -------------------------------------------------------------------------------------------
    def set_balancer(self, on: bool):
        self.balancer_on = on
        self._config_put("settings", {"_id": "balancer", "mode": "full" if on else "off", "stopped": not on})

    async def balance_once(self) -> bool:
        """One balancing round: move one chunk from the shard with most chunks of a collection to the one with
        fewest, when they differ by more than one. True if a chunk moved."""
        for ns, coll in list(self.collections.items()):
            counts = {name: 0 for name in self.shards}
            for chunk in coll.chunks:
                counts[chunk.shard] += 1
            most = max(counts, key=counts.get)
            fewest = min(counts, key=counts.get)
            if counts[most] - counts[fewest] > 1:
                chunk = next(c for c in reversed(coll.chunks) if c.shard == most)
                try:
                    await self.move_chunk_when_idle(ns, chunk, fewest)
                except CommandError as exc:
                    log.info("balancer: %s", exc.errmsg)
                    return False
                return True
        return False

    async def balancer(self, interval: float = 0.5):
        while True:
            await asyncio.sleep(interval)
            if self.balancer_on:
                await self.balance_once()
