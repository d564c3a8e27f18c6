"""Find projections: inclusion/exclusion with dotted paths, `$slice`, `$elemMatch`, positional `$` and
computed fields (MongoDB 4.4+ semantics)."""

from __future__ import annotations

from devstack.mongo.bsonutil import MISSING, is_number, number_value, to_int
from devstack.mongo.errors import CommandError
from devstack.mongo.query import compile_filter, positional_index


def _flag(v):
    if isinstance(v, bool):
        return v
    if is_number(v):
        return number_value(v) != 0
    return None


class Projection:
    def __init__(self, spec: dict | None):
        self.spec = spec or {}
        self.include_id = True
        self.mode = None  # "include" | "exclude"
        self.tree: dict = {}
        self.specials: dict = {}   # path -> ("slice", args) | ("elemMatch", matcher) | ("positional", None)
        self.computed: dict = {}   # top-level or dotted path -> expression
        for path, value in _flatten(self.spec):
            if path == "_id":
                f = _flag(value)
                if f is not None:
                    self.include_id = f
                    continue
            if path.endswith(".$"):
                self._set_mode("include", path)
                self.specials[path[:-2]] = ("positional", None)
                self._add(path[:-2], True)
                continue
            if isinstance(value, dict) and value and next(iter(value)).startswith("$"):
                op = next(iter(value))
                if op == "$slice":
                    arg = value["$slice"]
                    if isinstance(arg, list):
                        if len(arg) != 2 or to_int(arg[1]) is None or to_int(arg[0]) is None:
                            raise CommandError(28724, "First argument to $slice must be an array")
                        if to_int(arg[1]) <= 0:
                            raise CommandError(28724, "$slice limit must be positive")
                    elif to_int(arg) is None:
                        raise CommandError(28724, "$slice only supports numbers and [skip, limit] arrays")
                    self.specials[path] = ("slice", arg)
                    continue
                if op == "$elemMatch":
                    self.specials[path] = ("elemMatch", compile_filter(value["$elemMatch"]))
                    continue
                if op == "$meta":
                    continue
                self._set_mode("include", path)
                self.computed[path] = value
                continue
            f = _flag(value)
            if f is None:
                self._set_mode("include", path)
                self.computed[path] = {"$literal": value} if not isinstance(value, str) or not value.startswith("$") \
                    else value
                continue
            self._set_mode("include" if f else "exclude", path)
            self._add(path, f)
        if self.mode is None and self.include_id and "_id" in self.spec and not self.specials:
            self.mode = "include"  # {_id: 1} alone: only the _id, as mongod returns it

    def _set_mode(self, mode, path):
        if self.mode is None:
            self.mode = mode
        elif self.mode != mode:
            if mode == "include":
                raise CommandError(31253, f"Cannot do inclusion on field {path} in exclusion projection")
            raise CommandError(31254, f"Cannot do exclusion on field {path} in inclusion projection")

    def _add(self, path, flag):
        node = self.tree
        parts = path.split(".")
        for p in parts[:-1]:
            nxt = node.get(p)
            if nxt is True or nxt is False:
                raise CommandError(31250, f"Path collision at {path}")
            node = node.setdefault(p, {})
        if isinstance(node.get(parts[-1]), dict):
            raise CommandError(31250, f"Path collision at {path}")
        node[parts[-1]] = flag

    def apply(self, doc: dict, query=None) -> dict:
        if not self.spec:
            return doc
        if self.mode == "include":
            out = {}
            if self.include_id and "_id" in doc:
                out["_id"] = doc["_id"]
            out.update(_include(doc, self.tree))
            if not self.include_id:
                out.pop("_id", None)
        else:
            out = _exclude(doc, self.tree)
            if not self.include_id:
                out.pop("_id", None)
        for path, (kind, arg) in self.specials.items():
            self._special(out, doc, path, kind, arg, query)
        if self.computed:
            from devstack.mongo.expressions import evaluate

            for path, expr in self.computed.items():
                value = evaluate(expr, doc)
                _set_path(out, path.split("."), value)
        return out

    def _special(self, out, doc, path, kind, arg, query):
        parts = path.split(".")
        src = doc
        for p in parts:
            src = src.get(p, MISSING) if isinstance(src, dict) else MISSING
        if kind == "positional":
            if not isinstance(src, list):
                return
            idx = positional_index(query, doc, parts) if query is not None else None
            if idx is None:
                raise CommandError(51246, "Executor error during find command :: caused by :: positional operator "
                                          "'.$' couldn't find a matching element in the array")
            _set_path(out, parts, [src[idx]])
            return
        if not isinstance(src, list):
            if kind == "elemMatch":
                _del_path(out, parts)
            return
        if kind == "slice":
            if isinstance(arg, list):
                skip, limit = to_int(arg[0]), to_int(arg[1])
                if skip < 0:
                    skip = max(0, len(src) + skip)
                value = src[skip: skip + limit]
            else:
                n = to_int(arg)
                value = src[:n] if n >= 0 else src[n:]
            if self.mode == "include" and not _has_path(out, parts):
                if self.tree:
                    return
            _set_path(out, parts, value)
        else:
            for e in src:
                if arg(e) if isinstance(e, dict) else False:
                    _set_path(out, parts, [e])
                    return
            _del_path(out, parts)


def _flatten(spec: dict, prefix: str = ""):
    """`{a: {b: 1}}` -> ("a.b", 1); operator documents and `$`-keys are leaves."""
    for key, value in spec.items():
        path = prefix + key
        if isinstance(value, dict) and value and not next(iter(value)).startswith("$"):
            yield from _flatten(value, path + ".")
        else:
            yield path, value


def _include(value, tree):
    if isinstance(value, list):
        return [_include(e, tree) for e in value if isinstance(e, (dict, list))]
    out = {}
    for k, v in value.items():
        sub = tree.get(k)
        if sub is None or sub is False:
            continue
        if sub is True:
            out[k] = v
        elif isinstance(v, (dict, list)):
            out[k] = _include(v, sub)
    return out


def _exclude(value, tree):
    if isinstance(value, list):
        return [_exclude(e, tree) if isinstance(e, (dict, list)) else e for e in value]
    out = {}
    for k, v in value.items():
        sub = tree.get(k)
        if sub is False:
            continue
        if isinstance(sub, dict) and isinstance(v, (dict, list)):
            out[k] = _exclude(v, sub)
        else:
            out[k] = v
    return out


def _set_path(doc, parts, value):
    cur = doc
    for p in parts[:-1]:
        nxt = cur.get(p)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[p] = nxt
        cur = nxt
    cur[parts[-1]] = value


def _del_path(doc, parts):
    cur = doc
    for p in parts[:-1]:
        cur = cur.get(p)
        if not isinstance(cur, dict):
            return
    cur.pop(parts[-1], None)


def _has_path(doc, parts):
    cur = doc
    for p in parts:
        if not isinstance(cur, dict) or p not in cur:
            return False
        cur = cur[p]
    return True
