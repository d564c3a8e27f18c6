"""Optional persistence: a replica set's catalog and oplog written to a data directory as BSON files
(atomically, by checkpoint), and read back at start-up so resume tokens survive a restart."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import bson
from bson.int64 import Int64
from bson.timestamp import Timestamp

from devstack.mongo import rawstrings
from devstack.mongo.bsonutil import CODEC, hash_key
from devstack.mongo.oplog import Entry, Op
from devstack.mongo.storage import Collection, Database

log = logging.getLogger("devstack.mongo")
FORMAT = 1


def _rs_dir(rs) -> Path:
    return Path(rs.config.data_dir) / rs.name


def _op_doc(op: Op) -> dict:
    d = op.to_doc()
    if op.pre_image is not None:
        d["_pre"] = op.pre_image
    if op.post_image is not None:
        d["_post"] = op.post_image
    return d


def _op_from(d: dict) -> Op:
    return Op(d["op"], d["ns"], d.get("ui"), o=d.get("o"), o2=d.get("o2"), pre_image=d.get("_pre"),
              post_image=d.get("_post"), stmt_id=d.get("stmtId"),
              extra={"fromMigrate": True} if d.get("fromMigrate") else None)


def save(rs):
    target = _rs_dir(rs)
    tmp = target.with_name(target.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    meta = {"format": FORMAT, "replset": rs.name, "term": Int64(rs.term), "lastTs": rs.last_ts,
            "lastWall": rs.last_wall, "configVersion": rs.config_version,
            "ports": [m.port for m in rs.members]}
    with open(tmp / "catalog.bson", "wb") as f:
        for d in rs.catalog.databases.values():
            for c in d.collections.values():
                f.write(rawstrings.encode({"db": c.db, "name": c.name, "uuid": c.uuid, "options": c.options,
                                     "indexes": c.index_specs()}))
                docs = list(c.docs.values())
                for i in range(0, len(docs), 5000):
                    f.write(rawstrings.encode({"docs": docs[i:i + 5000], "more": True}))
                f.write(rawstrings.encode({"docs": [], "end": True}))
    with open(tmp / "oplog.bson", "wb") as f:
        for e in rs.oplog.live():
            doc = {"ts": e.ts, "t": Int64(e.term), "wall": e.wall}
            if e.lsid is not None:
                doc["lsid"] = e.lsid
                doc["txnNumber"] = e.txn_number
            if e.ops is not None:
                doc["ops"] = [_op_doc(op) for op in e.ops]
            else:
                doc["op"] = _op_doc(e.op)
            f.write(rawstrings.encode(doc))
    with open(tmp / "meta.bson", "wb") as f:
        f.write(rawstrings.encode(meta))
    old = target.with_name(target.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        os.replace(target, old)
    os.replace(tmp, target)
    if old.exists():
        shutil.rmtree(old)
    rs.dirty = False


def _read_docs(path: Path):
    with open(path, "rb") as f:
        data = f.read()
    return bson.decode_all(data, codec_options=CODEC)


def load(rs) -> bool:
    """Restore a replica set from its data directory; False when there is nothing to restore."""
    target = _rs_dir(rs)
    if not (target / "meta.bson").exists():
        old = target.with_name(target.name + ".old")
        if (old / "meta.bson").exists():
            target = old
        else:
            return False
    meta = _read_docs(target / "meta.bson")[0]
    if meta.get("format") != FORMAT:
        log.warning("ignoring data directory %s written in an unknown format", target)
        return False
    rs.term = int(meta["term"])
    rs.last_ts = meta["lastTs"]
    rs.cluster_time = meta["lastTs"]
    rs.last_wall = meta["lastWall"]
    rs.config_version = meta.get("configVersion", 1)
    docs = _read_docs(target / "catalog.bson")
    i = 0
    while i < len(docs):
        head = docs[i]
        i += 1
        coll = Collection(head["db"], head["name"], head.get("options"), head.get("uuid"))
        for spec in head.get("indexes", []):
            if spec["name"] != "_id_":
                coll.add_index(spec)
        while i < len(docs) and "docs" in docs[i]:
            chunk = docs[i]
            i += 1
            for d in chunk["docs"]:
                coll.store(hash_key(d["_id"]), d)
            if not chunk.get("more"):
                break
        db = rs.catalog.databases.get(coll.db)
        if db is None:
            db = rs.catalog.databases[coll.db] = Database(coll.db)
        db.collections[coll.name] = coll
    for d in _read_docs(target / "oplog.bson"):
        if "ops" in d:
            entry = Entry(d["ts"], int(d["t"]), d["wall"], ops=[_op_from(o) for o in d["ops"]], lsid=d.get("lsid"),
                          txn_number=d.get("txnNumber"))
        else:
            entry = Entry(d["ts"], int(d["t"]), d["wall"], op=_op_from(d["op"]), lsid=d.get("lsid"),
                          txn_number=d.get("txnNumber"))
        rs.oplog.append(entry)
    rs.dirty = False
    return True


def saved_ports(config) -> list[int] | None:
    path = Path(config.data_dir) / config.replset / "meta.bson"
    if not path.exists():
        return None
    try:
        return list(_read_docs(path)[0].get("ports") or []) or None
    except Exception:
        return None


def ts_of(v) -> Timestamp:
    return v
