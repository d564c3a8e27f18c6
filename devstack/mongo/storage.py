"""Databases, collections, documents and indexes of one replica set (shared by all its members).

Stored documents are treated as immutable: writers replace them with new dicts, so cursors, pre-images and
transaction snapshots can hold references safely.
"""

from __future__ import annotations

import bisect
import uuid as uuidlib

from bson.binary import Binary, UuidRepresentation

from devstack.mongo.bsonutil import MISSING, fmt_value, hash_key, sort_key
from devstack.mongo.errors import CommandError, WriteError
from devstack.mongo.query import compile_filter, get_path

SYSTEM_DBS = ("admin", "config", "local")


def new_uuid() -> Binary:
    return Binary.from_uuid(uuidlib.uuid4(), UuidRepresentation.STANDARD)


def index_name(key: dict) -> str:
    return "_".join(f"{k}_{v}" for k, v in key.items())


class Index:
    def __init__(self, spec: dict):
        self.spec = spec
        self.name = spec["name"]
        self.key = spec["key"]
        self.unique = bool(spec.get("unique")) or self.name == "_id_"
        self.sparse = bool(spec.get("sparse"))
        partial = spec.get("partialFilterExpression")
        self.partial = compile_filter(partial) if partial else None
        self.entries: dict = {}

    def keys_for(self, doc) -> list:
        if self.partial is not None and not self.partial(doc):
            return []
        values = []
        present = False
        for field in self.key:
            v = get_path(doc, field)
            if v is not MISSING:
                present = True
            values.append(v)
        if self.sparse and not present:
            return []
        keys = [()]
        for v in values:
            if isinstance(v, list):
                opts = [hash_key(e) for e in v] or [hash_key(None)]
                opts = list(dict.fromkeys(opts))
            else:
                opts = [hash_key(None if v is MISSING else v)]
            keys = [k + (o,) for k in keys for o in opts]
        return keys

    def key_value(self, doc) -> dict:
        out = {}
        for field in self.key:
            v = get_path(doc, field)
            out[field] = None if v is MISSING else v
        return out


class Collection:
    def __init__(self, db: str, name: str, options: dict | None = None, uuid: Binary | None = None):
        self.db = db
        self.name = name
        self.uuid = uuid or new_uuid()
        self.options = dict(options or {})
        self.docs: dict = {}
        self.indexes: dict[str, Index] = {"_id_": Index({"v": 2, "key": {"_id": 1}, "name": "_id_"})}
        # The _id index: (sort key, hash key) in _id order, and the sort keys alone (for bisect). Kept up to date
        # while documents come in _id order (ObjectIds, counters), as a server's index is; any other insert, or a
        # delete, drops it until the next read in _id order sorts it again.
        self._sorted_ids: list | None = []
        self._sorted_keys: list = []

    @property
    def ns(self) -> str:
        return f"{self.db}.{self.name}"

    @property
    def pre_post_images(self) -> bool:
        opt = self.options.get("changeStreamPreAndPostImages")
        return bool(isinstance(opt, dict) and opt.get("enabled"))

    def get(self, id_value):
        return self.docs.get(hash_key(id_value))

    def __len__(self):
        return len(self.docs)

    def values(self):
        return self.docs.values()

    # -- writes (callers pass complete documents with _id) --
    def check_unique(self, doc, ignore_idk=None):
        for index in self.indexes.values():
            if not index.unique or index.name == "_id_":
                continue
            for k in index.keys_for(doc):
                owner = index.entries.get(k)
                if owner is not None and owner != ignore_idk:
                    raise duplicate_key(self, index, doc)

    def insert(self, doc: dict):
        idk = hash_key(doc["_id"])
        if idk in self.docs:
            raise duplicate_key(self, self.indexes["_id_"], doc)
        self.check_unique(doc)
        self.store(idk, doc)

    def store(self, idk, doc: dict):
        """Adds a document under its new hash key `idk` without checking it: its write was checked already (one
        read back from disk, one a committed transaction wrote)."""
        self.docs[idk] = doc
        self._index_add(idk, doc)
        if self._sorted_ids is not None:
            key = sort_key(doc["_id"])
            if self._sorted_keys and not key > self._sorted_keys[-1]:
                self._sorted_ids = None
            else:
                self._sorted_ids.append((key, idk))
                self._sorted_keys.append(key)

    def replace(self, old: dict, new: dict):
        idk = hash_key(old["_id"])
        self.check_unique(new, ignore_idk=idk)
        self._index_remove(idk, old)
        self.docs[idk] = new
        self._index_add(idk, new)

    def delete(self, doc: dict):
        idk = hash_key(doc["_id"])
        old = self.docs.pop(idk, None)
        if old is not None:
            self._index_remove(idk, old)
            self._sorted_ids = None

    def _index_add(self, idk, doc):
        for index in self.indexes.values():
            if index.unique and index.name != "_id_":
                for k in index.keys_for(doc):
                    index.entries[k] = idk

    def _index_remove(self, idk, doc):
        for index in self.indexes.values():
            if index.unique and index.name != "_id_":
                for k in index.keys_for(doc):
                    if index.entries.get(k) == idk:
                        del index.entries[k]

    def add_index(self, spec: dict):
        index = Index(spec)
        if index.unique:
            for idk, doc in self.docs.items():
                for k in index.keys_for(doc):
                    if k in index.entries and index.entries[k] != idk:
                        raise duplicate_key(self, index, doc, code_cmd=True)
                    index.entries[k] = idk
        self.indexes[index.name] = index

    # -- reads --
    def sorted_by_id(self) -> list:
        """Documents in `_id` order (cached until the set of documents changes)."""
        if self._sorted_ids is None:
            self._sorted_ids = sorted(((sort_key(d["_id"]), idk) for idk, d in self.docs.items()),
                                      key=lambda t: t[0])
            self._sorted_keys = [t[0] for t in self._sorted_ids]
        return self._sorted_ids

    def id_range(self, low=MISSING, low_incl=True, high=MISSING, high_incl=False, reverse=False, skip=0, limit=0):
        """The documents whose _id is within the bounds, in _id order (`reverse`: descending), from the `skip`-th,
        at most `limit` (0: all) of them: only those are looked up (a find sorted by _id with limit 1 costs one)."""
        entries = self.sorted_by_id()
        keys = self._sorted_keys
        lo = 0
        hi = len(entries)
        if low is not MISSING:
            k = sort_key(low)
            lo = bisect.bisect_left(keys, k) if low_incl else bisect.bisect_right(keys, k)
        if high is not MISSING:
            k = sort_key(high)
            hi = bisect.bisect_right(keys, k) if high_incl else bisect.bisect_left(keys, k)
        rng = range(hi - 1, lo - 1, -1) if reverse else range(lo, hi)
        rng = rng[skip:skip + limit] if limit else rng[skip:]
        docs = self.docs
        return [docs[entries[i][1]] for i in rng if entries[i][1] in docs]

    def info(self) -> dict:
        if self.options.get("viewOn"):
            return {"name": self.name, "type": "view", "options": dict(self.options), "info": {"readOnly": True}}
        return {"name": self.name, "type": "collection", "options": dict(self.options),
                "info": {"readOnly": False, "uuid": self.uuid},
                "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}}

    def index_specs(self) -> list[dict]:
        return [dict(i.spec) for i in self.indexes.values()]


def duplicate_key(coll: Collection, index: Index, doc, code_cmd: bool = False):
    kv = index.key_value(doc)
    shown = "{ " + ", ".join(f"{k}: {fmt_value(v)}" for k, v in kv.items()) + " }"
    msg = f"E11000 duplicate key error collection: {coll.ns} index: {index.name} dup key: {shown}"
    extra = {"keyPattern": dict(index.key), "keyValue": kv}
    if code_cmd:
        return CommandError(11000, msg, extra=extra)
    return WriteError(11000, msg, extra)


class Database:
    def __init__(self, name: str):
        self.name = name
        self.collections: dict[str, Collection] = {}


class Catalog:
    """All databases of one replica set."""

    def __init__(self):
        self.databases: dict[str, Database] = {}

    def get_collection(self, db: str, name: str) -> Collection | None:
        d = self.databases.get(db)
        return d.collections.get(name) if d else None

    def create_collection(self, db: str, name: str, options: dict | None = None, uuid=None) -> Collection:
        validate_collection_name(db, name)
        d = self.databases.get(db)
        if d is None:
            d = self.databases[db] = Database(db)
        coll = Collection(db, name, options, uuid)
        d.collections[name] = coll
        return coll

    def drop_collection(self, db: str, name: str) -> Collection | None:
        d = self.databases.get(db)
        if not d:
            return None
        coll = d.collections.pop(name, None)
        if not d.collections:
            del self.databases[db]
        return coll

    def user_databases(self) -> list[str]:
        return sorted(n for n in self.databases if n not in SYSTEM_DBS)


def validate_db_name(db: str):
    if not db or any(c in db for c in '/\\. "$\0') or len(db) > 63:
        raise CommandError(73, f"Invalid database name: '{db}'")


_VALID_NAMES: set = set()   # (db, collection) pairs already validated: every write names one


def validate_collection_name(db: str, name: str):
    if type(name) is str and type(db) is str and (db, name) in _VALID_NAMES:
        return
    validate_db_name(db)
    if not isinstance(name, str) or not name:
        raise CommandError(73, f"Invalid namespace specified '{db}.'")
    if "$" in name or "\0" in name or name.startswith("."):
        raise CommandError(73, f"Invalid collection name: {name}")
    if name.startswith("system.") and name not in ("system.js", "system.views", "system.profile"):
        raise CommandError(73, f"Invalid system namespace: {db}.{name}")
    if len(_VALID_NAMES) > 10_000:
        _VALID_NAMES.clear()
    _VALID_NAMES.add((db, name))
