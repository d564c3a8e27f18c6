"""Sessions, retryable-write memory and multi-document transactions.

A transaction reads a snapshot taken at its first statement (older versions of documents written since
are kept in per-collection history while any transaction is open) overlaid with its own writes. Its writes
are buffered and applied at commit as one `applyOps` oplog entry carrying `lsid` and `txnNumber`.
Conflicts: writing a document changed after the snapshot, or held by another open transaction, fails with
WriteConflict (TransientTransactionError); a non-transactional write to a document held by an open
transaction aborts that transaction instead of blocking (documented difference).
"""

from __future__ import annotations

import time

from devstack.mongo.bsonutil import MISSING, hash_key, sort_key
from devstack.mongo.errors import CommandError
from devstack.mongo.storage import duplicate_key

TRANSIENT = "TransientTransactionError"


def write_conflict() -> CommandError:
    return CommandError(112, "Write conflict during plan execution and yielding is disabled. :: Please retry your "
                             "operation or multi-document transaction.", labels=[TRANSIENT])


class Transaction:
    def __init__(self, session, txn_number: int, snapshot_ts, read_concern=None):
        self.session = session
        self.txn_number = txn_number
        self.snapshot_ts = snapshot_ts
        self.read_concern = read_concern
        self.state = "in_progress"     # in_progress | committed | aborted
        self.writes: dict = {}         # (ns, idk) -> doc | None
        self.ops: list = []            # buffered Ops for applyOps
        self.created: dict = {}        # ns -> Collection created inside the transaction
        self.abort_reason: CommandError | None = None
        self.started = time.monotonic()
        self.commit_reply = None
        self.pinned_member = None
        self.commit_ts = None


class Session:
    def __init__(self, lsid: dict):
        self.lsid = lsid
        self.key = hash_key(lsid.get("id"))
        self.txn_number = -1
        self.txn: Transaction | None = None
        self.retry_results: dict = {}   # txnNumber -> reply
        self.last_use = time.monotonic()


class TxnView:
    """A collection as a transaction sees it: snapshot + own writes. Same interface as storage.Collection."""

    def __init__(self, coll, txn: Transaction, registry):
        self.coll = coll
        self.txn = txn
        self.registry = registry

    # identity
    @property
    def ns(self):
        return self.coll.ns

    @property
    def db(self):
        return self.coll.db

    @property
    def name(self):
        return self.coll.name

    @property
    def uuid(self):
        return self.coll.uuid

    @property
    def options(self):
        return self.coll.options

    @property
    def indexes(self):
        return self.coll.indexes

    @property
    def pre_post_images(self):
        return self.coll.pre_post_images

    def _snapshot_doc(self, idk):
        hist = self.coll_history().get(idk)
        if hist:
            for ts, old in hist:
                if ts > self.txn.snapshot_ts:
                    return old
        return self.coll.docs.get(idk)

    def coll_history(self):
        return self.registry.history.get(self.coll.ns, {})

    def get(self, id_value):
        idk = hash_key(id_value)
        key = (self.coll.ns, idk)
        if key in self.txn.writes:
            return self.txn.writes[key]
        return self._snapshot_doc(idk)

    def values(self):
        ns = self.coll.ns
        writes = self.txn.writes
        hist = self.coll_history()
        seen = set()
        out = []
        for idk, doc in self.coll.docs.items():
            seen.add(idk)
            if (ns, idk) in writes:
                d = writes[(ns, idk)]
            elif idk in hist:
                d = self._snapshot_doc(idk)
            else:
                d = doc
            if d is not None:
                out.append(d)
        for idk in hist:
            if idk not in seen and (ns, idk) not in writes:
                d = self._snapshot_doc(idk)
                if d is not None:
                    out.append(d)
                    seen.add(idk)
        for (wns, idk), d in writes.items():
            if wns == ns and idk not in seen and d is not None:
                out.append(d)
        return out

    def id_range(self, low=MISSING, low_incl=True, high=MISSING, high_incl=False, reverse=False, skip=0, limit=0):
        """The documents of the transaction's view whose _id is within the bounds, in _id order, as
        storage.Collection.id_range: the collection's range as it is now, each document as the view sees it, plus
        the documents deleted since the snapshot and those the transaction inserted, when within the bounds (a
        document's _id never changes)."""
        ns = self.coll.ns
        writes = self.txn.writes
        hist = self.coll_history()
        docs = self.coll.docs
        out = []
        for doc in self.coll.id_range(low, low_incl, high, high_incl):
            idk = hash_key(doc["_id"])
            if (ns, idk) in writes:
                doc = writes[(ns, idk)]
            elif idk in hist:
                doc = self._snapshot_doc(idk)
            if doc is not None:
                out.append(doc)
        lo = None if low is MISSING else sort_key(low)
        hi = None if high is MISSING else sort_key(high)

        def within(doc) -> bool:
            key = sort_key(doc["_id"])
            return ((lo is None or key > lo or (low_incl and key == lo))
                    and (hi is None or key < hi or (high_incl and key == hi)))

        extra = [self._snapshot_doc(idk) for idk in hist if idk not in docs and (ns, idk) not in writes]
        extra += [doc for (wns, idk), doc in writes.items() if wns == ns and idk not in docs]
        extra = [doc for doc in extra if doc is not None and within(doc)]
        if extra:
            out = sorted(out + extra, key=lambda doc: sort_key(doc["_id"]))
        if reverse:
            out.reverse()
        return out[skip:skip + limit] if limit else out[skip:]

    def __len__(self):
        return len(self.values())

    def _claim(self, idk):
        self.registry.claim(self.txn, self.coll.ns, idk)

    def check_unique(self, doc, ignore_idk=None):
        for index in self.coll.indexes.values():
            if not index.unique or index.name == "_id_":
                continue
            keys = set(index.keys_for(doc))
            if not keys:
                continue
            for other in self.values():
                oidk = hash_key(other["_id"])
                if oidk == ignore_idk:
                    continue
                if keys & set(index.keys_for(other)):
                    raise duplicate_key(self.coll, index, doc)

    def insert(self, doc):
        idk = hash_key(doc["_id"])
        if self.get(doc["_id"]) is not None:
            raise duplicate_key(self.coll, self.coll.indexes["_id_"], doc)
        self._claim(idk)
        self.check_unique(doc)
        self.txn.writes[(self.coll.ns, idk)] = doc

    def replace(self, old, new):
        idk = hash_key(old["_id"])
        self._claim(idk)
        self.check_unique(new, ignore_idk=idk)
        self.txn.writes[(self.coll.ns, idk)] = new

    def delete(self, doc):
        idk = hash_key(doc["_id"])
        self._claim(idk)
        self.txn.writes[(self.coll.ns, idk)] = None


class TxnRegistry:
    """Open transactions of one replica set, document claims and the history that snapshots need."""

    def __init__(self):
        self.open: set[Transaction] = set()
        self.claims: dict = {}        # (ns, idk) -> Transaction
        self.history: dict = {}       # ns -> {idk: [(ts, old_doc)]}
        self.last_write: dict = {}    # (ns, idk) -> ts  (kept while transactions are open)

    def begin(self, txn: Transaction):
        self.open.add(txn)

    def end(self, txn: Transaction):
        self.open.discard(txn)
        for key in [k for k, t in self.claims.items() if t is txn]:
            del self.claims[key]
        if not self.open:
            self.history.clear()
            self.last_write.clear()

    def claim(self, txn: Transaction, ns, idk):
        key = (ns, idk)
        holder = self.claims.get(key)
        if holder is not None and holder is not txn and holder.state == "in_progress":
            raise write_conflict()
        ts = self.last_write.get(key)
        if ts is not None and ts > txn.snapshot_ts:
            raise write_conflict()
        self.claims[key] = txn

    def note_write(self, ns, idk, ts, old_doc):
        """A committed write (outside or at commit of a transaction): keep the old version for snapshots."""
        if not self.open:
            return
        self.history.setdefault(ns, {}).setdefault(idk, []).append((ts, old_doc))
        self.last_write[(ns, idk)] = ts

    def holder(self, ns, idk):
        t = self.claims.get((ns, idk))
        return t if t is not None and t.state == "in_progress" else None
