"""`$changeStream`: turning oplog entries into change events, resuming, and batching for getMore.

Events follow MongoDB 7.0's shapes and field order (see docs/emulator.md). A stream's position is an
oplog sequence number plus an index into the events of that entry (transactions produce several);
`postBatchResumeToken` is the last event's token, or a high-water-mark token at the last oplog entry
scanned when that is later.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import struct
import time

from bson.binary import Binary
from bson.int64 import Int64
from bson.timestamp import Timestamp

from devstack.mongo import tokens
from devstack.mongo.bsonutil import MAX_BSON_SIZE, elements, encode_in_order, to_plain
from devstack.mongo.cursors import new_cursor_id
from devstack.mongo.errors import CommandError
from devstack.mongo.query import compile_filter

FULL_DOCUMENT = ("default", "updateLookup", "whenAvailable", "required")
BEFORE_CHANGE = ("off", "whenAvailable", "required")
ALLOWED_STAGES = {"$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith", "$redact",
                  "$changeStreamSplitLargeEvent"}
INTERNAL_DBS = ("admin", "config", "local")
_OPTIONS = {
    "fullDocument": str, "fullDocumentBeforeChange": str, "resumeAfter": dict, "startAfter": dict,
    "startAtOperationTime": Timestamp, "allChangesForCluster": bool, "showExpandedEvents": bool,
    "showMigrationEvents": bool, "showSystemEvents": bool, "allowToRunOnConfigDB": bool,
    "allowToRunOnSystemNS": bool, "showRawUpdateDescription": bool,
}
EMPTY_UID = Binary(hashlib.sha256(b"").digest(), 0)
BATCH_BUDGET = MAX_BSON_SIZE - 8 * 1024
MAX_EVENT_SIZE = MAX_BSON_SIZE + 16 * 1024  # mongod's BSONObjMaxInternalSize: a larger event fails the getMore


def _wrong_type(field, value, expected):
    from devstack.mongo.bsonutil import type_name

    return CommandError(14, f"BSON field '$changeStream.{field}' is the wrong type '{type_name(value)}', expected "
                            f"type '{expected}'")


class StreamSpec:
    def __init__(self, opts, db: str, coll: str | None):
        if not isinstance(opts, dict):
            raise CommandError(50808, "$changeStream stage expects a document as argument",
                               code_name_override="Location50808")
        for key, value in opts.items():
            if key not in _OPTIONS:
                raise CommandError(40415, f"BSON field '$changeStream.{key}' is an unknown field.",
                                   code_name_override="Location40415")
            want = _OPTIONS[key]
            if not isinstance(value, want) or (want is not bool and isinstance(value, bool)):
                names = {str: "string", dict: "object", Timestamp: "timestamp", bool: "bool"}
                raise _wrong_type(key, value, names[want])
        self.full_document = opts.get("fullDocument", "default")
        if self.full_document not in FULL_DOCUMENT:
            raise CommandError(2, f"Enumeration value '{self.full_document}' for field '$changeStream.fullDocument' "
                                  "is not a valid value.")
        self.before_change = opts.get("fullDocumentBeforeChange", "off")
        if self.before_change not in BEFORE_CHANGE:
            raise CommandError(2, f"Enumeration value '{self.before_change}' for field "
                                  "'$changeStream.fullDocumentBeforeChange' is not a valid value.")
        starts = [k for k in ("resumeAfter", "startAfter", "startAtOperationTime") if k in opts]
        if len(starts) > 1:
            raise CommandError(40674, "Only one type of resume option is allowed, but multiple were found.",
                               code_name_override="Location40674")
        self.start_kind = starts[0] if starts else None
        self.start_value = opts.get(self.start_kind) if self.start_kind else None
        self.expanded = bool(opts.get("showExpandedEvents", False))
        self.migrations = bool(opts.get("showMigrationEvents", False))
        self.all_cluster = bool(opts.get("allChangesForCluster", False))
        self.db = db
        self.coll = coll
        if self.all_cluster:
            if db != "admin" or coll is not None:
                raise CommandError(ErrorCodes.InvalidOptions, "A $changeStream with 'allChangesForCluster:true' may "
                                                              "only be opened on the 'admin' database, and with no "
                                                              "collection name")
            self.scope = "cluster"
        elif coll is None:
            if db in INTERNAL_DBS:
                raise CommandError(ErrorCodes.InvalidNamespace, f"$changeStream may not be opened on the internal "
                                                                f"{db} database")
            self.scope = "database"
        else:
            if db in INTERNAL_DBS or coll.startswith("system."):
                raise CommandError(ErrorCodes.InvalidNamespace, f"$changeStream may not be opened on the internal "
                                                                f"{db}.{coll} collection")
            self.scope = "collection"

    @property
    def cursor_ns(self) -> str:
        if self.scope == "collection":
            return f"{self.db}.{self.coll}"
        return f"{self.db}.$cmd.aggregate"

    @property
    def simple(self) -> bool:
        return self.full_document == "default" and self.before_change == "off" and not self.expanded

    @property
    def plain_but_lookups(self) -> bool:
        """Every event is a default-option event but updateLookup's updates (their fullDocument is read from the
        collection): inserts, deletes and replacements can take the fast path and be built ahead."""
        return self.full_document in ("default", "updateLookup") and self.before_change == "off" and not self.expanded

    def looks_up(self, op) -> bool:
        """`op` (a CRUD oplog operation) is an update whose event reads the collection (updateLookup)."""
        return self.full_document == "updateLookup" and op.op == "u" and "$v" in op.o

    def visible(self, db: str, coll: str | None) -> bool:
        if coll is not None and coll.startswith("system."):
            return False
        if self.scope == "cluster":
            return db not in INTERNAL_DBS
        if self.scope == "database":
            return db == self.db
        return db == self.db and coll == self.coll


class ErrorCodes:
    InvalidOptions = 72
    InvalidNamespace = 73


def _split_ns(ns: str):
    db, _, coll = ns.partition(".")
    return db, coll


def _ns_doc(db, coll=None):
    return {"db": db, "coll": coll} if coll is not None else {"db": db}


def diff_to_description(diff: dict, expanded: bool) -> dict:
    updated: dict = {}
    removed: list = []
    truncated: list = []
    disamb: dict = {}

    def note(path_parts):
        # path_parts: [(name, is_index)]
        ambiguous = False
        for i, (name, is_idx) in enumerate(path_parts):
            if is_idx:
                continue
            if i > 0 and name.isdigit():
                ambiguous = True
            elif "." in name:
                ambiguous = True
            if ambiguous:
                break
        if ambiguous and expanded:
            disamb[".".join(n for n, _ in path_parts)] = [int(n) if idx else n for n, idx in path_parts]

    def walk_doc(d, prefix):
        for section in ("u", "i", "b"):
            for k, v in (d.get(section) or {}).items():
                parts = prefix + [(k, False)]
                updated[".".join(n for n, _ in parts)] = v
                note(parts)
        for k in (d.get("d") or {}):
            parts = prefix + [(k, False)]
            removed.append(".".join(n for n, _ in parts))
            note(parts)
        for k, v in d.items():
            if len(k) > 1 and k[0] == "s":
                sub_prefix = prefix + [(k[1:], False)]
                if isinstance(v, dict) and v.get("a") is True:
                    walk_array(v, sub_prefix)
                else:
                    walk_doc(v, sub_prefix)

    def walk_array(d, prefix):
        if "l" in d:
            truncated.append({"field": ".".join(n for n, _ in prefix), "newSize": d["l"]})
            note(prefix)
        for k, v in d.items():
            if k in ("a", "l"):
                continue
            idx = k[1:]
            parts = prefix + [(idx, True)]
            if k[0] == "u":
                updated[".".join(n for n, _ in parts)] = v
                note(parts)
            elif k[0] == "s":
                if isinstance(v, dict) and v.get("a") is True:
                    walk_array(v, parts)
                else:
                    walk_doc(v, parts)

    walk_doc(diff, [])
    out = {"updatedFields": updated, "removedFields": removed, "truncatedArrays": truncated}
    if expanded:
        out["disambiguatedPaths"] = disamb
    return out


class ChangeStreamCursor:
    """A tailable, awaitData cursor that reads the oplog of its replica set."""

    tailable = True

    def __init__(self, rs, spec: StreamSpec, pipeline: list, lsid=None, collation=None):
        self.id = new_cursor_id()
        self.rs = rs
        self.spec = spec
        self.ns = spec.cursor_ns
        self.lsid = lsid
        self.txn = None
        self.closed = False
        self.killed = None
        self.busy = False
        self.last_used = time.monotonic()
        self.resume_key = None      # skip events with key <= this
        self.must_find = None       # TokenData that must be present (resumeAfter/startAfter event tokens)
        self.scanned_ts: Timestamp | None = None
        self._entry_events: tuple | None = None
        self.inner = 0
        self.prefetched = None      # (events, token) computed while the client was busy with the last batch
        self.prefetch_error = None
        self._prefetching = False
        self._ahead = False  # next_batch runs for a prefetch: it stops before an event that reads the collection
        self._prefetch_done = None
        self._visible_cache: dict = {}
        self.stages = self._compile_stages(pipeline)
        self._position()

    # -- setup --
    def _compile_stages(self, pipeline):
        stages = []
        for stage in pipeline:
            if not isinstance(stage, dict) or len(stage) != 1:
                raise CommandError(40323, "A pipeline stage specification object must contain exactly one field.",
                                   code_name_override="Location40323")
            name = next(iter(stage))
            if name == "$changeStream":
                raise CommandError(40602, "$changeStream is only valid as the first stage in a pipeline.",
                                   code_name_override="Location40602")
            if name not in ALLOWED_STAGES:
                if name in _KNOWN_STAGES:
                    raise CommandError(20, f"{name} is not permitted in a $changeStream pipeline")
                raise CommandError(40324, f"Unrecognized pipeline stage name: '{name}'",
                                   code_name_override="Location40324")
            if name == "$match":
                stages.append(("match", compile_filter(stage[name])))
            elif name == "$changeStreamSplitLargeEvent":
                continue
            else:
                stages.append(("stage", stage))
        return stages

    def _position(self):
        oplog = self.rs.oplog
        spec = self.spec
        first = oplog.first
        if spec.start_kind is None:
            last = self.rs.last_ts
            start = Timestamp(last.time, last.inc + 1)
            self.seq = oplog.next_seq
            self.last_token = tokens.make_hwm_token(start)
            self.start_ts = start
            return
        if spec.start_kind == "startAtOperationTime":
            ts = spec.start_value
            self._check_history(ts, first)
            self.seq = oplog.seq_at_or_after(ts)
            self.last_token = tokens.make_hwm_token(ts)
            self.start_ts = ts
            return
        data = tokens.decode_token(spec.start_value)
        if spec.start_kind == "resumeAfter" and data.from_invalidate:
            raise CommandError(260, "Attempting to resume a change stream using 'resumeAfter' is not allowed from "
                                    "an invalidate notification.")
        self._check_history(data.ts, first)
        self.seq = oplog.seq_at_or_after(data.ts)
        self.resume_key = data.sort_key()
        if data.kind == tokens.EVENT:
            self.must_find = data
        self.last_token = {"_data": spec.start_value["_data"]}
        self.start_ts = data.ts

    def _check_history(self, ts: Timestamp, first):
        if first is None or first.ts > ts:
            raise CommandError(286, "Executor error during aggregate :: caused by :: Resume of change stream was not "
                                    "possible, as the resume point may no longer be in the oplog.")

    # -- events --
    def _events(self, entry) -> list:
        cached = self._entry_events
        if cached is not None and cached[0] is entry:
            return cached[1]
        out = []
        if entry.ops is not None:
            for i, op in enumerate(entry.ops):
                self._op_events(entry, op, i, True, out)
        elif entry.op is not None:
            self._op_events(entry, entry.op, 0, False, out)
        self._entry_events = (entry, out)
        return out

    def _op_events(self, entry, op, index, in_txn, out):
        kind = op.op
        spec = self.spec
        if kind in ("i", "u", "d"):
            if op.extra is not None and op.extra.get("fromMigrate") and not spec.migrations:
                return   # a chunk migration's copy or clean-up: not a change of the data
            db, coll = _split_ns(op.ns)
            if spec.visible(db, coll):
                out.append((tokens.event_sort_key(entry.ts, index), ("crud", op, index, in_txn)))
            return
        if kind == "n":
            o2 = op.o2
            if o2 and "shardCollection" in o2 and spec.expanded and spec.visible(*_split_ns(o2["shardCollection"])):
                out.append((tokens.event_sort_key(entry.ts, index), ("shardCollection", op, index, in_txn)))
            return
        if kind != "c":
            return
        o = op.o
        db, _ = _split_ns(op.ns)
        name = next(iter(o)) if o else None
        if name == "drop":
            coll = o["drop"]
            if spec.visible(db, coll):
                out.append((tokens.event_sort_key(entry.ts, index), ("drop", op, index, in_txn)))
                if spec.scope == "collection":
                    out.append((tokens.event_sort_key(entry.ts, index, True), ("invalidate", op, index, in_txn)))
        elif name == "renameCollection":
            sdb, scoll = _split_ns(o["renameCollection"])
            ddb, dcoll = _split_ns(o["to"])
            if spec.visible(sdb, scoll) or spec.visible(ddb, dcoll):
                out.append((tokens.event_sort_key(entry.ts, index), ("rename", op, index, in_txn)))
                if spec.scope == "collection":
                    out.append((tokens.event_sort_key(entry.ts, index, True), ("invalidate", op, index, in_txn)))
        elif name == "dropDatabase":
            if spec.scope == "cluster" and db not in INTERNAL_DBS or spec.scope == "database" and db == spec.db:
                out.append((tokens.event_sort_key(entry.ts, index), ("dropDatabase", op, index, in_txn)))
                if spec.scope == "database":
                    out.append((tokens.event_sort_key(entry.ts, index, True), ("invalidate", op, index, in_txn)))
        elif name in ("create", "createIndexes", "dropIndexes", "collMod") and spec.expanded:
            if spec.visible(db, o[name]):
                out.append((tokens.event_sort_key(entry.ts, index), (name, op, index, in_txn)))

    def _txn_fields(self, entry, ev: dict):
        ev["txnNumber"] = Int64(entry.txn_number)
        lsid = entry.lsid
        ev["lsid"] = {"id": lsid.get("id"), "uid": lsid.get("uid", EMPTY_UID)}

    def _build(self, entry, item):
        """Build one event as (token, BSON bytes); `None` when the user's pipeline filters it out."""
        what, op, index, in_txn = item
        if what == "crud" and self.spec.simple and not self.stages:
            cached = op.ev
            if cached is not None and cached[0] is entry:
                return cached[1]
            built = self._fast_crud(entry, op, index, in_txn)
            op.ev = (entry, built)
            return built
        ev = self._crud_event(entry, op, index, in_txn) if what == "crud" else \
            self._ddl_event(entry, what, op, index, in_txn)
        return self._apply_stages(ev)

    def _fast_crud(self, entry, op, index, in_txn):
        """Default-option CRUD events assembled from bytes: the stored document is spliced in as is."""
        kind = op.op
        if kind == "d" or in_txn or (kind == "u" and "$v" in op.o):
            ev = self._crud_event(entry, op, index, in_txn)
            return ev["_id"], encode_in_order(ev)
        return _fast_event(entry, op)

    def _crud_event(self, entry, op, index, in_txn):
        spec = self.spec
        db, coll = _split_ns(op.ns)
        ev: dict = {}
        if in_txn:
            self._txn_fields(entry, ev)
        kind = op.op
        if kind == "i":
            doc_key = op.o2 if op.o2 is not None else {"_id": op.o["_id"]}
            ev["_id"] = tokens.make_event_token(entry.ts, index, False, op.ui, doc_key)
            ev["operationType"] = "insert"
            ev["clusterTime"] = entry.ts
            if spec.expanded:
                ev["collectionUUID"] = op.ui
            ev["wallTime"] = entry.wall
            ev["fullDocument"] = op.raw_o()
            ev["ns"] = {"db": db, "coll": coll}
            ev["documentKey"] = doc_key
            return ev
        if kind == "d":
            doc_key = op.o
            ev["_id"] = tokens.make_event_token(entry.ts, index, False, op.ui, doc_key)
            ev["operationType"] = "delete"
            ev["clusterTime"] = entry.ts
            if spec.expanded:
                ev["collectionUUID"] = op.ui
            ev["wallTime"] = entry.wall
            ev["ns"] = {"db": db, "coll": coll}
            ev["documentKey"] = doc_key
            self._before_change(ev, op)
            return ev
        doc_key = op.o2
        is_update = "$v" in op.o if isinstance(op.o, dict) else False
        ev["_id"] = tokens.make_event_token(entry.ts, index, False, op.ui, doc_key)
        ev["operationType"] = "update" if is_update else "replace"
        ev["clusterTime"] = entry.ts
        if spec.expanded:
            ev["collectionUUID"] = op.ui
        ev["wallTime"] = entry.wall
        if is_update:
            full = self._post_image(ev, op, db, coll, doc_key)
            if full is not _NO_FIELD:
                ev["fullDocument"] = full
        else:
            ev["fullDocument"] = op.raw_o()
        ev["ns"] = {"db": db, "coll": coll}
        ev["documentKey"] = doc_key
        if is_update:
            ev["updateDescription"] = diff_to_description(op.o["diff"], spec.expanded)
        self._before_change(ev, op)
        return ev

    def _post_image(self, ev, op, db, coll, doc_key):
        mode = self.spec.full_document
        if mode == "default":
            return _NO_FIELD
        if mode == "updateLookup":
            c = self.rs.catalog.get_collection(db, coll)
            if c is None or c.uuid != op.ui:
                return None
            doc = c.get(doc_key.get("_id"))
            return doc
        if op.post_image is not None:
            return op.post_image
        if mode == "required":
            raise CommandError(47, "Executor error during getMore :: caused by :: Change stream was configured to "
                                   "require a post-image for all update events, but the post-image was not found "
                                   f"for event: {_summary(ev, db, coll)}")
        return None

    def _before_change(self, ev, op):
        mode = self.spec.before_change
        if mode == "off":
            return
        if op.pre_image is not None:
            ev["fullDocumentBeforeChange"] = op.pre_image
            return
        if mode == "required":
            db, coll = _split_ns(op.ns)
            raise CommandError(47, "Executor error during getMore :: caused by :: Change stream was configured to "
                                   "require a pre-image for all update, delete and replace events, but the pre-image "
                                   f"was not found for event: {_summary(ev, db, coll)}")
        ev["fullDocumentBeforeChange"] = None

    def _ddl_event(self, entry, what, op, index, in_txn):
        spec = self.spec
        o = op.o
        db, _ = _split_ns(op.ns)
        ev: dict = {}
        if in_txn:
            self._txn_fields(entry, ev)
        if what == "invalidate":
            ev["_id"] = tokens.make_event_token(entry.ts, index, True, op.ui)
            ev["operationType"] = "invalidate"
            ev["clusterTime"] = entry.ts
            ev["wallTime"] = entry.wall
            return ev
        description = None
        coll = None
        if what == "rename":
            sdb, scoll = _split_ns(o["renameCollection"])
            ddb, dcoll = _split_ns(o["to"])
            ev["to"] = {"db": ddb, "coll": dcoll}
            db, coll = sdb, scoll
            description = {k: v for k, v in o.items() if k not in ("renameCollection", "stayTemp")}
            description["to"] = {"db": ddb, "coll": dcoll}
        elif what == "drop":
            coll = o["drop"]
        elif what == "create":
            coll = o["create"]
            description = {k: v for k, v in o.items() if k != "create"}
        elif what == "createIndexes":
            coll = o["createIndexes"]
            description = {"indexes": [{k: v for k, v in o.items() if k != "createIndexes"}]}
        elif what == "dropIndexes":
            coll = o["dropIndexes"]
            description = {"indexes": [{k: v for k, v in (op.o2 or {}).items() if k != "dropIndexes"}]}
        elif what == "collMod":
            coll = o["collMod"]
            description = {k: v for k, v in o.items() if k != "collMod"}
        elif what == "shardCollection":
            o2 = op.o2
            db, coll = _split_ns(o2["shardCollection"])
            description = {"shardKey": o2["key"], "unique": o2["unique"],
                           "presplitHashedZones": o2.get("presplitHashedZones", False)}
        ev["_id"] = tokens.make_event_token(entry.ts, index, False, op.ui)
        ev["operationType"] = {"collMod": "modify"}.get(what, what)
        ev["clusterTime"] = entry.ts
        if spec.expanded and op.ui is not None:
            ev["collectionUUID"] = op.ui
        ev["wallTime"] = entry.wall
        ev["ns"] = _ns_doc(db, coll)
        if spec.expanded and description is not None:
            ev["operationDescription"] = description
        if what == "collMod" and spec.expanded:
            o2 = op.o2 or {}
            before = {}
            if "collectionOptions_old" in o2:
                before["collectionOptions"] = o2["collectionOptions_old"]
            if "indexOptions_old" in o2:
                before["indexOptions"] = o2["indexOptions_old"]
            ev["stateBeforeChange"] = before
        return ev

    # -- user stages --
    def _apply_stages(self, ev: dict):
        original_id = ev["_id"]
        if not self.stages:
            return original_id, encode_in_order(ev)
        plain = to_plain(ev)
        for kind, stage in self.stages:
            if kind == "match":
                if not stage(plain):
                    return None
            else:
                from devstack.mongo.aggregation import run_pipeline

                result = run_pipeline([plain], [stage])
                if not result:
                    return None
                plain = result[0]
        if plain.get("_id") != original_id:
            raise CommandError(280, "Encountered an event whose _id field, which contains the resume token, was "
                                    "modified by the pipeline. Modifying the _id field of an event makes it "
                                    "impossible to resume the stream from that point. Only transformations that "
                                    "retain the unmodified _id field are allowed.")
        return original_id, encode_in_order(plain)

    # -- batches --
    def next_batch(self, batch_size: int | None, budget: int = BATCH_BUDGET) -> list:
        """The next events (encoded) up to batch_size / budget bytes; advances the position and the PBRT."""
        self.last_used = time.monotonic()
        if self.closed:
            return []
        oplog = self.rs.oplog
        if self.seq < oplog.first_seq:
            self.closed = True
            raise CommandError(136, "Executor error during getMore :: caused by :: CollectionScan died due to "
                                    "position in capped collection being deleted.")
        out: list = []
        size = 0
        limit = batch_size if batch_size else 1 << 62
        entries = oplog.entries
        base = oplog.base_seq
        spec = self.spec
        fast = spec.plain_but_lookups and not self.stages
        lookups = spec.full_document == "updateLookup"
        visible = self._visible_cache
        n_entries = len(entries)
        while True:
            i = self.seq - base
            if i >= n_entries:
                break
            entry = entries[i]
            op = entry.op
            if (fast and self.inner == 0 and self.resume_key is None and op is not None and op.op in "iudn"
                    and op.extra is None and not (lookups and spec.looks_up(op))
                    and (op.op != "n" or op.o2 is None)):
                # common case: one CRUD operation (or a no-op) per entry, default options (updateLookup's
                # updates excepted: their events read the collection, and are never cached)
                if op.op != "n":
                    ok = visible.get(op.ns)
                    if ok is None:
                        db, _, coll = op.ns.partition(".")
                        ok = visible[op.ns] = self.spec.visible(db, coll)
                    if ok:
                        if len(out) >= limit:
                            return out
                        cached = op.ev
                        if cached is not None and cached[0] is entry:
                            token, data = cached[1]
                        else:
                            token, data = self._fast_crud(entry, op, 0, False)
                            op.ev = (entry, (token, data))
                        esize = len(data) + 8
                        if esize > MAX_EVENT_SIZE:
                            self._too_large(data)
                        if out and size + esize > budget:
                            return out
                        size += esize
                        out.append(data)
                        self.last_token = token
                self.seq += 1
                self.scanned_ts = entry.ts
                continue
            if self.must_find is not None and (entry.ts.time, entry.ts.inc) > (self.must_find.time,
                                                                                self.must_find.inc):
                self._not_found()
            items = self._events(entry) if self._relevant(entry) else ()
            j = self.inner
            n = len(items)
            while j < n:
                key, item = items[j]
                if self.resume_key is not None:
                    if key <= self.resume_key:
                        if self.must_find is not None and key == self.must_find.sort_key():
                            self.must_find = None
                        j += 1
                        continue
                    if self.must_find is not None:
                        self._not_found()
                    self.resume_key = None
                if len(out) >= limit or (self._ahead and item[0] == "crud" and spec.looks_up(item[1])):
                    # built ahead of a getMore, an event stops before a lookup: it reads the collection when asked
                    self.inner = j
                    return out
                built = self._build(entry, item)
                if built is None:
                    j += 1
                    if item[0] == "invalidate":
                        self.closed = True
                        self.inner = j
                        return out
                    continue
                token, data = built
                esize = len(data) + 8
                if esize > MAX_EVENT_SIZE:
                    self._too_large(data)
                if out and size + esize > budget:
                    self.inner = j
                    return out
                j += 1
                size += esize
                out.append(data)
                self.last_token = token
                if item[0] == "invalidate":
                    self.closed = True
                    self.inner = j
                    return out
            self.inner = 0
            self.seq += 1
            self.scanned_ts = entry.ts
        if self.scanned_ts is not None:
            hwm = tokens.make_hwm_token(self.scanned_ts)
            if tokens.token_key(hwm) > tokens.token_key(self.last_token):
                self.last_token = hwm
        return out

    async def prefetch(self, batch_size):
        """Run once a non-empty batch has been sent: build the next one while the driver decodes this one, in
        slices so other clients are served. Default-option and updateLookup streams only, and a batch built ahead
        stops before an update that reads the collection: nothing is looked up early."""
        if self.closed or not self.spec.plain_but_lookups or self.stages or self._prefetching or self.prefetched:
            return
        self._prefetching = self._ahead = True
        try:
            events: list = []
            size = 0
            while not self.closed and self.prefetch_error is None:
                room = (batch_size - len(events)) if batch_size else 2000
                if room <= 0:
                    break
                try:
                    chunk = self.next_batch(min(room, 2000), BATCH_BUDGET - size)
                except CommandError as exc:
                    self.prefetch_error = exc
                    break
                if not chunk:
                    break
                events.extend(chunk)
                size += sum(len(c) + 8 for c in chunk)
                if size >= BATCH_BUDGET - 64 * 1024:
                    break
                await asyncio.sleep(0)
            if events:
                self.prefetched = (events, self.last_token)
        finally:
            self._prefetching = self._ahead = False
            waiter, self._prefetch_done = self._prefetch_done, None
            if waiter is not None and not waiter.done():
                waiter.set_result(True)

    async def wait_prefetch(self):
        if self._prefetching:
            self._prefetch_done = asyncio.get_running_loop().create_future()
            await self._prefetch_done

    def take_prefetched(self):
        if self.prefetch_error is not None:
            err, self.prefetch_error = self.prefetch_error, None
            raise err
        batch, self.prefetched = self.prefetched, None
        return batch[0] if batch else None

    def _relevant(self, entry) -> bool:
        op = entry.op
        if op is not None and op.op == "n":
            return op.o2 is not None   # a shard's shardCollection note
        return True

    def _too_large(self, data: bytes):
        """mongod fails the whole getMore on an event over its internal limit and the cursor dies."""
        self.closed = True
        raise CommandError(10334, f"Executor error during getMore :: caused by :: BSONObj size: {len(data)} "
                                  f"(0x{len(data):X}) is invalid. Size must be between 0 and {MAX_EVENT_SIZE}(16MB) "
                                  "First element: _id: ...")

    def _not_found(self):
        token = self.spec.start_value.get("_data")  # mongod writes a token as BSON's toString does: {_data: "82..."}
        raise CommandError(280, "Executor error during aggregate :: caused by :: cannot resume stream; the resume "
                                f'token was not found. {{_data: "{token}"}}')

    def post_batch_resume_token(self) -> dict:
        return self.last_token

    @property
    def exhausted(self) -> bool:
        return self.closed

    async def wait_for_events(self, timeout: float) -> bool:
        return await self.rs.oplog.wait_for_append(self.seq, timeout)

    def close(self):
        self.closed = True


_KNOWN_STAGES = {
    "$addFields", "$bucket", "$bucketAuto", "$collStats", "$count", "$densify", "$documents", "$facet", "$fill",
    "$geoNear", "$graphLookup", "$group", "$indexStats", "$limit", "$listSessions", "$lookup", "$match", "$merge",
    "$out", "$planCacheStats", "$project", "$redact", "$replaceRoot", "$replaceWith", "$sample", "$search", "$set",
    "$setWindowFields", "$skip", "$sort", "$sortByCount", "$unionWith", "$unset", "$unwind", "$currentOp",
    "$listLocalSessions", "$changeStream", "$changeStreamSplitLargeEvent",
}


_I32 = struct.Struct("<i")
_INSERT = b"\x02operationType\x00" + _I32.pack(7) + b"insert\x00"
_REPLACE = b"\x02operationType\x00" + _I32.pack(8) + b"replace\x00"
# fixed parts of an insert/replace event, each packed in one call (field names passed as bytes)
_ID_HEAD = struct.Struct("<i5si7si")         # size, "_id" {, "_data": string length
_TIMES = struct.Struct("<13sII10sq14s")      # clusterTime, wallTime, then the fullDocument element's name
_KEY_HEAD = struct.Struct("<13si")           # documentKey element's name and size
_EPOCH = datetime.datetime(1970, 1, 1)
_MS = datetime.timedelta(milliseconds=1)
_EVENT_DATA_FMT = "82%08X%08X2B800000000000%s"   # resume token `_data` of a single-op event
_NS_CACHE: dict = {}
_COLL_PARTS: dict = {}
_FIXED = {0x01: 8, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16, 0xFF: 0, 0x7F: 0}


def _ns_element(ns: str) -> bytes:
    el = _NS_CACHE.get(ns)
    if el is None:
        db, _, coll = ns.partition(".")
        el = b"\x03ns\x00" + encode_in_order({"db": db, "coll": coll})
        if len(_NS_CACHE) < 10000:
            _NS_CACHE[ns] = el
    return el


def _coll_parts(ns: str, ui) -> tuple:
    """Per collection: its UUID (identity checked), the UUID's token hex, and the `ns` element."""
    parts = _COLL_PARTS.get(ns)
    if parts is None or parts[0] is not ui:
        uuid_hex = "" if ui is None else bytes(ui).hex().upper()
        parts = (ui, uuid_hex, _ns_element(ns))
        if len(_COLL_PARTS) < 10000:
            _COLL_PARTS[ns] = parts
    return parts


def _fast_event(entry, op) -> tuple:
    """An insert or replace event with default options, as (token, BSON): fixed fields are packed once per
    collection, the stored document's bytes are spliced in."""
    raw = op._raw_o or op.raw_bytes()
    ui = op.ui
    parts = _COLL_PARTS.get(op.ns)
    if parts is None or parts[0] is not ui:
        parts = _coll_parts(op.ns, ui)
    ts_time, ts_inc = entry.key or (entry.ts.time, entry.ts.inc)
    text = _EVENT_DATA_FMT % (ts_time, ts_inc, parts[1])
    o2 = op.o2
    key = _id_element(raw) if o2 is None or len(o2) == 1 else None
    if key is None:
        key = elements(o2) if o2 else elements({"_id": op.o["_id"]})
    ns_el = parts[2]
    dlen = len(text) + 1
    klen = len(key)
    head = _INSERT if op.op == "i" else _REPLACE
    wall_ms = entry.wall_ms
    if wall_ms is None:
        wall_ms = entry.wall_ms = (entry.wall - _EPOCH) // _MS
    size = 97 + dlen + len(head) + len(raw) + len(ns_el) + klen
    return {"_data": text}, b"".join((
        _ID_HEAD.pack(size, b"\x03_id\x00", dlen + 16, b"\x02_data\x00", dlen), text.encode(), b"\x00\x00", head,
        _TIMES.pack(b"\x11clusterTime\x00", ts_inc, ts_time, b"\x09wallTime\x00", wall_ms, b"\x03fullDocument\x00"),
        raw, ns_el, _KEY_HEAD.pack(b"\x03documentKey\x00", klen + 5), key, b"\x00\x00"))


def _id_element(raw: bytes) -> bytes | None:
    """The `_id` element of a stored document (always its first field), sliced from its BSON."""
    if raw[5:9] != b"_id\x00":
        return None
    t = raw[4]
    start = 9
    size = _FIXED.get(t)
    if size is None:
        if t == 0x02:
            size = 4 + _I32.unpack_from(raw, start)[0]
        elif t in (0x03, 0x04):
            size = _I32.unpack_from(raw, start)[0]
        elif t == 0x05:
            size = 5 + _I32.unpack_from(raw, start)[0]
        else:
            return None
    return raw[4:start + size]


class _NoField:
    pass


_NO_FIELD = _NoField()


def _summary(ev, db, coll) -> str:
    ts = ev.get("clusterTime")
    return (f"{{_id: {ev.get('_id')}, operationType: \"{ev.get('operationType')}\", clusterTime: "
            f"Timestamp({getattr(ts, 'time', 0)}, {getattr(ts, 'inc', 0)}), ns: {{db: \"{db}\", coll: \"{coll}\"}}}}")


async def await_batch(cursor: ChangeStreamCursor, batch_size, max_time_ms) -> list:
    """getMore on a change stream: return at once if events exist, else wait up to maxTimeMS for some."""
    deadline = time.monotonic() + (max_time_ms if max_time_ms is not None else 1000) / 1000.0
    await cursor.wait_prefetch()
    ready = cursor.take_prefetched()
    if ready:
        return ready
    while True:
        batch = cursor.next_batch(batch_size)
        if batch or cursor.closed:
            return batch
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return batch
        await cursor.wait_for_events(remaining)
        if cursor.killed is not None:
            raise cursor.killed
        await asyncio.sleep(0)
