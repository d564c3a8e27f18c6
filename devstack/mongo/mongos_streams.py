"""Change streams through mongos: one stream per shard, merged in cluster-time order.

Every shard of an emulated cluster takes its timestamps from one clock, and the router reads all shards in one
step of the event loop, so when it has read every shard up to the clock's last timestamp no event at or before
that time can still appear: those events are sorted by resume token and returned. A shard read only part way
(a large backlog) holds the others back to the last event it returned. `postBatchResumeToken` is the last event's
token, or a high-water-mark token at the time everything has been read to.

Resuming on mongos opens every shard at the token's cluster time and drops the events at or before the token.
A chunk migration's inserts and deletes (`fromMigrate`) never appear; DDL events (drop, rename, dropDatabase and
the invalidate after them) are taken from the database's primary shard only, so each appears once.
"""

from __future__ import annotations

import asyncio
import time

from bson.int64 import Int64
from bson.raw_bson import RawBSONDocument

from devstack.mongo import tokens
from devstack.mongo.bsonutil import to_int
from devstack.mongo.changestream import BATCH_BUDGET, ChangeStreamCursor, StreamSpec, await_batch
from devstack.mongo.commands.query import cursor_reply
from devstack.mongo.cursors import new_cursor_id
from devstack.mongo.errors import CommandError

_CRUD = {"insert", "update", "replace", "delete"}
_BACKLOG = 20000    # events read ahead from one shard before it holds the others back


class MergedChangeStream:
    tailable = True

    def __init__(self, cluster, spec: StreamSpec, opts: dict, pipeline: list, lsid=None):
        self.id = new_cursor_id()
        self.cluster = cluster
        self.spec = spec
        self.ns = spec.cursor_ns
        self.lsid = lsid
        self.txn = None
        self.closed = False
        self.killed = None
        self.busy = False
        self.last_used = time.monotonic()
        self.resume_key = None
        shard_opts = {k: v for k, v in opts.items() if k not in ("resumeAfter", "startAfter")}
        if spec.start_kind in ("resumeAfter", "startAfter"):
            data = tokens.decode_token(spec.start_value)
            if spec.start_kind == "resumeAfter" and data.from_invalidate:
                raise CommandError(260, "Attempting to resume a change stream using 'resumeAfter' is not allowed "
                                        "from an invalidate notification.")
            shard_opts["startAtOperationTime"] = data.ts
            self.resume_key = data.sort_key()
            self.last_token = {"_data": spec.start_value["_data"]}
        elif spec.start_kind == "startAtOperationTime":
            self.last_token = tokens.make_hwm_token(spec.start_value)
        else:
            last = cluster.clock.last
            self.last_token = tokens.make_hwm_token(type(last)(last.time, last.inc + 1))
        self.shards = {}
        for name, rs in cluster.shards.items():
            shard_spec = StreamSpec(shard_opts, spec.db, spec.coll)
            self.shards[name] = ChangeStreamCursor(rs, shard_spec, pipeline, lsid)
        self.pending: list[tuple] = []      # (sort key, token, bytes)
        self.read_to: dict[str, tuple] = {}  # shard -> sort key everything up to which has been read

    def _pull(self):
        horizon = self.cluster.clock.last
        top = (horizon.time, horizon.inc, 0xFF)
        primary = self.cluster.databases.get(self.spec.db) if self.spec.scope != "cluster" else None
        for name, cursor in self.shards.items():
            if cursor.closed:
                self.read_to[name] = top
                continue
            pulled = 0
            while True:
                batch = cursor.next_batch(None)
                if not batch:
                    self.read_to[name] = top
                    break
                for data in batch:
                    event = RawBSONDocument(data)
                    token = {"_data": event["_id"]["_data"]}
                    key = tokens.token_key(token)
                    if self.resume_key is not None and key <= self.resume_key:
                        continue
                    if event["operationType"] not in _CRUD and not self._from_primary(name, event, primary):
                        continue
                    self.pending.append((key, token, data))
                pulled += len(batch)
                if pulled >= _BACKLOG:
                    self.read_to[name] = tokens.token_key(cursor.last_token)
                    break
        self.pending.sort(key=lambda item: item[0])

    def _from_primary(self, shard: str, event, primary) -> bool:
        if primary is None:
            ns = event.get("ns") or {}
            primary = self.cluster.databases.get(ns.get("db"))
        return primary is None or shard == primary

    def next_batch(self, batch_size: int | None, budget: int = BATCH_BUDGET) -> list:
        self.last_used = time.monotonic()
        if self.closed:
            return []
        self._pull()
        limit_key = min(self.read_to.values())
        out: list = []
        size = 0
        taken = 0
        for key, token, data in self.pending:
            if key > limit_key or (batch_size and len(out) >= batch_size) or (out and size + len(data) > budget):
                break
            out.append(data)
            size += len(data) + 8
            taken += 1
            self.last_token = token
            if RawBSONDocument(data)["operationType"] == "invalidate":
                self.closed = True
                break
        del self.pending[:taken]
        if not self.closed and (not self.pending or self.pending[0][0] > limit_key) and limit_key[2] == 0xFF:
            hwm = tokens.make_hwm_token(self.cluster.clock.last)
            if tokens.token_key(hwm) > tokens.token_key(self.last_token):
                self.last_token = hwm
        return out

    def post_batch_resume_token(self) -> dict:
        return self.last_token

    async def wait_for_events(self, timeout: float) -> bool:
        waits = [asyncio.ensure_future(c.wait_for_events(timeout)) for c in self.shards.values() if not c.closed]
        if not waits:
            return False
        done, pending = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        return any(t.result() for t in done if not t.cancelled())

    async def wait_prefetch(self):
        return None

    def take_prefetched(self):
        return None

    async def prefetch(self, batch_size):
        return None

    def close(self):
        self.closed = True
        for cursor in self.shards.values():
            cursor.close()


async def open_stream(req) -> dict:
    cmd = req.cmd
    pipeline = cmd["pipeline"]
    coll = req.target if isinstance(req.target, str) else None
    if req.cmd.get("autocommit") is False:
        raise CommandError(263, "Cannot run 'aggregate' with $changeStream in a multi-document transaction.",
                           code_name_override="OperationNotSupportedInTransaction")
    opts = pipeline[0]["$changeStream"]
    spec = StreamSpec(opts, req.db, coll)
    cursor = MergedChangeStream(req.router.cluster, spec, dict(opts), pipeline[1:], cmd.get("lsid"))
    batch_size = to_int((cmd.get("cursor") or {}).get("batchSize"))
    batch = cursor.next_batch(batch_size) if batch_size != 0 else []
    req.router.cursors.add(cursor)
    return cursor_reply(cursor.id, cursor.ns, batch, True, cursor.post_batch_resume_token())


async def stream_get_more(req, cursor: MergedChangeStream) -> dict:
    if cursor.busy:
        raise CommandError(292, f"cursor id {cursor.id} is already in use", code_name_override="CursorInUse")
    cursor.busy = True
    try:
        batch = await await_batch(cursor, to_int(req.cmd.get("batchSize")), to_int(req.cmd.get("maxTimeMS")))
    except CommandError as exc:
        req.router.cursors.remove(cursor.id)
        if exc.code in (136, 286):
            exc.labels = list(exc.labels) + ["NonResumableChangeStreamError"]
        raise
    finally:
        cursor.busy = False
    cursor_id = Int64(0) if cursor.closed else cursor.id
    if cursor.closed:
        req.router.cursors.remove(cursor.id)
    return cursor_reply(cursor_id, cursor.ns, batch, False, cursor.post_batch_resume_token())
