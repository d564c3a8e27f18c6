"""Server-side cursors of one member: plain query cursors and change-stream cursors."""

from __future__ import annotations

import random
import time

from bson.int64 import Int64

from devstack.mongo.bsonutil import MAX_BSON_SIZE
from devstack.mongo.errors import CommandError

DEFAULT_FIRST_BATCH = 101
REPLY_BUDGET = MAX_BSON_SIZE - 64 * 1024


def new_cursor_id() -> Int64:
    return Int64(random.randint(1, 2**62))


class Cursor:
    """A cursor over an already computed list of documents (find, aggregate, listCollections...)."""

    tailable = False

    def __init__(self, ns: str, docs, lsid=None, txn=None, projection=None, query=None, limit: int = 0):
        self.id = new_cursor_id()
        self.ns = ns
        self.docs = docs
        self.pos = 0
        self.lsid = lsid
        self.txn = txn
        self.projection = projection
        self.query = query
        self.limit = limit
        self.returned = 0
        self.last_used = time.monotonic()
        self.killed: CommandError | None = None
        self.busy = False

    def next_batch(self, batch_size: int | None) -> list:
        self.last_used = time.monotonic()
        out = []
        size = 0
        docs = self.docs
        n = len(docs)
        limit_left = (self.limit - self.returned) if self.limit else None
        while self.pos < n:
            if batch_size and len(out) >= batch_size:
                break
            if limit_left is not None and len(out) >= limit_left:
                break
            doc = docs[self.pos]
            if self.projection is not None:
                doc = self.projection.apply(doc, self.query)
            if size > REPLY_BUDGET - 1_000_000 and out:
                break
            size += 1024
            out.append(doc)
            self.pos += 1
        self.returned += len(out)
        return out

    @property
    def exhausted(self) -> bool:
        if self.limit and self.returned >= self.limit:
            return True
        return self.pos >= len(self.docs)


class CursorManager:
    def __init__(self):
        self.cursors: dict[int, Cursor] = {}
        self.killed: dict[int, CommandError] = {}

    def add(self, cursor) -> int:
        self.cursors[int(cursor.id)] = cursor
        return cursor.id

    def get(self, cursor_id: int, ns: str | None = None):
        cid = int(cursor_id)
        cur = self.cursors.get(cid)
        if cur is None:
            err = self.killed.pop(cid, None)
            if err is not None:
                raise err
            raise CommandError(43, f"cursor id {cid} not found")
        if ns is not None and cur.ns != ns:
            raise CommandError(13, f"Requested getMore on namespace '{ns}', but cursor belongs to a different "
                                   f"namespace {cur.ns}", code_name_override="Unauthorized")
        return cur

    def remove(self, cursor_id: int):
        return self.cursors.pop(int(cursor_id), None)

    def kill_all(self, error: CommandError | None = None, only=None):
        for cid, cur in list(self.cursors.items()):
            if only is not None and not only(cur):
                continue
            del self.cursors[cid]
            if error is not None:
                self.killed[cid] = error(cur) if callable(error) else error
            close = getattr(cur, "close", None)
            if close:
                close()
        if len(self.killed) > 10000:
            self.killed.clear()

    def kill_for_session(self, lsid_key):
        for cid, cur in list(self.cursors.items()):
            if cur.lsid is not None and cur.lsid == lsid_key:
                del self.cursors[cid]
