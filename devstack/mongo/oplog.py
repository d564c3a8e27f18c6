"""The oplog: a capped, totally ordered list of entries with awaitable appends.

Entries are Python objects (documents kept as dicts and, lazily, raw BSON) so change streams can build
events without re-encoding documents. `to_doc()` gives the entry as MongoDB 7.0 writes it in
`local.oplog.rs`. The cap (entries and/or bytes) trims the oldest entries, so old resume points really
vanish.
"""

from __future__ import annotations

import asyncio
import bisect

from bson.int64 import Int64
from bson.raw_bson import RawBSONDocument
from bson.timestamp import Timestamp

from devstack.mongo.bsonutil import encode_in_order


class Op:
    """One operation: a whole oplog entry, or one element of a transaction's `applyOps`."""

    __slots__ = ("op", "ns", "ui", "o", "o2", "pre_image", "post_image", "stmt_id", "_raw_o", "size",
                 "extra", "ev")

    def __init__(self, op: str, ns: str, ui=None, o=None, o2=None, pre_image=None, post_image=None,
                 stmt_id=None, extra=None):
        self.op = op
        self.ns = ns
        self.ui = ui
        self.o = o
        self.o2 = o2
        self.pre_image = pre_image
        self.post_image = post_image
        self.stmt_id = stmt_id
        self.extra = extra
        self._raw_o = None
        self.size = 0
        self.ev = None

    def raw_bytes(self) -> bytes:
        """`o` as BSON (cached): change events splice these bytes in without re-encoding."""
        if self._raw_o is None:
            self._raw_o = self.o.raw if isinstance(self.o, RawBSONDocument) else encode_in_order(self.o)
        return self._raw_o

    def raw_o(self) -> RawBSONDocument:
        return RawBSONDocument(self.raw_bytes())

    def to_doc(self) -> dict:
        d = {"op": self.op, "ns": self.ns}
        if self.ui is not None:
            d["ui"] = self.ui
        d["o"] = self.o
        if self.o2 is not None:
            d["o2"] = self.o2
        if self.stmt_id is not None:
            d["stmtId"] = self.stmt_id
        if self.extra:
            d.update(self.extra)   # e.g. fromMigrate: true on a chunk migration's inserts and deletes
        return d


class Entry:
    """A top-level oplog entry."""

    __slots__ = ("seq", "ts", "term", "wall", "op", "ops", "lsid", "txn_number", "prev_ts", "size", "cache",
                 "wall_ms", "key")

    def __init__(self, ts: Timestamp, term: int, wall, op: Op | None = None, ops: list[Op] | None = None,
                 lsid=None, txn_number=None):
        self.seq = -1
        self.ts = ts
        self.term = term
        self.wall = wall
        self.op = op          # single operation (crud, command, noop)
        self.ops = ops        # transaction: applyOps list
        self.lsid = lsid
        self.txn_number = txn_number
        self.size = 0
        self.cache: dict = {}
        self.wall_ms = None   # wallTime as epoch ms, computed when an event first needs it
        self.key = None       # (ts.time, ts.inc), set when appended to the oplog

    @property
    def is_txn(self) -> bool:
        return self.ops is not None

    def to_doc(self) -> dict:
        if self.ops is not None:
            d = {"lsid": self.lsid, "txnNumber": self.txn_number, "op": "c", "ns": "admin.$cmd",
                 "o": {"applyOps": [op.to_doc() for op in self.ops]}}
        else:
            d = self.op.to_doc()
            if self.lsid is not None:
                d = {"lsid": self.lsid, "txnNumber": self.txn_number, **d}
        d["ts"] = self.ts
        d["t"] = Int64(self.term)
        d["v"] = Int64(2)
        d["wall"] = self.wall
        if self.ops is not None:
            d["prevOpTime"] = {"ts": Timestamp(0, 0), "t": Int64(-1)}
        return d

    def estimate_size(self) -> int:
        ops = self.ops if self.ops is not None else [self.op]
        total = 120
        for op in ops:
            if op.o is not None:
                try:
                    total += len(op.raw_bytes()) + 60
                except Exception:
                    total += 200
        self.size = total
        return total


class Oplog:
    """Entries in append order. Trimming is amortised: a trimmed entry's slot is cleared at once (its memory freed)
    and the slots are compacted away only once they are an eighth of the list, so an append at the cap costs the
    same at ten thousand entries as at a million (deleting the list's head on every append moved every pointer)."""

    def __init__(self, max_entries: int | None = None, max_bytes: int | None = None):
        self.entries: list[Entry | None] = []   # entries[head:] are the oplog; slots before head are trimmed
        self.head = 0
        self.base_seq = 0      # seq of entries[0] (a trimmed slot while head > 0)
        self.next_seq = 0
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        self._ts_keys: list[tuple] = []
        self._waiters: list[asyncio.Future] = []
        self.trimmed_through: Timestamp | None = None   # newest ts that has been removed

    def __len__(self):
        return len(self.entries) - self.head

    @property
    def first_seq(self) -> int:
        """seq of the oldest entry still in the oplog (next_seq when it is empty)."""
        return self.base_seq + self.head

    def live(self) -> list[Entry]:
        """The entries, oldest first (a copy)."""
        return self.entries[self.head:]

    def append(self, entry: Entry) -> Entry:
        entry.seq = self.next_seq
        self.next_seq += 1
        self.entries.append(entry)
        entry.key = (entry.ts.time, entry.ts.inc)
        self._ts_keys.append(entry.key)
        self.bytes += entry.estimate_size()
        self.trim()
        self._wake()
        return entry

    def set_limits(self, max_entries: int | None, max_bytes: int | None) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.trim()

    def trim(self):
        """Drop the oldest entries while over a cap (the newest entry always stays)."""
        entries = self.entries
        head = self.head
        n = len(entries)
        dropped = None
        while n - head > 1 and (
            (self.max_entries is not None and n - head > self.max_entries)
            or (self.max_bytes is not None and self.bytes > self.max_bytes)
        ):
            dropped = entries[head]
            entries[head] = None
            self.bytes -= dropped.size
            head += 1
        if dropped is None:
            return
        self.trimmed_through = dropped.ts
        self.head = head
        if head >= 1024 and head * 8 >= n:
            del entries[:head]
            del self._ts_keys[:head]
            self.base_seq += head
            self.head = 0

    def _wake(self):
        if not self._waiters:
            return
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(True)

    async def wait_for_append(self, after_seq: int, timeout: float) -> bool:
        """Wait until an entry with seq >= after_seq exists (or timeout). True if one exists."""
        if self.next_seq > after_seq:
            return True
        if timeout <= 0:
            return False
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return self.next_seq > after_seq
        return self.next_seq > after_seq

    def wake_all(self):
        self._wake()

    @property
    def first(self) -> Entry | None:
        return self.entries[self.head] if len(self.entries) > self.head else None

    @property
    def last(self) -> Entry | None:
        return self.entries[-1] if len(self.entries) > self.head else None

    def get(self, seq: int) -> Entry | None:
        i = seq - self.base_seq
        if self.head <= i < len(self.entries):
            return self.entries[i]
        return None

    def seq_at_or_after(self, ts: Timestamp) -> int:
        i = bisect.bisect_left(self._ts_keys, (ts.time, ts.inc), self.head)
        return self.base_seq + i

    def seq_after(self, ts: Timestamp) -> int:
        i = bisect.bisect_right(self._ts_keys, (ts.time, ts.inc), self.head)
        return self.base_seq + i

    def iter_from(self, seq: int):
        i = max(self.head, seq - self.base_seq)
        entries = self.entries
        while i < len(entries):
            yield entries[i]
            i += 1

    def clear(self):
        self.entries.clear()
        self._ts_keys.clear()
        self.head = 0
        self.base_seq = self.next_seq
        self.bytes = 0
