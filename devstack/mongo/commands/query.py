"""Read commands: find, getMore, killCursors, count, distinct, aggregate (including `$changeStream`)."""

from __future__ import annotations

import asyncio

from bson.int64 import Int64

from devstack.mongo import changestream
from devstack.mongo.aggregation import WRITE_STAGES, run_pipeline
from devstack.mongo.bsonutil import (
    COLLATION,
    MISSING,
    RawCursor,
    hash_key,
    is_number,
    sort_key,
    to_int,
    type_name,
)
from devstack.mongo.commands import command
from devstack.mongo.cursors import DEFAULT_FIRST_BATCH, Cursor
from devstack.mongo.errors import CommandError
from devstack.mongo.projection import Projection
from devstack.mongo.query import compile_filter, path_candidates, split_path
from devstack.mongo.reads import check_hint, select
from devstack.mongo.transactions import TxnView

ErrorCodes_InvalidOptions = 72


class OplogView:
    """`local.oplog.rs` as a read-only collection."""

    def __init__(self, rs):
        self.rs = rs
        self.ns = "local.oplog.rs"
        self.indexes = {}

    def values(self):
        return [e.to_doc() for e in self.rs.oplog.live()]

    def get(self, id_value):
        return None


def read_view(ctx, name: str):
    """The collection (or the transaction's view of it) a read command sees; None when it does not exist."""
    if ctx.db == "local" and name == "oplog.rs" and not ctx.rs.standalone:
        return OplogView(ctx.rs)
    if ctx.txn is not None:
        coll = ctx.txn.created.get(f"{ctx.db}.{name}") or ctx.rs.catalog.get_collection(ctx.db, name)
        return TxnView(coll, ctx.txn, ctx.rs.txns) if coll is not None else None
    coll = ctx.rs.catalog.get_collection(ctx.db, name)
    if coll is not None and coll.options.get("viewOn"):
        return ViewResult(ctx, coll)
    return coll


class ViewResult:
    """A view read as a collection: its pipeline run over the source collection (views on views work too)."""

    def __init__(self, ctx, view, depth: int = 0):
        if depth > 20:
            raise CommandError(2, "View depth too deep or view cycle detected. Maximum depth is 20")
        self.ns = view.ns
        self.indexes = {}
        source = read_view_depth(ctx, view.options["viewOn"], depth + 1)
        docs = list(source.values()) if source is not None else []
        self._docs = run_pipeline(docs, view.options.get("pipeline") or [])

    def values(self):
        return self._docs

    def get(self, id_value):
        from devstack.mongo.bsonutil import values_equal

        for d in self._docs:
            if values_equal(d.get("_id"), id_value):
                return d
        return None

    def __len__(self):
        return len(self._docs)


def read_view_depth(ctx, name, depth):
    coll = ctx.rs.catalog.get_collection(ctx.db, name)
    if coll is not None and coll.options.get("viewOn"):
        return ViewResult(ctx, coll, depth)
    return coll


def _nonneg(ctx, field, allow_none=True):
    v = ctx.cmd.get(field)
    if v is None:
        return None
    if not is_number(v):
        raise CommandError(14, f"BSON field '{ctx.name}.{field}' is the wrong type '{type_name(v)}', expected types "
                               "'[long, int, decimal, double']")
    n = to_int(v)
    if n is None:
        raise CommandError(2, f"BSON field '{field}' value must be an integer")
    if n < 0:
        raise CommandError(51024, f"BSON field '{field}' value must be >= 0, actual value '{n}'",
                           code_name_override="Location51024")
    return n


def cursor_reply(cursor_id, ns: str, batch: list, first: bool, pbrt=None) -> dict:
    if batch and isinstance(batch[0], bytes):
        # change events arrive encoded: the cursor document is assembled around them when the reply is sent
        return {"cursor": RawCursor(b"firstBatch" if first else b"nextBatch", batch, pbrt, cursor_id, ns)}
    cur: dict = {"firstBatch" if first else "nextBatch": batch}
    if pbrt is not None:
        cur["postBatchResumeToken"] = pbrt
    cur["id"] = Int64(cursor_id)
    cur["ns"] = ns
    return {"cursor": cur}


def _coll_arg(ctx) -> str:
    name = ctx.target
    if not isinstance(name, str):
        raise CommandError(2, f"collection name has invalid type {type_name(name)}")
    return name


@command("find", kind="read", txn=True)
def find(ctx):
    name = _coll_arg(ctx)
    cmd = ctx.cmd
    flt = cmd.get("filter") or {}
    if not isinstance(flt, dict):
        raise CommandError(14, f"BSON field 'find.filter' is the wrong type '{type_name(flt)}', expected type "
                               "'object'")
    skip = _nonneg(ctx, "skip") or 0
    limit = to_int(cmd.get("limit")) if cmd.get("limit") is not None else 0
    if limit is not None and limit < 0:
        raise CommandError(51024, f"BSON field 'limit' value must be >= 0, actual value '{limit}'",
                           code_name_override="Location51024")
    batch_size = _nonneg(ctx, "batchSize")
    if cmd.get("tailable"):
        raise CommandError(2, f"error processing query: ns={ctx.db}.{name} tailable cursor requested on non capped "
                              "collection")
    projection = Projection(cmd.get("projection")) if cmd.get("projection") else None
    view = read_view(ctx, name)
    ns = f"{ctx.db}.{name}"
    if view is None:
        check_hint_missing = cmd.get("hint")
        if check_hint_missing not in (None, {}) and not (isinstance(check_hint_missing, dict) and
                                                         "$natural" in check_hint_missing):
            pass
        return cursor_reply(0, ns, [], True)
    docs = select(view, flt, sort=cmd.get("sort"), skip=skip, limit=limit, hint=cmd.get("hint"))
    cursor = Cursor(ns, docs, lsid=_lsid_key(ctx), txn=ctx.txn, projection=projection, query=flt)
    first_n = batch_size if batch_size is not None else DEFAULT_FIRST_BATCH
    if cmd.get("singleBatch"):
        first_n = min(first_n, limit) if limit else first_n
    batch = cursor.next_batch(first_n) if first_n else []
    if cmd.get("singleBatch") or cursor.exhausted:
        return cursor_reply(0, ns, batch, True)
    ctx.member.cursors.add(cursor)
    return cursor_reply(cursor.id, ns, batch, True)


def _lsid_key(ctx):
    lsid = ctx.cmd.get("lsid")
    return hash_key(lsid.get("id")) if isinstance(lsid, dict) else None


@command("getMore", kind="read", txn=True)
async def get_more(ctx):
    cmd = ctx.cmd
    cid = cmd.get("getMore")
    if not isinstance(cid, int) or isinstance(cid, bool):
        raise CommandError(14, f"BSON field 'getMore.getMore' is the wrong type '{type_name(cid)}', expected type "
                               "'long'")
    coll = cmd.get("collection")
    if not isinstance(coll, str):
        raise CommandError(14, f"BSON field 'getMore.collection' is the wrong type '{type_name(coll)}', expected "
                               "type 'string'")
    batch_size = _nonneg(ctx, "batchSize")
    member = ctx.member
    ns = f"{ctx.db}.{coll}"
    cursor = member.cursors.get(cid, ns)
    if cursor.txn is not None and ctx.txn is not cursor.txn:
        raise CommandError(50740, "Cannot run getMore on cursor, which was created in a transaction, outside the "
                                  "transaction", code_name_override="Location50740")
    if cursor.busy:
        raise CommandError(292, f"cursor id {cid} is already in use", code_name_override="CursorInUse")
    ctx.change_stream = bool(getattr(cursor, "tailable", False))
    fp = member.failpoints.fail_getmore()
    if fp is not None:
        member.cursors.remove(cid)
        raise CommandError(to_int(fp.get("errorCode")) or 1, "Failing getMore via "
                                                                "'failGetMoreAfterCursorCheckout' failpoint")
    if getattr(cursor, "tailable", False):
        ctx.change_stream = True
        cursor.busy = True
        try:
            batch = await changestream.await_batch(cursor, batch_size, to_int(cmd.get("maxTimeMS")))
        except CommandError:
            member.cursors.remove(cid)
            raise
        finally:
            cursor.busy = False
        if member.cursors.cursors.get(int(cid)) is not cursor:
            err = member.cursors.killed.pop(int(cid), None)
            if err is not None:
                raise err
        if cursor.closed:
            member.cursors.remove(cid)
            return cursor_reply(0, cursor.ns, batch, False, cursor.post_batch_resume_token())
        reply = cursor_reply(cursor.id, cursor.ns, batch, False, cursor.post_batch_resume_token())
        if batch:
            ctx.after_reply = lambda: cursor.prefetch(batch_size)
        return reply
    batch = cursor.next_batch(batch_size)
    if cursor.exhausted:
        member.cursors.remove(cid)
        return cursor_reply(0, cursor.ns, batch, False)
    await asyncio.sleep(0)
    return cursor_reply(cursor.id, cursor.ns, batch, False)


@command("killCursors", kind="any", txn=True)
def kill_cursors(ctx):
    ids = ctx.cmd.get("cursors")
    if not isinstance(ids, list):
        raise CommandError(40414, "BSON field 'killCursors.cursors' is missing but a required field",
                           code_name_override="Location40414")
    killed, not_found = [], []
    for cid in ids:
        if ctx.member.cursors.remove(cid) is not None:
            killed.append(Int64(cid))
        else:
            not_found.append(Int64(cid))
    return {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [], "cursorsUnknown": []}


@command("count", kind="read", txn=False)
def count(ctx):
    name = _coll_arg(ctx)
    cmd = ctx.cmd
    view = read_view(ctx, name)
    if view is None:
        return {"n": 0}
    query = cmd.get("query") or {}
    skip = _nonneg(ctx, "skip") or 0
    limit = abs(to_int(cmd.get("limit")) or 0)
    if not query and not cmd.get("hint"):
        n = len(view.values()) if not hasattr(view, "docs") else len(view)
        n = max(0, n - skip)
        if limit:
            n = min(n, limit)
        return {"n": n}
    docs = select(view, query, skip=skip, limit=limit, hint=cmd.get("hint"))
    return {"n": len(docs)}


@command("distinct", kind="read", txn=True)
def distinct(ctx):
    name = _coll_arg(ctx)
    cmd = ctx.cmd
    key = cmd.get("key")
    if not isinstance(key, str):
        raise CommandError(14, f"BSON field 'distinct.key' is the wrong type '{type_name(key)}', expected type "
                               "'string'")
    view = read_view(ctx, name)
    if view is None:
        return {"values": []}
    docs = select(view, cmd.get("query") or {}, hint=cmd.get("hint"))
    seen: dict = {}
    parts = split_path(key)
    keyf = sort_key if COLLATION.get() is not None else hash_key
    for d in docs:
        for v in path_candidates(d, parts):
            if v is MISSING:
                continue
            items = v if isinstance(v, list) else [v]
            for item in items:
                k = keyf(item)
                if k not in seen:
                    seen[k] = item
    values = sorted(seen.values(), key=sort_key)
    return {"values": values}


def aggregate_writes(cmd) -> bool:
    pipeline = cmd.get("pipeline")
    if isinstance(pipeline, list) and pipeline and isinstance(pipeline[-1], dict):
        return next(iter(pipeline[-1]), None) in WRITE_STAGES
    return False


@command("aggregate", kind="aggregate", txn=True)
async def aggregate(ctx):
    cmd = ctx.cmd
    target = ctx.target
    pipeline = cmd.get("pipeline")
    if not isinstance(pipeline, list):
        raise CommandError(14, "'pipeline' option must be specified as an array")
    if "cursor" not in cmd and not cmd.get("explain"):
        raise CommandError(9, "The 'cursor' option is required, except for aggregate with the explain argument")
    cursor_opts = cmd.get("cursor") or {}
    batch_size = to_int(cursor_opts.get("batchSize")) if isinstance(cursor_opts, dict) else None
    if batch_size is not None and batch_size < 0:
        raise CommandError(51024, f"BSON field 'batchSize' value must be >= 0, actual value '{batch_size}'",
                           code_name_override="Location51024")
    if target == 1 or (is_number(target) and to_int(target) == 1):
        coll_name = None
    elif isinstance(target, str):
        coll_name = target
    else:
        raise CommandError(73, f"Invalid {{aggregate: {target!r}}}")
    if pipeline and isinstance(pipeline[0], dict) and "$changeStream" in pipeline[0]:
        return _open_change_stream(ctx, coll_name, pipeline, batch_size)
    rc = cmd.get("readConcern")
    if aggregate_writes(cmd) and isinstance(rc, dict) and rc.get("level") == "linearizable":
        raise CommandError(ErrorCodes_InvalidOptions, "{aggregate: ...} with $out or $merge cannot be run with "
                                                      "readConcern 'linearizable'")
    if ctx.txn is not None and aggregate_writes(cmd):
        raise CommandError(263, "Cannot run aggregation with $out or $merge in a multi-document transaction.",
                           code_name_override="OperationNotSupportedInTransaction")
    if coll_name is None:
        first = next(iter(pipeline[0])) if pipeline and isinstance(pipeline[0], dict) else None
        if first not in ("$documents", "$currentOp", "$listLocalSessions", "$listSessions"):
            raise CommandError(73, f"{{aggregate: 1}} is not valid for '{first}'; a collection is required.")
        docs = []
        if first in ("$listLocalSessions", "$listSessions"):
            docs = [{"_id": {"id": s.lsid.get("id"), "uid": s.lsid.get("uid", changestream.EMPTY_UID)},
                     "lastUse": ctx.rs.wall_now()} for s in ctx.rs.sessions.values()]
            pipeline = pipeline[1:]
        ns = f"{ctx.db}.$cmd.aggregate"
    else:
        view = read_view(ctx, coll_name)
        if cmd.get("hint") is not None and view is not None:
            check_hint(view, cmd.get("hint"))
        docs = list(view.values()) if view is not None else []
        ns = f"{ctx.db}.{coll_name}"

    def resolver(name):
        v = read_view(ctx, name) if isinstance(name, str) else None
        return list(v.values()) if v is not None else []

    stages = pipeline
    out_stage = None
    if aggregate_writes(cmd):
        stages, out_stage = pipeline[:-1], pipeline[-1]
    results = run_pipeline(docs, stages, resolver, cmd.get("let"))
    if out_stage is not None:
        _write_out(ctx, out_stage, results)
        results = []
    if cmd.get("explain"):
        return {"explainVersion": "1", "queryPlanner": {"namespace": ns, "winningPlan": {"stage": "COLLSCAN"}}}
    cursor = Cursor(ns, results, lsid=_lsid_key(ctx), txn=ctx.txn)
    first_n = batch_size if batch_size is not None else DEFAULT_FIRST_BATCH
    batch = cursor.next_batch(first_n) if first_n else []
    if cursor.exhausted:
        return cursor_reply(0, ns, batch, True)
    ctx.member.cursors.add(cursor)
    return cursor_reply(cursor.id, ns, batch, True)


def _write_out(ctx, stage, results):
    from devstack.mongo.writes import Writer

    rs = ctx.rs
    name, spec = next(iter(stage.items()))
    if name == "$out":
        if isinstance(spec, str):
            db, coll = ctx.db, spec
        else:
            db, coll = spec.get("db", ctx.db), spec.get("coll")
        tmp = f"tmp.agg_out.{Int64(abs(hash(id(results))) % 10**9)}"
        rs.create_collection(db, tmp, {})
        w = Writer(rs, db)
        c = rs.catalog.get_collection(db, tmp)
        for d in results:
            w.insert_one(c, dict(d))
        rs.rename_collection(db, tmp, db, coll, drop_target=True)
        ctx.op_ts = rs.last_ts
        return
    into = spec.get("into")
    if isinstance(into, str):
        db, coll = ctx.db, into
    else:
        db, coll = into.get("db", ctx.db), into.get("coll")
    on = spec.get("on", "_id")
    on_fields = [on] if isinstance(on, str) else list(on)
    when_matched = spec.get("whenMatched", "merge")
    when_not = spec.get("whenNotMatched", "insert")
    w = Writer(rs, db)
    target = w.collection(coll, create=True)
    for d in results:
        flt = {f: d.get(f) for f in on_fields}
        existing = select(target, flt, single=True)
        if existing:
            old = existing[0]
            if when_matched == "replace":
                w.update_doc(target, old, {k: v for k, v in d.items() if k != "_id"})
            elif when_matched == "merge":
                w.update_doc(target, old, {"$set": {k: v for k, v in d.items() if k != "_id"}})
            elif when_matched == "fail":
                key = {f: d.get(f) for f in on_fields}
                raise CommandError(11000, f"E11000 duplicate key error collection: {db}.{coll} index: _id_ dup key: "
                                          f"{key}", extra={"keyPattern": {f: 1 for f in on_fields},
                                                           "keyValue": key})
            elif isinstance(when_matched, list):
                w.update_doc(target, old, when_matched)
        elif when_not == "insert":
            w.insert_one(target, dict(d))
        elif when_not == "fail":
            raise CommandError(13113, "$merge could not find a matching document in the target collection",
                               code_name_override="MergeStageNoMatchingDocument")
    ctx.op_ts = rs.last_ts


def _open_change_stream(ctx, coll_name, pipeline, batch_size):
    if ctx.txn is not None:
        raise CommandError(263, "Operation not permitted in transaction :: caused by :: $changeStream cannot run in "
                                "a transaction", code_name_override="OperationNotSupportedInTransaction")
    if ctx.rs.standalone:
        raise CommandError(40573, "The $changeStream stage is only supported on replica sets")
    ctx.change_stream = True
    spec = changestream.StreamSpec(pipeline[0]["$changeStream"], ctx.db, coll_name)
    cursor = changestream.ChangeStreamCursor(ctx.rs, spec, pipeline[1:], lsid=_lsid_key(ctx))
    batch = cursor.next_batch(batch_size if batch_size is not None else DEFAULT_FIRST_BATCH) \
        if batch_size != 0 else []
    if cursor.closed:
        return cursor_reply(0, cursor.ns, batch, True, cursor.post_batch_resume_token())
    ctx.member.cursors.add(cursor)
    reply = cursor_reply(cursor.id, cursor.ns, batch, True, cursor.post_batch_resume_token())
    if batch:
        ctx.after_reply = lambda: cursor.prefetch(None)
    return reply


def compile_match(flt):
    return compile_filter(flt)
