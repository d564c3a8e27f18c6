"""Insert, update, delete and findAndModify against the catalog, producing oplog operations.

A `Writer` applies one command's writes either directly (each operation its own oplog entry, like
MongoDB outside transactions) or into a transaction's buffer (one `applyOps` entry at commit).
Per-statement failures become `WriteError`s so the command can report `writeErrors` as the server does.
"""

from __future__ import annotations

import re

from bson.objectid import ObjectId
from bson.regex import Regex

from devstack.mongo import update as upd
from devstack.mongo.bsonutil import MISSING, hash_key, to_int, type_name
from devstack.mongo.errors import CommandError, WriteError
from devstack.mongo.oplog import Op
from devstack.mongo.projection import Projection
from devstack.mongo.reads import select
from devstack.mongo.transactions import TxnView, write_conflict


def _as_write_error(exc: CommandError) -> WriteError:
    return WriteError(exc.code, exc.errmsg, exc.extra)


class Writer:
    def __init__(self, rs, db: str, txn=None, lsid=None, txn_number=None):
        self.rs = rs
        self.db = db
        self.txn = txn
        self.lsid = lsid
        self.txn_number = txn_number
        self.last_ts = None
        self.stmt = 0
        self.bypass_validation = False

    def validate(self, coll, doc, old=None):
        """Collection validators (query-language), like MongoDB's strict/moderate levels and error action."""
        validator = coll.options.get("validator")
        if not validator or self.bypass_validation:
            return
        level = coll.options.get("validationLevel", "strict")
        if level == "off" or coll.options.get("validationAction", "error") != "error":
            return
        from devstack.mongo.query import compile_filter

        match = compile_filter(validator)
        if level == "moderate" and old is not None and not match(old):
            return
        if not match(doc):
            raise WriteError(121, "Document failed validation",
                             {"errInfo": {"failingDocumentId": doc.get("_id"),
                                          "details": {"operatorName": "$and", "schemaRulesNotSatisfied": []}}})

    # -- collections --
    def collection(self, name: str, create: bool = False):
        ns = f"{self.db}.{name}"
        if self.txn is not None:
            coll = self.txn.created.get(ns) or self.rs.catalog.get_collection(self.db, name)
            if coll is None and create:
                coll = self.rs.new_collection_in_txn(self.txn, self.db, name)
            return TxnView(coll, self.txn, self.rs.txns) if coll is not None else None
        coll = self.rs.catalog.get_collection(self.db, name)
        if coll is None and create:
            coll = self.rs.create_collection(self.db, name, {})
            self.last_ts = self.rs.last_ts
        if coll is not None and coll.options.get("viewOn"):
            raise CommandError(166, f"Namespace {coll.ns} is a view, not a collection")
        return coll

    # -- logging --
    def _log(self, op: Op, coll, idk, old_doc):
        if self.txn is not None:
            self.txn.ops.append(op)
            return
        holder = self.rs.txns.holder(coll.ns, idk)
        if holder is not None:
            self.rs.abort_transaction(holder, write_conflict())
        extra = {"stmtId": self.stmt} if self.txn_number is not None else None
        entry = self.rs.log_op(op, lsid=self.lsid if self.txn_number is not None else None,
                               txn_number=self.txn_number, stmt_id=extra and self.stmt)
        self.rs.txns.note_write(coll.ns, idk, entry.ts, old_doc)
        self.last_ts = entry.ts

    def _check_free(self, coll, idk):
        """Autocommit writes may not silently overwrite a document an open transaction holds."""
        if self.txn is None:
            holder = self.rs.txns.holder(coll.ns, idk)
            if holder is not None:
                self.rs.abort_transaction(holder, write_conflict())

    # -- insert --
    def insert_one(self, coll, doc: dict) -> dict:
        validate_insert(doc)
        doc = upd.ensure_id_first(doc)
        idk = hash_key(doc["_id"])
        self._check_free(coll, idk)
        self.validate(coll, doc)
        coll.insert(doc)
        self._log(Op("i", coll.ns, coll.uuid, o=doc, o2=self.rs.document_key(coll.ns, doc)), coll, idk, None)
        return doc

    # -- update --
    def update_doc(self, coll, doc, update, query=None, array_filters=None):
        """Apply `update` to stored `doc`; returns the new document (or the same when nothing changed)."""
        kind = upd.kind_of(update)
        if kind == "replacement":
            new = upd.apply_replacement(doc, update)
            if upd.exact_equal(new, doc):
                return doc
            op = Op("u", coll.ns, coll.uuid, o=new, o2=self.rs.document_key(coll.ns, doc))
        elif kind == "pipeline":
            from devstack.mongo.aggregation import run_update_pipeline

            new = run_update_pipeline(doc, update)
            if "_id" not in new:
                new = {"_id": doc["_id"], **new}
            if not upd.exact_equal(new["_id"], doc["_id"]):
                raise CommandError(66, "Performing an update on the path '_id' would modify the immutable field "
                                       "'_id'")
            new = upd.ensure_id_first(new)
            diff = upd.compute_diff(doc, new)
            if diff is None:
                return doc
            op = Op("u", coll.ns, coll.uuid, o={"$v": 2, "diff": diff}, o2=self.rs.document_key(coll.ns, doc))
        else:
            new, diff = upd.apply_operators(doc, update, query=query, array_filters=array_filters)
            if diff is None:
                return doc
            op = Op("u", coll.ns, coll.uuid, o={"$v": 2, "diff": diff}, o2=self.rs.document_key(coll.ns, doc))
        validate_stored(new)
        self.validate(coll, new, doc)
        if coll.pre_post_images:
            op.pre_image = doc
            op.post_image = new
        idk = hash_key(doc["_id"])
        self._check_free(coll, idk)
        coll.replace(doc, new)
        self._log(op, coll, idk, doc)
        return new

    def upsert_doc(self, coll, query, update, array_filters=None) -> dict:
        kind = upd.kind_of(update)
        if kind == "replacement":
            upd.check_replacement(update)
            doc = {k: upd.copy_value(v) for k, v in update.items()}
            if "_id" not in doc:
                seed = upd.upsert_seed(query)
                if "_id" in seed:
                    doc = {"_id": seed["_id"], **doc}
        elif kind == "pipeline":
            from devstack.mongo.aggregation import run_update_pipeline

            seed = upd.upsert_seed(query)
            doc = run_update_pipeline(seed, update)
        else:
            seed = upd.upsert_seed(query)
            doc, _ = upd.apply_operators(seed, update, query=None, array_filters=array_filters, upsert_insert=True)
        doc = upd.ensure_id_first(doc)
        return self.insert_one(coll, doc)

    def update_statement(self, coll_name, q, u, multi=False, upsert=False, array_filters=None, hint=None,
                         sort=None):
        """One `update` statement: returns (n, nModified, upserted_id or MISSING)."""
        if multi and upd.kind_of(u) == "replacement" and u:
            raise CommandError(9, "multi update is not supported for replacement-style update")
        coll = self.collection(coll_name, create=upsert)
        if coll is None:
            if hint is not None:
                pass
            return 0, 0, MISSING
        docs = select(coll, q, sort=sort, hint=hint, single=not multi)
        if not docs:
            if not upsert:
                return 0, 0, MISSING
            new = self.upsert_doc(coll, q, u, array_filters)
            return 1, 0, new["_id"]
        modified = 0
        for doc in docs:
            new = self.update_doc(coll, doc, u, query=q, array_filters=array_filters)
            if new is not doc:
                modified += 1
        return len(docs), modified, MISSING

    # -- delete --
    def delete_doc(self, coll, doc):
        idk = hash_key(doc["_id"])
        self._check_free(coll, idk)
        coll.delete(doc)
        op = Op("d", coll.ns, coll.uuid, o=self.rs.document_key(coll.ns, doc))
        if coll.pre_post_images:
            op.pre_image = doc
        self._log(op, coll, idk, doc)

    def delete_statement(self, coll_name, q, limit, hint=None) -> int:
        coll = self.collection(coll_name)
        if coll is None:
            return 0
        docs = select(coll, q, hint=hint, single=bool(limit))
        for doc in docs:
            self.delete_doc(coll, doc)
        return len(docs)

    # -- findAndModify --
    def find_and_modify(self, coll_name, query, sort=None, remove=False, update=None, new=False, fields=None,
                        upsert=False, array_filters=None, hint=None):
        coll = self.collection(coll_name, create=bool(upsert and not remove))
        proj = Projection(fields) if fields else None
        docs = select(coll, query, sort=sort, hint=hint, single=True) if coll is not None else []
        last_error: dict = {"n": 0}
        value = None
        if remove:
            if docs:
                self.delete_doc(coll, docs[0])
                value = docs[0]
                last_error = {"n": 1}
        elif docs:
            old = docs[0]
            result = self.update_doc(coll, old, update, query=query, array_filters=array_filters)
            value = result if new else old
            last_error = {"n": 1, "updatedExisting": True}
        elif upsert:
            created = self.upsert_doc(coll, query, update, array_filters)
            value = created if new else None
            last_error = {"n": 1, "updatedExisting": False, "upserted": created["_id"]}
        else:
            if update is not None and not remove:
                last_error = {"n": 0, "updatedExisting": False}
        if value is not None and proj is not None:
            value = proj.apply(value, query)
        return value, last_error


def validate_insert(doc: dict):
    if not isinstance(doc, dict):
        raise WriteError(2, "document must be an object")
    if "_id" in doc:
        v = doc["_id"]
        if isinstance(v, list):
            raise WriteError(53, "The '_id' value cannot be of type array")
        if isinstance(v, (Regex, re.Pattern)):
            raise WriteError(53, "can't use a regex for _id")
        if isinstance(v, dict):
            for k in v:
                if k.startswith("$"):
                    raise WriteError(52, f"_id fields may not contain '$'-prefixed fields: {k} is not valid for "
                                         "storage.")


def validate_stored(doc: dict):
    v = doc.get("_id", MISSING)
    if isinstance(v, list):
        raise CommandError(53, "The '_id' value cannot be of type array")


def new_object_id() -> ObjectId:
    return ObjectId()


def limit_of(stmt) -> int:
    v = stmt.get("limit", 0)
    n = to_int(v)
    if n not in (0, 1):
        raise CommandError(9, f"The limit field in delete objects must be 0 or 1. Got {v}")
    return n


def describe(value) -> str:
    return type_name(value)
