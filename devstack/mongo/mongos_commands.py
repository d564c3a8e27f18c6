"""mongos commands other than CRUD: handshake and server information, sharding administration (enableSharding,
shardCollection, listShards, split, moveChunk, the balancer), DDL on every shard, sessions, transactions and
fail points."""

from __future__ import annotations

import asyncio
import os
import time

from devstack.mongo.bsonutil import MAX_BSON_SIZE, hash_key, to_int
from devstack.mongo.errors import CommandError
from devstack.mongo.mongos import Request, error_of, forward_to_primary_shard, router_command


def _admin(req: Request):
    if req.db != "admin":
        raise CommandError(13, f"{req.name} may only be run against the admin database.",
                           code_name_override="Unauthorized")


def _ns_arg(req: Request) -> str:
    ns = req.target
    if not isinstance(ns, str) or "." not in ns:
        raise CommandError(73, f"Invalid namespace specified '{ns}'", code_name_override="InvalidNamespace")
    return ns


# ---- handshake and information ---------------------------------------------------------------------------------
async def _hello(req: Request, legacy: bool) -> dict:
    router, cmd = req.router, req.cmd
    if req.conn is not None and isinstance(cmd.get("client"), dict):
        app = cmd["client"].get("application")
        if isinstance(app, dict):
            req.conn.app_name = app.get("name")
    tv = cmd.get("topologyVersion")
    max_await = cmd.get("maxAwaitTimeMS")
    if isinstance(tv, dict) and max_await is not None:
        if tv.get("processId") == router.process_id:
            await router.wait_topology_change((to_int(max_await) or 0) / 1000.0)
        if req.conn is not None:
            req.conn.awaitable_hello = True
    reply: dict = {}
    if legacy and cmd.get("helloOk") is not None:
        reply["helloOk"] = True
    reply["ismaster" if legacy else "isWritablePrimary"] = True
    reply["msg"] = "isdbgrid"
    reply["topologyVersion"] = router.topology_version()
    reply["maxBsonObjectSize"] = MAX_BSON_SIZE
    reply["maxMessageSizeBytes"] = 48000000
    reply["maxWriteBatchSize"] = 100000
    reply["localTime"] = router.cluster.config_rs.wall_now()
    reply["logicalSessionTimeoutMinutes"] = 30
    reply["connectionId"] = req.conn.id if req.conn else 0
    reply["maxWireVersion"] = router.config.max_wire_version
    reply["minWireVersion"] = 0
    return reply


@router_command("hello")
async def hello(req):
    return await _hello(req, False)


@router_command("isMaster")
async def is_master(req):
    return await _hello(req, True)


@router_command("ping")
async def ping(req):
    return {}


@router_command("isdbgrid")
async def isdbgrid(req):
    return {"isdbgrid": 1, "hostname": req.router.host}


@router_command("buildInfo", "buildinfo")
async def build_info(req):
    version = req.router.config.version
    return {"version": version, "gitVersion": "emulator", "versionArray": [int(x) for x in version.split(".")] + [0],
            "bits": 64, "debug": False, "maxBsonObjectSize": MAX_BSON_SIZE, "modules": [], "allocator": "system",
            "javascriptEngine": "none", "sysInfo": "deprecated", "storageEngines": ["wiredTiger"],
            "openssl": {"running": "disabled"}, "buildEnvironment": {}}


@router_command("serverStatus")
async def server_status(req):
    router = req.router
    return {"host": router.name, "version": router.config.version, "process": "mongos", "pid": os.getpid(),
            "uptime": float(int(time.time() - router.started)), "localTime": router.cluster.config_rs.wall_now(),
            "connections": {"current": len(router.connections), "available": 1000},
            "sharding": {"configsvrConnectionString": f"{router.cluster.config_rs.name}/"
                                                      f"{','.join(router.cluster.config_rs.hosts)}"}}


@router_command("connPoolStats")
async def conn_pool_stats(req):
    """The router's view of each replica set it talks to (its `replicaSets` section, as mongos' replica set monitor
    reports it: every member with `ok`, `ismaster` and `secondary`); the pool counters are the emulator's."""
    cluster = req.router.cluster
    sets = {"config": cluster.config_rs, **cluster.shards}
    replica_sets = {rs.name: {"hosts": [{"addr": m.name, "ok": m.alive, "ismaster": m.is_primary,
                                         "hidden": False, "secondary": m.is_secondary, "pingTimeMillis": 0}
                                        for m in rs.members]}
                    for rs in sets.values()}
    current = len(req.router.connections)
    return {"numClientConnections": 0, "numAScopedConnections": 0, "totalInUse": current, "totalAvailable": 0,
            "totalCreated": current, "totalRefreshing": 0, "pools": {}, "hosts": {}, "replicaSets": replica_sets}


@router_command("getParameter", "getCmdLineOpts", "hostInfo", "getDefaultRWConcern", "whatsmyuri",
                "connectionStatus", "getLog", "features", "listCommands")
async def information(req):
    return await req.router.on_shard("config", {k: v for k, v in req.cmd.items() if k not in ("$db", "lsid")},
                                     req.db)


@router_command("configureFailPoint")
async def configure_fail_point(req):
    _admin(req)
    if "mode" not in req.cmd:
        raise CommandError(2, "Missing mode argument")
    return {"count": req.router.failpoints.configure(req.target, req.cmd.get("mode"), req.cmd.get("data"))}


# ---- sharding administration -----------------------------------------------------------------------------------
@router_command("listShards")
async def list_shards(req):
    _admin(req)
    cluster = req.router.cluster
    return {"shards": [{"_id": name, "host": f"{name}/{','.join(rs.hosts)}", "state": 1,
                        "topologyTime": cluster.clock.last} for name, rs in cluster.shards.items()]}


@router_command("enableSharding", "enablesharding")
async def enable_sharding(req):
    _admin(req)
    db = req.target
    if not isinstance(db, str) or not db or db in ("admin", "local", "config"):
        raise CommandError(73, f"Cannot enable sharding on {db!r}", code_name_override="InvalidNamespace")
    cluster = req.router.cluster
    wanted = req.cmd.get("primaryShard")
    if wanted is not None and db not in cluster.databases:
        if wanted not in cluster.shards:
            raise CommandError(70, f"Shard {wanted} not found", code_name_override="ShardNotFound")
        cluster.databases[db] = wanted
    cluster.primary_shard(db)
    return {}


@router_command("shardCollection", "shardcollection")
async def shard_collection(req):
    _admin(req)
    ns = _ns_arg(req)
    key = req.cmd.get("key")
    coll = req.router.cluster.shard_collection(ns, key, bool(req.cmd.get("unique")))
    return {"collectionsharded": ns, "collectionUUID": coll.uuid}


@router_command("split")
async def split(req):
    _admin(req)
    ns = _ns_arg(req)
    middle = req.cmd.get("middle")
    cluster = req.router.cluster
    if middle is None and isinstance(req.cmd.get("find"), dict):
        coll = cluster.sharded(ns)
        key = coll.key.value_from_filter(req.cmd["find"])
        if key is None:
            raise CommandError(2, f"'find' must give every shard key field of {coll.key.pattern}")
        middle = key
    if not isinstance(middle, dict):
        raise CommandError(2, "split needs 'middle' (a shard key value)")
    cluster.split(ns, middle)
    return {}


@router_command("moveChunk", "movechunk")
async def move_chunk(req):
    _admin(req)
    ns = _ns_arg(req)
    to = req.cmd.get("to")
    cluster = req.router.cluster
    chunk = cluster.find_chunk(ns, req.cmd.get("find"), req.cmd.get("bounds"))
    await req.router.primary_of(chunk.shard)
    if to in cluster.shards:
        await req.router.primary_of(to)
    moved = await cluster.move_chunk_when_idle(ns, chunk, to)
    return {"millis": 0, "docsMoved": moved}


@router_command("balancerStart")
async def balancer_start(req):
    _admin(req)
    req.router.cluster.set_balancer(True)
    return {}


@router_command("balancerStop")
async def balancer_stop(req):
    _admin(req)
    req.router.cluster.set_balancer(False)
    return {}


@router_command("balancerStatus")
async def balancer_status(req):
    _admin(req)
    on = req.router.cluster.balancer_on
    return {"mode": "full" if on else "off", "inBalancerRound": False, "numBalancerRounds": 0}


@router_command("splitVector", "replSetGetStatus", "replSetStepDown", "replSetGetConfig", "appendOplogNote")
async def not_on_mongos(req):
    raise CommandError(59, f"no such command: '{req.name}'")


@router_command("flushRouterConfig")
async def flush_router_config(req):
    return {"flushed": True}


# ---- databases and collections ---------------------------------------------------------------------------------
def _local_shards(req: Request, ns: str) -> list[str]:
    """Shards holding a copy of the collection (a sharded collection's owners, else the primary shard)."""
    cluster = req.router.cluster
    db, _, name = ns.partition(".")
    holders = [s for s, rs in cluster.shards.items() if rs.catalog.get_collection(db, name) is not None]
    return holders or [cluster.primary_shard(db)]


@router_command("createIndexes", "dropIndexes", "deleteIndexes", "collMod")
async def on_every_holder(req):
    cmd = {k: v for k, v in req.cmd.items() if k not in ("$db", "$clusterTime", "$readPreference")}
    replies = [await req.router.on_shard(shard, req.router.for_shard(req, shard, cmd), req.db)
               for shard in _local_shards(req, req.ns)]
    reply = dict(replies[0])
    if req.name == "createIndexes":
        reply["raw"] = {shard: r for shard, r in zip(_local_shards(req, req.ns), replies, strict=False)}
    return reply


@router_command("drop")
async def drop(req):
    cluster = req.router.cluster
    ns = req.ns
    if req.db in ("admin", "config", "local"):
        return await forward_to_primary_shard(req)
    primary = cluster.primary_shard(req.db)
    reply = None
    for shard in [primary] + [s for s in cluster.shards if s != primary]:
        r = await req.router.on_shard(shard, {"drop": req.target, **req.forwarded()}, req.db, check=False)
        if not r.get("ok") and r.get("code") != 26:
            raise error_of(r)
        if shard == primary:
            reply = r
    cluster.drop_collection(ns)
    return {"ns": ns, "nIndexesWas": (reply or {}).get("nIndexesWas", 1)}


@router_command("dropDatabase")
async def drop_database(req):
    cluster = req.router.cluster
    if req.db in ("admin", "config", "local"):
        raise CommandError(20, f"Cannot drop '{req.db}' database through mongos")
    for shard in cluster.shards:
        await req.router.on_shard(shard, {"dropDatabase": 1, **req.forwarded()}, req.db)
    cluster.drop_database(req.db)
    return {"dropped": req.db}


@router_command("listDatabases")
async def list_databases(req):
    cluster = req.router.cluster
    sizes: dict[str, dict] = {}
    for shard in cluster.shards:
        reply = await req.router.on_shard(shard, {"listDatabases": 1}, "admin")
        for d in reply.get("databases", []):
            if d["name"] in ("admin", "config", "local"):
                continue
            entry = sizes.setdefault(d["name"], {"name": d["name"], "sizeOnDisk": 0, "empty": True, "shards": {}})
            entry["sizeOnDisk"] += d.get("sizeOnDisk", 0)
            entry["empty"] = entry["empty"] and d.get("empty", False)
            entry["shards"][shard] = d.get("sizeOnDisk", 0)
    reply = await req.router.on_shard("config", {"listDatabases": 1}, "admin")
    for d in reply.get("databases", []):
        if d["name"] in ("admin", "config"):
            sizes[d["name"]] = {"name": d["name"], "sizeOnDisk": d.get("sizeOnDisk", 0), "empty": False}
    flt = req.cmd.get("filter")
    databases = sorted(sizes.values(), key=lambda d: d["name"])
    if isinstance(flt, dict) and flt:
        from devstack.mongo.query import compile_filter

        match = compile_filter(flt)
        databases = [d for d in databases if match(d)]
    if req.cmd.get("nameOnly"):
        databases = [{"name": d["name"]} for d in databases]
    return {"databases": databases, "totalSize": sum(d.get("sizeOnDisk", 0) for d in databases)}


# ---- sessions and transactions ---------------------------------------------------------------------------------
@router_command("startSession")
async def start_session(req):
    return await req.router.on_shard("config", {"startSession": 1}, "admin")


@router_command("endSessions", "refreshSessions", "killSessions", "killAllSessions", "killAllSessionsByPattern")
async def sessions(req):
    cmd = {k: v for k, v in req.cmd.items() if k not in ("$db", "$clusterTime", "$readPreference", "lsid")}
    for shard in req.router.cluster.shards:
        await req.router.on_shard(shard, cmd, "admin", check=False)
    if req.name == "endSessions" and isinstance(req.target, list):
        for lsid in req.target:
            if isinstance(lsid, dict):
                req.router.txns.pop(hash_key(lsid.get("id")), None)
    return {}


def _txn_control(req: Request, name: str | None = None) -> dict:
    return {name or req.name: 1, **{k: req.cmd[k] for k in ("lsid", "txnNumber", "autocommit", "writeConcern")
                            if k in req.cmd}}


@router_command("commitTransaction")
async def commit_transaction(req):
    txn = req.txn
    if txn is None:
        raise CommandError(50768, "'autocommit' field is required", code_name_override="Location50768")
    router = req.router
    if txn.state == "aborted":
        raise CommandError(251, f"Transaction with {{ txnNumber: {txn.txn_number} }} has been aborted.",
                           labels=["TransientTransactionError"])
    if len(txn.participants) <= 1:
        for shard in txn.participants:
            await router.on_shard(shard, _txn_control(req), "admin")
        txn.state = "committed"
        return {}
    # several shards: every participant's part must still be open, then all commit in one step of the event
    # loop (nothing runs between the shards' commits, so no reader sees one part without the others)
    for shard in txn.participants:
        await router.primary_of(shard)
    parts = []
    for shard in txn.participants:
        rs = router.replica_set(shard)
        session = rs.sessions.get(hash_key(req.cmd["lsid"].get("id")))
        part = session.txn if session is not None else None
        if part is None or part.txn_number != txn.txn_number or part.state not in ("in_progress", "committed"):
            for other in txn.participants:
                await router.on_shard(other, _txn_control(req, "abortTransaction"), "admin", check=False)
            raise CommandError(251, f"Transaction with {{ txnNumber: {txn.txn_number} }} has been aborted.",
                               labels=["TransientTransactionError"])
        parts.append((rs, part))
    for rs, part in parts:
        rs.commit_transaction(part)
    txn.state = "committed"
    await asyncio.sleep(0)
    return {}


@router_command("abortTransaction")
async def abort_transaction(req):
    txn = req.txn
    if txn is None:
        raise CommandError(50768, "'autocommit' field is required", code_name_override="Location50768")
    first_error = None
    for shard in txn.participants:
        reply = await req.router.on_shard(shard, _txn_control(req), "admin", check=False)
        if not reply.get("ok") and reply.get("code") != 251 and first_error is None:
            first_error = reply
    txn.state = "aborted"
    if first_error is not None:
        raise error_of(first_error)
    return {}
