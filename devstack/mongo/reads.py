"""Selecting documents from a collection (or a transaction's view of it): filter, sort, skip, limit, hint."""

from __future__ import annotations

from devstack.mongo.bsonutil import MISSING, to_int
from devstack.mongo.errors import CommandError
from devstack.mongo.query import _is_operator_doc, compile_filter, id_equality, sort_docs


def _id_range(flt):
    """(low, low_incl, high, high_incl) when the filter is only a range on _id, else None."""
    if not isinstance(flt, dict) or list(flt) != ["_id"]:
        return None
    cond = flt["_id"]
    if not _is_operator_doc(cond):
        return None
    low, low_incl, high, high_incl = MISSING, True, MISSING, False
    for op, v in cond.items():
        if isinstance(v, (dict, list)) or v is None:
            return None
        if op == "$gt":
            low, low_incl = v, False
        elif op == "$gte":
            low, low_incl = v, True
        elif op == "$lt":
            high, high_incl = v, False
        elif op == "$lte":
            high, high_incl = v, True
        else:
            return None
    return low, low_incl, high, high_incl


def check_hint(coll, hint):
    if hint is None or coll is None:
        return
    if isinstance(hint, str):
        if hint == "$natural" or hint in coll.indexes:
            return
    elif isinstance(hint, dict):
        if not hint:
            return
        if "$natural" in hint:
            return
        if any(dict(i.key) == dict(hint) and list(i.key) == list(hint) for i in coll.indexes.values()):
            return
    raise CommandError(2, "error processing query: ns=" + coll.ns + " planner returned error :: caused by :: "
                          "hint provided does not correspond to an existing index")


def select(coll, flt=None, sort=None, skip=0, limit=0, hint=None, single=False) -> list:
    """Matching documents (the stored dicts, not copies) in result order."""
    if coll is None:
        return []
    flt = flt or {}
    check_hint(coll, hint)
    skip = to_int(skip) or 0
    limit = abs(to_int(limit) or 0)
    if single:
        limit = 1
    idv = id_equality(flt)
    if idv is not MISSING:
        doc = coll.get(idv)
        if doc is None:
            return []
        docs = [doc] if (len(flt) == 1 and not _is_operator_doc(flt["_id"])) or compile_filter(flt)(doc) else []
        return docs[skip:][: limit or None]
    sort_is_id = sort and list(sort) == ["_id"]
    rng = _id_range(flt) if hasattr(coll, "id_range") else None
    natural_desc = isinstance(sort, dict) and list(sort) == ["$natural"] and to_int(sort["$natural"]) == -1
    if isinstance(sort, dict) and list(sort) == ["$natural"]:
        sort = None
    if rng is not None and (not sort or sort_is_id) and hasattr(coll, "id_range"):
        reverse = bool(sort_is_id and to_int(sort["_id"]) == -1)
        return coll.id_range(*rng, reverse=reverse, skip=skip, limit=limit)
    if not flt and sort_is_id and hasattr(coll, "sorted_by_id") and hasattr(coll, "id_range"):
        return coll.id_range(reverse=to_int(sort["_id"]) == -1, skip=skip, limit=limit)
    match = compile_filter(flt) if flt else None
    values = list(coll.values())
    if natural_desc:
        values.reverse()
    if not sort:
        out = []
        need = skip + limit if limit else None
        for doc in values:
            if match is None or match(doc):
                out.append(doc)
                if need is not None and len(out) >= need:
                    break
        return out[skip:]
    docs = [d for d in values if match is None or match(d)]
    docs = sort_docs(docs, sort)
    end = skip + limit if limit else None
    return docs[skip:end]
