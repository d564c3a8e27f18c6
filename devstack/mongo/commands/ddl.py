"""Catalog commands: collections, databases, indexes, and the snapshot chunking helper splitVector."""

from __future__ import annotations

import random

from bson.int64 import Int64

from devstack.mongo.bsonutil import MISSING, encode, is_number, sort_key, to_int, truthy, type_name
from devstack.mongo.commands import command
from devstack.mongo.commands.query import cursor_reply
from devstack.mongo.cursors import DEFAULT_FIRST_BATCH, Cursor
from devstack.mongo.errors import CommandError
from devstack.mongo.oplog import Op
from devstack.mongo.query import compile_filter, get_path
from devstack.mongo.storage import SYSTEM_DBS, index_name, validate_collection_name, validate_db_name

_CREATE_OPTIONS = {"capped", "size", "max", "validator", "validationLevel", "validationAction", "indexOptionDefaults",
                   "viewOn", "pipeline", "collation", "changeStreamPreAndPostImages", "storageEngine",
                   "clusteredIndex", "expireAfterSeconds", "timeseries", "encryptedFields", "autoIndexId", "flags"}
_GENERIC = {"writeConcern", "lsid", "txnNumber", "autocommit", "startTransaction", "$db", "$clusterTime",
            "$readPreference", "comment", "maxTimeMS", "readConcern", "apiVersion", "apiStrict",
            "apiDeprecationErrors", "$client"}


def _name(ctx) -> str:
    name = ctx.target
    if not isinstance(name, str):
        raise CommandError(2, f"collection name has invalid type {type_name(name)}")
    return name


@command("create", kind="write", txn=True)
def create(ctx):
    name = _name(ctx)
    validate_collection_name(ctx.db, name)
    options = {}
    for k, v in ctx.cmd.items():
        if k == "create" or k in _GENERIC:
            continue
        if k not in _CREATE_OPTIONS:
            raise CommandError(40415, f"BSON field 'create.{k}' is an unknown field.",
                               code_name_override="Location40415")
        options[k] = v
    rs = ctx.rs
    if ctx.txn is not None:
        ns = f"{ctx.db}.{name}"
        if rs.catalog.get_collection(ctx.db, name) is not None or ns in ctx.txn.created:
            raise CommandError(48, f"Collection already exists. NS: {ns}")
        rs.new_collection_in_txn(ctx.txn, ctx.db, name)
        return {}
    existing = rs.catalog.get_collection(ctx.db, name)
    if existing is not None:
        raise CommandError(48, f"Collection already exists. NS: {ctx.db}.{name}")
    if "changeStreamPreAndPostImages" in options:
        opt = options["changeStreamPreAndPostImages"]
        if not isinstance(opt, dict) or "enabled" not in opt:
            raise CommandError(40414, "BSON field 'create.changeStreamPreAndPostImages.enabled' is missing but a "
                                      "required field", code_name_override="Location40414")
    rs.create_collection(ctx.db, name, options)
    ctx.op_ts = rs.last_ts
    return {}


@command("drop", kind="write")
def drop(ctx):
    name = _name(ctx)
    rs = ctx.rs
    coll = rs.catalog.get_collection(ctx.db, name)
    if coll is None:
        return {}
    n = len(coll.indexes)
    rs.drop_collection(ctx.db, name)
    ctx.op_ts = rs.last_ts
    return {"nIndexesWas": n, "ns": f"{ctx.db}.{name}"}


@command("dropDatabase", kind="write")
def drop_database(ctx):
    validate_db_name(ctx.db)
    rs = ctx.rs
    if ctx.db in rs.catalog.databases:
        rs.drop_database(ctx.db)
        ctx.op_ts = rs.last_ts
    return {"dropped": ctx.db}


@command("renameCollection", kind="write")
def rename_collection(ctx):
    if ctx.db != "admin":
        raise CommandError(13, "renameCollection may only be run against the admin database.",
                           code_name_override="Unauthorized")
    src = ctx.target
    dst = ctx.cmd.get("to")
    if not isinstance(src, str) or not isinstance(dst, str):
        raise CommandError(73, "Invalid source or target namespace")
    sdb, _, scoll = src.partition(".")
    ddb, _, dcoll = dst.partition(".")
    validate_collection_name(ddb, dcoll)
    rs = ctx.rs
    if rs.catalog.get_collection(sdb, scoll) is None:
        raise CommandError(26, f"Source collection {src} does not exist")
    if src == dst:
        raise CommandError(20, "Can't rename a collection to itself")
    if rs.catalog.get_collection(ddb, dcoll) is not None and not truthy(ctx.cmd.get("dropTarget")):
        raise CommandError(48, "target namespace exists")
    rs.rename_collection(sdb, scoll, ddb, dcoll, truthy(ctx.cmd.get("dropTarget")))
    ctx.op_ts = rs.last_ts
    return {}


@command("collMod", kind="write")
def coll_mod(ctx):
    name = _name(ctx)
    rs = ctx.rs
    coll = rs.catalog.get_collection(ctx.db, name)
    if coll is None:
        raise CommandError(26, f"ns does not exist: {ctx.db}.{name}")
    changes = {k: v for k, v in ctx.cmd.items() if k != "collMod" and k not in _GENERIC}
    old = {k: coll.options[k] for k in changes if k in coll.options}
    index_change = changes.pop("index", None)
    reply = {}
    if index_change is not None:
        idx = None
        if isinstance(index_change, dict):
            for i in coll.indexes.values():
                if index_change.get("name") == i.name or index_change.get("keyPattern") == i.key:
                    idx = i
        if idx is None:
            raise CommandError(27, "cannot find index for collMod")
        for k, v in index_change.items():
            if k not in ("name", "keyPattern"):
                reply[f"{k}_old"] = idx.spec.get(k)
                reply[f"{k}_new"] = v
                idx.spec[k] = v
    for k, v in changes.items():
        if k == "changeStreamPreAndPostImages":
            if not isinstance(v, dict) or "enabled" not in v:
                raise CommandError(40414, "BSON field 'collMod.changeStreamPreAndPostImages.enabled' is missing but "
                                          "a required field", code_name_override="Location40414")
            if not v["enabled"]:
                coll.options.pop(k, None)
                continue
        elif k not in _CREATE_OPTIONS:
            raise CommandError(40415, f"BSON field 'collMod.{k}' is an unknown field.",
                               code_name_override="Location40415")
        coll.options[k] = v
    o = {"collMod": name, **changes}
    if index_change is not None:
        o["index"] = index_change
    rs.log_op(Op("c", f"{ctx.db}.$cmd", coll.uuid, o=o, o2={"collectionOptions_old": old}))
    ctx.op_ts = rs.last_ts
    return reply


@command("createIndexes", kind="write", txn=True)
def create_indexes(ctx):
    name = _name(ctx)
    validate_collection_name(ctx.db, name)
    specs = ctx.cmd.get("indexes")
    if not isinstance(specs, list) or not specs:
        raise CommandError(2, "Must specify at least one index to create")
    rs = ctx.rs
    created_auto = False
    coll = rs.catalog.get_collection(ctx.db, name)
    if ctx.txn is not None:
        ns = f"{ctx.db}.{name}"
        coll = ctx.txn.created.get(ns)
        if coll is None:
            if rs.catalog.get_collection(ctx.db, name) is not None:
                raise CommandError(263, f"Cannot create new indexes on existing collection {ns} in a multi-document "
                                        "transaction.", code_name_override="OperationNotSupportedInTransaction")
            coll = rs.new_collection_in_txn(ctx.txn, ctx.db, name)
            created_auto = True
    elif coll is None:
        coll = rs.create_collection(ctx.db, name, {})
        created_auto = True
    before = len(coll.indexes)
    new_specs = []
    for spec in specs:
        if not isinstance(spec, dict) or not isinstance(spec.get("key"), dict) or not spec["key"]:
            raise CommandError(9, "Error in specification { ... } :: caused by :: The 'key' field is a required "
                                  "property of an index specification")
        key = spec["key"]
        for v in key.values():
            if not (is_number(v) or v in ("hashed", "text", "2d", "2dsphere", "geoHaystack", "wildcard")):
                raise CommandError(67, f"Error in specification {spec} :: caused by :: Unknown index plugin '{v}'")
        iname = spec.get("name") or index_name(key)
        full = {"v": 2, "key": dict(key), "name": iname}
        for k, v in spec.items():
            if k not in ("key", "name", "v", "ns"):
                full[k] = v
        existing = coll.indexes.get(iname)
        if existing is not None:
            if list(existing.key.items()) != list(key.items()):
                raise CommandError(86, f"An existing index has the same name as the requested index. When index "
                                       f"names are not specified, they are auto generated and can cause conflicts. "
                                       f"Please refer to our documentation. Requested index: {full}, existing index: "
                                       f"{existing.spec}")
            if {k: v for k, v in existing.spec.items()} != full:
                raise CommandError(85, f"An equivalent index already exists with the same name but different options. "
                                       f"Requested index: {full}, existing index: {existing.spec}")
            continue
        for other in coll.indexes.values():
            if list(other.key.items()) == list(key.items()) and other.name != iname:
                if {k: v for k, v in other.spec.items() if k != "name"} == {k: v for k, v in full.items()
                                                                               if k != "name"}:
                    raise CommandError(85, f"Index already exists with a different name: {other.name}")
        new_specs.append(full)
    for full in new_specs:
        coll.add_index(full)
        op = Op("c", f"{ctx.db}.$cmd", coll.uuid, o={"createIndexes": name, **full})
        if ctx.txn is not None:
            ctx.txn.ops.append(op)
        else:
            rs.log_op(op)
    ctx.op_ts = rs.last_ts
    reply = {"numIndexesBefore": before, "numIndexesAfter": len(coll.indexes)}
    if created_auto:
        reply = {"createdCollectionAutomatically": True, **reply}
    else:
        reply = {"createdCollectionAutomatically": False, **reply}
    if not new_specs:
        reply["note"] = "all indexes already exist"
    return reply


@command("dropIndexes", kind="write", aliases=("deleteIndexes",))
def drop_indexes(ctx):
    name = _name(ctx)
    rs = ctx.rs
    coll = rs.catalog.get_collection(ctx.db, name)
    if coll is None:
        raise CommandError(26, f"ns not found {ctx.db}.{name}")
    which = ctx.cmd.get("index")
    n = len(coll.indexes)
    if which == "*":
        targets = [i for i in coll.indexes.values() if i.name != "_id_"]
    else:
        names = which if isinstance(which, list) else [which]
        targets = []
        for w in names:
            found = None
            for i in coll.indexes.values():
                if (isinstance(w, str) and i.name == w) or (isinstance(w, dict) and list(i.key.items()) ==
                                                            list(w.items())):
                    found = i
            if found is None:
                if isinstance(w, str):
                    raise CommandError(27, f"index not found with name [{w}]")
                raise CommandError(27, f"can't find index with key: {w}")
            if found.name == "_id_":
                raise CommandError(72, "cannot drop _id index")
            targets.append(found)
    for i in targets:
        del coll.indexes[i.name]
        rs.log_op(Op("c", f"{ctx.db}.$cmd", coll.uuid, o={"dropIndexes": name, "index": i.name}, o2=dict(i.spec)))
    ctx.op_ts = rs.last_ts
    return {"nIndexesWas": n}


@command("listIndexes", kind="read", txn=True)
def list_indexes(ctx):
    name = _name(ctx)
    coll = ctx.rs.catalog.get_collection(ctx.db, name)
    if coll is None and ctx.txn is not None:
        coll = ctx.txn.created.get(f"{ctx.db}.{name}")
    if coll is None:
        raise CommandError(26, f"ns does not exist: {ctx.db}.{name}")
    return _cursor_of(ctx, f"{ctx.db}.$cmd.listIndexes.{name}", coll.index_specs())


def _cursor_of(ctx, ns, docs):
    opts = ctx.cmd.get("cursor") or {}
    batch_size = to_int(opts.get("batchSize")) if isinstance(opts, dict) else None
    cursor = Cursor(ns, docs)
    batch = cursor.next_batch(batch_size if batch_size is not None else DEFAULT_FIRST_BATCH)
    if cursor.exhausted:
        return cursor_reply(0, ns, batch, True)
    ctx.member.cursors.add(cursor)
    return cursor_reply(cursor.id, ns, batch, True)


@command("listCollections", kind="read", txn=True)
def list_collections(ctx):
    rs = ctx.rs
    d = rs.catalog.databases.get(ctx.db)
    infos = [c.info() for c in d.collections.values()] if d else []
    if ctx.db == "local" and not rs.standalone:
        infos.append({"name": "oplog.rs", "type": "collection", "options": {"capped": True},
                      "info": {"readOnly": False}, "idIndex": None})
        infos[-1].pop("idIndex")
    infos.sort(key=lambda i: i["name"])
    flt = ctx.cmd.get("filter")
    if flt:
        match = compile_filter(flt)
        infos = [i for i in infos if match(i)]
    if truthy(ctx.cmd.get("nameOnly")):
        infos = [{"name": i["name"], "type": i["type"]} for i in infos]
    return _cursor_of(ctx, f"{ctx.db}.$cmd.listCollections", infos)


EXACT_SIZE_UP_TO = 1000  # documents; larger collections are sized from an even sample of this many


def _data_size(coll) -> int:
    """The BSON size of a collection's documents: exact for small ones, else extrapolated from a random sample
    (encoding every document of a large collection made each collStats cost ~0.13 s per 50,000). The sample is
    random, not every k-th document, which sizes periodic data 8% off; seeded, so the same data gives the same size."""
    docs = coll.docs
    n = len(docs)
    if n <= EXACT_SIZE_UP_TO:
        return sum(len(encode(doc)) for doc in docs.values())
    values = list(docs.values())
    sample = [values[i] for i in random.Random(n).sample(range(n), EXACT_SIZE_UP_TO)]
    return sum(len(encode(doc)) for doc in sample) * n // EXACT_SIZE_UP_TO


def _db_size(d) -> int:
    return sum(_data_size(c) for c in d.collections.values()) if d else 0


@command("listDatabases", kind="read")
def list_databases(ctx):
    rs = ctx.rs
    name_only = truthy(ctx.cmd.get("nameOnly"))
    dbs = []
    names = sorted(set(rs.catalog.user_databases()) | set(SYSTEM_DBS))
    total = 0
    for name in names:
        if name_only:
            dbs.append({"name": name})
            continue
        size = 40960 if name in SYSTEM_DBS else max(8192, _db_size(rs.catalog.databases.get(name)))
        total += size
        dbs.append({"name": name, "sizeOnDisk": Int64(size), "empty": False})
    flt = ctx.cmd.get("filter")
    if flt:
        match = compile_filter(flt)
        dbs = [e for e in dbs if match(e)]
    if name_only:
        return {"databases": dbs}
    return {"databases": dbs, "totalSize": Int64(total), "totalSizeMb": Int64(total // (1024 * 1024))}


@command("collStats", kind="read")
def coll_stats(ctx):
    name = _name(ctx)
    coll = ctx.rs.catalog.get_collection(ctx.db, name)
    if coll is None:
        raise CommandError(26, f"Collection [{ctx.db}.{name}] not found.")
    size = _data_size(coll)
    n = len(coll)
    return {"ns": coll.ns, "size": size, "count": n, "avgObjSize": size // n if n else 0, "storageSize": size,
            "nindexes": len(coll.indexes), "totalIndexSize": 4096 * len(coll.indexes),
            "indexSizes": {i: 4096 for i in coll.indexes}, "capped": bool(coll.options.get("capped"))}


@command("dbStats", kind="read")
def db_stats(ctx):
    d = ctx.rs.catalog.databases.get(ctx.db)
    n = len(d.collections) if d else 0
    objects = sum(len(c) for c in d.collections.values()) if d else 0
    size = _db_size(d)
    return {"db": ctx.db, "collections": n, "views": 0, "objects": objects,
            "avgObjSize": (size / objects) if objects else 0, "dataSize": float(size), "storageSize": float(size),
            "indexes": sum(len(c.indexes) for c in d.collections.values()) if d else 0}


@command("splitVector", kind="read")
def split_vector(ctx):
    ns = ctx.target
    if not isinstance(ns, str) or "." not in ns:
        raise CommandError(73, f"Invalid namespace: {ns}")
    db, _, name = ns.partition(".")
    key = ctx.cmd.get("keyPattern")
    if not isinstance(key, dict) or not key:
        raise CommandError(2, "no key pattern found in splitVector")
    coll = ctx.rs.catalog.get_collection(db, name)
    if coll is None:
        raise CommandError(26, "ns not found")
    fields = list(key)
    rng_min, rng_max = ctx.cmd.get("min"), ctx.cmd.get("max")

    def keyval(d):
        return tuple(sort_key(get_path(d, f)) for f in fields)
    if fields == ["_id"]:  # the _id index's order, kept by the collection (no sort per call)
        docs = coll.id_range(rng_min.get("_id") if rng_min else MISSING, True,
                             rng_max.get("_id") if rng_max else MISSING, False)
    else:
        docs = sorted(coll.docs.values(), key=keyval)
        if rng_min:
            lo = tuple(sort_key(rng_min.get(f)) for f in fields)
            docs = [d for d in docs if keyval(d) >= lo]
        if rng_max:
            hi = tuple(sort_key(rng_max.get(f)) for f in fields)
            docs = [d for d in docs if keyval(d) < hi]
    if not docs:
        return {"splitKeys": []}
    max_bytes = ctx.cmd.get("maxChunkSizeBytes")
    if max_bytes is None and ctx.cmd.get("maxChunkSize") is not None:
        max_bytes = to_int(ctx.cmd["maxChunkSize"]) * 1024 * 1024
    max_objects = to_int(ctx.cmd.get("maxChunkObjects")) if ctx.cmd.get("maxChunkObjects") else None
    sample = docs[:: max(1, len(docs) // 100)]
    avg = max(1, sum(len(encode(d)) for d in sample) // len(sample))
    per_chunk = None
    if max_bytes:
        per_chunk = max(1, int(to_int(max_bytes) // (2 * avg)))
    if max_objects:
        per_chunk = min(per_chunk or max_objects, max_objects)
    if not per_chunk:
        raise CommandError(2, "need to specify the desired max chunk size (maxChunkSize or maxChunkSizeBytes)")
    keys = []
    last = None
    for i in range(per_chunk, len(docs), per_chunk):
        k = {f: get_path(docs[i], f) for f in fields}
        kv = keyval(docs[i])
        if kv != last:
            keys.append(k)
            last = kv
    max_keys = to_int(ctx.cmd.get("maxSplitPoints")) if ctx.cmd.get("maxSplitPoints") else None
    if max_keys:
        keys = keys[:max_keys]
    return {"splitKeys": keys}


@command("dataSize", kind="read")
def data_size(ctx):
    ns = ctx.target
    db, _, name = ns.partition(".") if isinstance(ns, str) else ("", "", "")
    coll = ctx.rs.catalog.get_collection(db, name)
    if coll is None:
        return {"size": 0, "numObjects": 0, "millis": 0}
    size = _data_size(coll)
    return {"size": Int64(size), "numObjects": Int64(len(coll)), "millis": Int64(0)}


@command("validate", kind="read")
def validate(ctx):
    name = _name(ctx)
    coll = ctx.rs.catalog.get_collection(ctx.db, name)
    if coll is None:
        raise CommandError(26, f"Collection '{ctx.db}.{name}' does not exist to validate.")
    return {"ns": coll.ns, "nrecords": len(coll), "nIndexes": len(coll.indexes), "valid": True, "errors": []}
