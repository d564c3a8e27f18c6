"""Aggregation pipelines other than `$changeStream`: the common stages natively, the rest through
mongomock's stage implementations; `$out` and `$merge` write back through the normal write path."""

from __future__ import annotations

import random

from devstack.mongo.bsonutil import MISSING, copy_doc, hash_key, sort_key, to_int
from devstack.mongo.errors import CommandError
from devstack.mongo.expressions import evaluate, run_stages
from devstack.mongo.query import compile_filter, get_path, sort_docs

WRITE_STAGES = ("$out", "$merge")


def _plain(docs):
    return [copy_doc(d) for d in docs]


class _MockCollection:
    """What mongomock's $lookup/$graphLookup/$unionWith need from a `database[name]`."""

    def __init__(self, docs):
        self._docs = docs

    def find(self, *args, **kwargs):
        flt = args[0] if args else kwargs.get("filter")
        match = compile_filter(flt) if flt else None
        return [copy_doc(d) for d in self._docs if match is None or match(d)]


class _MockDatabase:
    def __init__(self, resolver):
        self._resolver = resolver

    def get_collection(self, name):
        return _MockCollection(self._resolver(name))

    __getitem__ = get_collection


def run_pipeline(docs: list, pipeline: list, resolver=None, variables=None) -> list:
    """Run `pipeline` over `docs` (stored documents: never mutated). `resolver(name)` returns another
    collection's documents for $lookup / $unionWith."""
    if not isinstance(pipeline, list):
        raise CommandError(14, "'pipeline' option must be specified as an array")
    owned = False
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1:
            raise CommandError(40323, "A pipeline stage specification object must contain exactly one field.",
                               code_name_override="Location40323")
        name, spec = next(iter(stage.items()))
        if name == "$match":
            match = compile_filter(spec)
            docs = [d for d in docs if match(d)]
        elif name == "$sort":
            if not isinstance(spec, dict) or not spec:
                raise CommandError(15976, "$sort stage must have at least one sort key",
                                   code_name_override="Location15976")
            docs = sort_docs(list(docs), spec)
        elif name == "$skip":
            n = to_int(spec)
            if n is None or n < 0:
                raise CommandError(15956, "invalid argument to $skip stage: Expected a non-negative number",
                                   code_name_override="Location15956")
            docs = docs[n:]
        elif name == "$limit":
            n = to_int(spec)
            if n is None or n <= 0:
                raise CommandError(15958, "the limit must be positive", code_name_override="Location15958")
            docs = docs[:n]
        elif name == "$project":
            from devstack.mongo.projection import Projection

            proj = Projection(spec)
            docs = [proj.apply(d) for d in docs]
            owned = True
        elif name in ("$addFields", "$set"):
            if not isinstance(spec, dict):
                raise CommandError(40272, f"{name} specification stage must be an object",
                                   code_name_override="Location40272")
            out = []
            for d in docs:
                nd = copy_doc(d)
                for path, expr in spec.items():
                    _set_path(nd, path.split("."), evaluate(expr, d, variables))
                out.append(nd)
            docs = out
            owned = True
        elif name == "$count":
            if not isinstance(spec, str) or not spec:
                raise CommandError(40156, "the count field must be a non-empty string",
                                   code_name_override="Location40156")
            docs = [{spec: len(docs)}] if docs else []
            owned = True
        elif name == "$sample":
            size = to_int(spec.get("size")) if isinstance(spec, dict) else None
            if size is None or size < 0:
                raise CommandError(28747, "size argument to $sample must be a non-negative number",
                                   code_name_override="Location28747")
            docs = random.sample(list(docs), min(size, len(docs)))
        elif name == "$bucketAuto":
            docs = _bucket_auto(docs, spec)
            owned = True
        elif name == "$unset":
            fields = [spec] if isinstance(spec, str) else list(spec)
            docs = _plain(docs) if not owned else docs
            owned = True
            for d in docs:
                for f in fields:
                    _unset_path(d, f.split("."))
        elif name in ("$replaceRoot", "$replaceWith"):
            expr = spec.get("newRoot") if name == "$replaceRoot" else spec
            out = []
            for d in docs:
                v = evaluate(expr, d, variables)
                if not isinstance(v, dict):
                    raise CommandError(40228, "'replacement document' must evaluate to an object, but resulting value "
                                              f"was: {v!r}", code_name_override="Location40228")
                out.append(v)
            docs = out
            owned = True
        elif name == "$sortByCount":
            groups: dict = {}
            for d in docs:
                v = evaluate(spec, d, variables)
                k = hash_key(v)
                if k not in groups:
                    groups[k] = [v, 0]
                groups[k][1] += 1
            docs = sorted(({"_id": v, "count": c} for v, c in groups.values()), key=lambda x: -x["count"])
            owned = True
        elif name == "$facet":
            base = docs
            docs = [{k: run_pipeline(base, sub, resolver, variables) for k, sub in spec.items()}]
            owned = True
        elif name == "$documents":
            docs = list(spec) if isinstance(spec, list) else evaluate(spec, {}, variables)
            owned = True
        elif name == "$unionWith":
            coll_name = spec if isinstance(spec, str) else spec.get("coll")
            sub = [] if isinstance(spec, str) else spec.get("pipeline", [])
            other = resolver(coll_name) if resolver else []
            docs = list(docs) + run_pipeline(other, sub, resolver, variables)
        elif name in WRITE_STAGES:
            raise CommandError(40601, f"{name} can only be the final stage in the pipeline",
                               code_name_override="Location40601")
        elif name in ("$collStats", "$indexStats", "$planCacheStats", "$currentOp", "$listSessions",
                      "$listLocalSessions"):
            docs = []
            owned = True
        elif name == "$changeStream":
            raise CommandError(40602, "$changeStream is only valid as the first stage in a pipeline.",
                               code_name_override="Location40602")
        else:
            if not owned:
                docs = _plain(docs)
                owned = True
            database = _MockDatabase(resolver) if resolver else None
            docs = run_stages(docs, [stage], database)
            if name == "$group":
                docs = [{"_id": d.get("_id"), **{k: v for k, v in d.items() if k != "_id"}} for d in docs]
    return docs


def _set_path(doc, parts, value):
    cur = doc
    for p in parts[:-1]:
        nxt = cur.get(p)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[p] = nxt
        cur = nxt
    cur[parts[-1]] = value


def _unset_path(doc, parts):
    cur = doc
    for p in parts[:-1]:
        cur = cur.get(p) if isinstance(cur, dict) else None
        if cur is None:
            return
    if isinstance(cur, dict):
        cur.pop(parts[-1], None)


def _bucket_auto(docs, spec):
    group_by = spec.get("groupBy")
    buckets = to_int(spec.get("buckets"))
    if buckets is None or buckets <= 0:
        raise CommandError(40243, "The $bucketAuto 'buckets' field must be greater than 0",
                           code_name_override="Location40243")
    values = []
    for d in docs:
        if isinstance(group_by, str) and group_by.startswith("$") and not group_by.startswith("$$"):
            v = get_path(d, group_by[1:])
            v = None if v is MISSING else v
        else:
            v = evaluate(group_by, d)
        values.append(v)
    values.sort(key=sort_key)
    if not values:
        return []
    per = max(1, -(-len(values) // buckets))
    out = []
    i = 0
    while i < len(values):
        j = min(len(values), i + per)
        while j < len(values) and sort_key(values[j]) == sort_key(values[j - 1]):
            j += 1
        out.append({"_id": {"min": values[i], "max": values[j] if j < len(values) else values[j - 1]},
                    "count": j - i})
        i = j
    return out


def run_update_pipeline(doc: dict, pipeline: list, variables=None) -> dict:
    allowed = {"$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith"}
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1 or next(iter(stage)) not in allowed:
            name = next(iter(stage)) if isinstance(stage, dict) and stage else stage
            raise CommandError(72, f"{name} is not allowed to be used within an update")
    result = run_pipeline([doc], pipeline, variables=variables)
    if len(result) != 1:
        raise CommandError(2, "update pipeline did not produce one document")
    return result[0]
