"""CRUD through mongos: writes routed by shard key (a statement that pins the key goes to one shard, others are
broadcast), reads gathered from the shards they target and merged (sort, skip, limit) on the router."""

from __future__ import annotations

from bson.int64 import Int64
from bson.objectid import ObjectId

from devstack.mongo.bsonutil import hash_key, to_int
from devstack.mongo.cursors import DEFAULT_FIRST_BATCH, Cursor
from devstack.mongo.errors import CommandError
from devstack.mongo.mongos import Request, router_command
from devstack.mongo.query import sort_docs

_READ_FIELDS = ("filter", "projection", "sort", "hint", "collation", "let", "comment", "maxTimeMS", "readConcern",
                "allowDiskUse")


def _coll(req: Request) -> str:
    if not isinstance(req.target, str):
        raise CommandError(2, f"collection name has invalid type {type(req.target).__name__}")
    return req.target


async def _send(req: Request, shard: str, cmd: dict) -> dict:
    router = req.router
    return await router.on_shard(shard, router.for_shard(req, shard, cmd), req.db)


def _write_result(total: dict, reply: dict, indexes: list[int]):
    total["n"] = total.get("n", 0) + reply.get("n", 0)
    if "nModified" in reply:
        total["nModified"] = total.get("nModified", 0) + reply["nModified"]
    for up in reply.get("upserted", []):
        total.setdefault("upserted", []).append({**up, "index": indexes[up["index"]]})
    for err in reply.get("writeErrors", []):
        total.setdefault("writeErrors", []).append({**err, "index": indexes[err["index"]]})
    if "writeConcernError" in reply:
        total["writeConcernError"] = reply["writeConcernError"]


def _finish(total: dict) -> dict:
    if "writeErrors" in total:
        total["writeErrors"].sort(key=lambda e: e["index"])
    return total


# ---- writes ------------------------------------------------------------------------------------------------------
@router_command("insert")
async def insert(req):
    name = _coll(req)
    docs = req.cmd.get("documents") or []
    ordered = req.cmd.get("ordered", True) is not False
    cluster = req.router.cluster
    ns = req.ns
    runs: list[tuple[str, list[int]]] = []      # (shard, statement indexes), in order
    by_shard: dict[str, list[int]] = {}
    for i, doc in enumerate(docs):
        if isinstance(doc, dict) and "_id" not in doc:
            docs[i] = doc = {"_id": ObjectId(), **doc}
        shard = cluster.owner(ns, doc)
        if ordered:
            if runs and runs[-1][0] == shard:
                runs[-1][1].append(i)
            else:
                runs.append((shard, [i]))
        else:
            by_shard.setdefault(shard, []).append(i)
    if not ordered:
        runs = list(by_shard.items())
    total: dict = {"n": 0}
    for shard, indexes in runs:
        sub = req.forwarded(ordered=ordered)
        reply = await _send(req, shard, {"insert": name, "documents": [docs[i] for i in indexes], **sub})
        _write_result(total, reply, indexes)
        if ordered and reply.get("writeErrors"):
            break
    return _finish(total)


def _upsert_target(req: Request, stmt: dict) -> list[str]:
    cluster = req.router.cluster
    targets = cluster.targets(req.ns, stmt.get("q"))
    if stmt.get("upsert") and len(targets) > 1:
        coll = cluster.collections[req.ns]
        raise CommandError(72, "Failed to target upsert by query :: could not extract exact shard key from query "
                               f"for shard key pattern {coll.key.pattern}", code_name_override="InvalidOptions")
    return targets


@router_command("update")
async def update(req):
    name = _coll(req)
    stmts = req.cmd.get("updates") or []
    ordered = req.cmd.get("ordered", True) is not False
    total: dict = {"n": 0, "nModified": 0}
    for i, stmt in enumerate(stmts):
        try:
            targets = _upsert_target(req, stmt)
        except CommandError as exc:
            total.setdefault("writeErrors", []).append({"index": i, "code": exc.code, "errmsg": exc.errmsg})
            if ordered:
                break
            continue
        failed = False
        for shard in targets:
            reply = await _send(req, shard, {"update": name, "updates": [stmt], **req.forwarded(ordered=True)})
            _write_result(total, reply, [i])
            failed = bool(reply.get("writeErrors"))
            if failed or (not stmt.get("multi") and reply.get("n")):
                break
        if failed and ordered:
            break
    return _finish(total)


@router_command("delete")
async def delete(req):
    name = _coll(req)
    stmts = req.cmd.get("deletes") or []
    ordered = req.cmd.get("ordered", True) is not False
    total: dict = {"n": 0}
    for i, stmt in enumerate(stmts):
        failed = False
        for shard in req.router.cluster.targets(req.ns, stmt.get("q")):
            reply = await _send(req, shard, {"delete": name, "deletes": [stmt], **req.forwarded(ordered=True)})
            _write_result(total, reply, [i])
            failed = bool(reply.get("writeErrors"))
            if failed or (to_int(stmt.get("limit")) == 1 and reply.get("n")):
                break
        if failed and ordered:
            break
    return _finish(total)


@router_command("findAndModify")
async def find_and_modify(req):
    name = _coll(req)
    cmd = {k: v for k, v in req.cmd.items() if k not in ("$db", "$clusterTime", "$readPreference",
                                                          "startTransaction", "readConcern")}
    cmd = {"findAndModify": name, **{k: v for k, v in cmd.items() if k not in ("findAndModify", "findandmodify")}}
    targets = _upsert_target(req, {"q": req.cmd.get("query"), "upsert": req.cmd.get("upsert")})
    reply: dict = {}
    for shard in targets:
        reply = await _send(req, shard, cmd)
        if reply.get("lastErrorObject", {}).get("n"):
            break
    return reply


# ---- reads -------------------------------------------------------------------------------------------------------
def _cursor_reply(req: Request, ns: str, docs: list, batch_size, single: bool) -> dict:
    router = req.router
    cursor = Cursor(ns, docs)
    first = cursor.next_batch(batch_size if batch_size is not None else DEFAULT_FIRST_BATCH)
    if single or cursor.exhausted:
        return {"cursor": {"firstBatch": first, "id": Int64(0), "ns": ns}}
    router.cursors.add(cursor)
    return {"cursor": {"firstBatch": first, "id": Int64(cursor.id), "ns": ns}}


@router_command("find")
async def find(req):
    name = _coll(req)
    cmd = req.cmd
    skip = to_int(cmd.get("skip")) or 0
    limit = to_int(cmd.get("limit")) or 0
    sub = {"find": name, **{k: cmd[k] for k in _READ_FIELDS if k in cmd}, **req.forwarded()}
    if limit:
        sub["limit"] = limit + skip
    docs: list = []
    for shard in req.router.cluster.targets(req.ns, cmd.get("filter") or {}):
        docs.extend(await req.router.drain(shard, req.router.for_shard(req, shard, sub), req.db))
    if cmd.get("sort"):
        docs = sort_docs(docs, cmd["sort"])
    docs = docs[skip:]
    if limit:
        docs = docs[:limit]
    return _cursor_reply(req, req.ns, docs, to_int(cmd.get("batchSize")), bool(cmd.get("singleBatch")))


@router_command("getMore")
async def get_more(req):
    from devstack.mongo.mongos_streams import stream_get_more

    cid = req.cmd.get("getMore")
    cursor = req.router.cursors.get(cid, f"{req.db}.{req.cmd.get('collection')}")
    if getattr(cursor, "tailable", False):
        return await stream_get_more(req, cursor)
    batch = cursor.next_batch(to_int(req.cmd.get("batchSize")))
    if cursor.exhausted:
        req.router.cursors.remove(cid)
        return {"cursor": {"nextBatch": batch, "id": Int64(0), "ns": cursor.ns}}
    return {"cursor": {"nextBatch": batch, "id": Int64(cursor.id), "ns": cursor.ns}}


@router_command("killCursors")
async def kill_cursors(req):
    killed, not_found = [], []
    for cid in req.cmd.get("cursors") or []:
        cursor = req.router.cursors.remove(cid)
        if cursor is not None:
            close = getattr(cursor, "close", None)
            if close is not None:
                close()
            killed.append(Int64(cid))
        else:
            not_found.append(Int64(cid))
    return {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [], "cursorsUnknown": []}


@router_command("count")
async def count(req):
    name = _coll(req)
    cmd = req.cmd
    query = cmd.get("query") or {}
    sub = {"count": name, "query": query, **{k: cmd[k] for k in ("hint", "collation", "readConcern") if k in cmd},
           **req.forwarded()}
    n = 0
    for shard in req.router.cluster.targets(req.ns, query):
        n += (await _send(req, shard, sub)).get("n", 0)
    n = max(0, n - (to_int(cmd.get("skip")) or 0))
    limit = to_int(cmd.get("limit")) or 0
    return {"n": min(n, abs(limit)) if limit else n}


@router_command("distinct")
async def distinct(req):
    name = _coll(req)
    cmd = req.cmd
    query = cmd.get("query") or {}
    sub = {"distinct": name, "key": cmd.get("key"), "query": query,
           **{k: cmd[k] for k in ("collation", "readConcern", "hint") if k in cmd}, **req.forwarded()}
    values, seen = [], set()
    for shard in req.router.cluster.targets(req.ns, query):
        for v in (await _send(req, shard, sub)).get("values", []):
            key = hash_key(v)
            if key not in seen:
                seen.add(key)
                values.append(v)
    return {"values": values}


@router_command("aggregate")
async def aggregate(req):
    pipeline = req.cmd.get("pipeline")
    if isinstance(pipeline, list) and pipeline and isinstance(pipeline[0], dict) and "$changeStream" in pipeline[0]:
        from devstack.mongo.mongos_streams import open_stream

        return await open_stream(req)
    if not isinstance(req.target, str):
        from devstack.mongo.mongos import forward_to_primary_shard

        return await forward_to_primary_shard(req)
    if not isinstance(pipeline, list):
        raise CommandError(14, "'pipeline' option must be specified as an array")
    if any(isinstance(s, dict) and ("$out" in s or "$merge" in s) for s in pipeline):
        raise CommandError(20, "$out and $merge through the emulated mongos are not supported")
    first = pipeline[0] if pipeline else {}
    flt = first.get("$match") if isinstance(first, dict) and isinstance(first.get("$match"), dict) else {}
    sub = {"find": req.target, "filter": flt, **req.forwarded()}
    docs: list = []
    for shard in req.router.cluster.targets(req.ns, flt):
        docs.extend(await req.router.drain(shard, req.router.for_shard(req, shard, sub), req.db))
    from devstack.mongo.aggregation import run_pipeline

    results = run_pipeline(docs, pipeline)
    batch = (req.cmd.get("cursor") or {}).get("batchSize")
    return _cursor_reply(req, req.ns, results, to_int(batch), False)
