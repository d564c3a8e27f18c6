"""MongoDB's query language: filters compiled to Python closures, sort keys and the positional `$` index.

Semantics follow the server's matcher: implicit traversal of arrays along dotted paths, numeric path parts
that index arrays, type bracketing for comparisons, `null` matching missing fields, and each operator of a
field being satisfied independently.
"""

from __future__ import annotations

import re

from bson.int64 import Int64
from bson.regex import Regex

from devstack.mongo.bsonutil import (
    COLLATION,
    LET_VARS,
    MISSING,
    TYPE_ALIASES,
    bson_type,
    canon,
    is_number,
    number_value,
    sort_key,
    to_int,
)
from devstack.mongo.errors import CommandError, bad_value

_NUMERIC_TYPES = {1, 16, 18, 19}


def split_path(path: str) -> list[str]:
    return path.split(".")


def path_candidates(value, parts: list[str], i: int = 0):
    """Every value a dotted path reaches in `value`, traversing arrays like the server's matcher does."""
    if i == len(parts):
        yield value
        return
    part = parts[i]
    if isinstance(value, dict):
        yield from path_candidates(value.get(part, MISSING), parts, i + 1) if part in value else iter((MISSING,))
        return
    if isinstance(value, list):
        found = False
        if part.isdigit():
            idx = int(part)
            if idx < len(value):
                found = True
                yield from path_candidates(value[idx], parts, i + 1)
        for elem in value:
            if isinstance(elem, dict):
                found = True
                yield from path_candidates(elem, parts, i)
        if not found:
            yield MISSING
        return
    yield MISSING


def get_path(doc, path: str):
    """Plain lookup of a dotted path (no array expansion except numeric indexes); MISSING when absent."""
    cur = doc
    for part in path.split("."):
        if isinstance(cur, dict):
            if part not in cur:
                return MISSING
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit():
            idx = int(part)
            if idx >= len(cur):
                return MISSING
            cur = cur[idx]
        else:
            return MISSING
    return cur


# ---- leaf predicates ------------------------------------------------------------------------------

def _regex_of(value, options: str = "") -> re.Pattern:
    if isinstance(value, Regex):
        flags = value.flags if isinstance(value.flags, int) else 0
        pattern = value.pattern
        if isinstance(value.flags, str):
            options = value.flags + options
    elif isinstance(value, re.Pattern):
        return value
    else:
        pattern, flags = value, 0
    for ch in options:
        flags |= {"i": re.I, "m": re.M, "x": re.X, "s": re.S, "u": 0}.get(ch, 0)
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise CommandError(51091, f"Regular expression is invalid: {exc}") from None


def _eq_pred(target):
    if isinstance(target, (Regex, re.Pattern)):
        rx = _regex_of(target)
        return lambda v: isinstance(v, str) and rx.search(v) is not None
    if target is None:
        return lambda v: v is None or v is MISSING
    tkey = sort_key(target)
    tcanon = canon(target)

    def pred(v):
        if v is MISSING:
            return False
        return canon(v) == tcanon and sort_key(v) == tkey
    return pred


def _cmp_pred(op: str, target):
    tcanon = canon(target)
    tkey = sort_key(target)
    minmax = bson_type(target) in (-1, 127)

    def pred(v):
        if v is MISSING:
            if target is None and op in ("$gte", "$lte"):
                return True
            return False
        if not minmax and canon(v) != tcanon:
            return False
        k = sort_key(v)
        if op == "$gt":
            return k > tkey
        if op == "$gte":
            return k >= tkey
        if op == "$lt":
            return k < tkey
        return k <= tkey
    return pred


def _type_pred(spec):
    specs = spec if isinstance(spec, list) else [spec]
    wanted: set[int] = set()
    for s in specs:
        if isinstance(s, str):
            if s == "number":
                wanted |= _NUMERIC_TYPES
            elif s in TYPE_ALIASES:
                wanted.add(TYPE_ALIASES[s])
            else:
                raise bad_value(f"Unknown type name alias: {s}")
        elif is_number(s):
            wanted.add(int(number_value(s)))
        else:
            raise type_error("type must be represented as a number or a string")
    return lambda v: v is not MISSING and bson_type(v) in wanted


def type_error(msg: str) -> CommandError:
    return CommandError(14, msg)


def _mod_pred(spec):
    if not isinstance(spec, list) or len(spec) != 2:
        if isinstance(spec, list) and len(spec) < 2:
            raise bad_value("malformed mod, not enough elements")
        if isinstance(spec, list):
            raise bad_value("malformed mod, too many elements")
        raise bad_value("malformed mod, needs to be an array")
    divisor, remainder = (to_int(x) if to_int(x) is not None else int(number_value(x)) for x in spec)
    if divisor == 0:
        raise bad_value("divisor cannot be 0")

    def pred(v):
        if not is_number(v) or isinstance(v, bool):
            return False
        n = number_value(v)
        try:
            n = int(n)
        except (ValueError, OverflowError):
            return False
        r = abs(n) % abs(divisor)
        r = -r if n < 0 else r
        return r == remainder
    return pred


def _bits_pred(op, spec):
    if isinstance(spec, list):
        mask = 0
        for pos in spec:
            mask |= 1 << int(pos)
    else:
        mask = int(number_value(spec))

    def pred(v):
        if isinstance(v, bool) or not is_number(v):
            if isinstance(v, bytes):
                n = int.from_bytes(v, "little")
            else:
                return False
        else:
            f = number_value(v)
            if isinstance(f, float) and not f.is_integer():
                return False
            n = int(f)
            if n < 0:
                n &= (1 << 64) - 1
        if op == "$bitsAllSet":
            return n & mask == mask
        if op == "$bitsAllClear":
            return n & mask == 0
        if op == "$bitsAnySet":
            return n & mask != 0
        return n & mask != mask
    return pred


# ---- compilation ----------------------------------------------------------------------------------

def _any_candidate(parts, pred, expand=True):
    def match(doc):
        for v in path_candidates(doc, parts):
            if pred(v):
                return True
            if expand and isinstance(v, list):
                for e in v:
                    if pred(e):
                        return True
        return False
    return match


def _is_operator_doc(value) -> bool:
    return isinstance(value, dict) and bool(value) and next(iter(value)).startswith("$")


def _compile_elem_match(spec):
    if not isinstance(spec, dict):
        raise bad_value("$elemMatch needs an Object")
    if _is_operator_doc(spec) and not any(k in ("$and", "$or", "$nor", "$expr", "$where") for k in spec):
        value_match = _compile_operators(["__elem__"], spec, value_only=True)
        return lambda e: value_match(e)
    doc_match = compile_filter(spec)
    return lambda e: isinstance(e, dict) and doc_match(e)


def _compile_operators(parts, ops: dict, value_only: bool = False):
    """Compile `{$op: arg, ...}` for one path. With value_only, the result tests a bare value."""
    checks = []
    options = ops.get("$options")
    for op, arg in ops.items():
        if op == "$options":
            if "$regex" not in ops:
                raise bad_value("$options needs a $regex")
            continue
        checks.append(_compile_operator(parts, op, arg, options, value_only))
    if len(checks) == 1:
        return checks[0]
    return lambda doc: all(c(doc) for c in checks)


def _wrap(parts, pred, value_only, expand=True):
    if value_only:
        if expand:
            return lambda v: pred(v) or (isinstance(v, list) and any(pred(e) for e in v))
        return pred
    return _any_candidate(parts, pred, expand)


def _compile_operator(parts, op, arg, options, value_only):
    if op == "$eq":
        return _wrap(parts, _eq_pred(arg), value_only)
    if op == "$ne":
        inner = _wrap(parts, _eq_pred(arg), value_only)
        return lambda d: not inner(d)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if isinstance(arg, (Regex, re.Pattern)):
            return lambda d: False
        return _wrap(parts, _cmp_pred(op, arg), value_only)
    if op in ("$in", "$nin"):
        if not isinstance(arg, list):
            raise bad_value(f"{op} needs an array")
        for item in arg:
            if _is_operator_doc(item) and op == "$in":
                raise bad_value("cannot nest $ under $in")
        preds = [_eq_pred(x) for x in arg]
        keyset = set()
        simple = True
        for x in arg:
            if isinstance(x, (str, int, float)) and not isinstance(x, bool):
                keyset.add((canon(x), sort_key(x)))
            else:
                simple = False

        if COLLATION.get() is not None:
            simple = False

        def any_pred(v):
            if simple and v is not MISSING and not isinstance(v, (dict, list)):
                try:
                    return (canon(v), sort_key(v)) in keyset
                except TypeError:
                    pass
            return any(p(v) for p in preds)
        inner = _wrap(parts, any_pred, value_only)
        if op == "$in":
            return inner
        return lambda d: not inner(d)
    if op == "$exists":
        want = bool(arg) if not is_number(arg) else number_value(arg) != 0
        if value_only:
            return lambda v: (v is not MISSING) == want

        def exists(doc):
            has = any(v is not MISSING for v in path_candidates(doc, parts))
            return has == want
        return exists
    if op == "$type":
        return _wrap(parts, _type_pred(arg), value_only)
    if op == "$size":
        n = to_int(arg)
        if n is None or n < 0:
            if is_number(arg) and n is None:
                raise bad_value("$size must be a whole number")
            raise bad_value("$size needs a number" if not is_number(arg) else "$size may not be negative")
        return _wrap(parts, lambda v: isinstance(v, list) and len(v) == n, value_only, expand=False)
    if op == "$all":
        if not isinstance(arg, list):
            raise bad_value("$all needs an array")
        if not arg:
            return lambda d: False
        subs = []
        for item in arg:
            if isinstance(item, dict) and "$elemMatch" in item:
                em = _compile_elem_match(item["$elemMatch"])
                subs.append(_wrap(parts, lambda v, em=em: isinstance(v, list) and any(em(e) for e in v),
                                  value_only, expand=False))
            else:
                subs.append(_wrap(parts, _eq_pred(item), value_only))
        return lambda d: all(s(d) for s in subs)
    if op == "$elemMatch":
        em = _compile_elem_match(arg)
        return _wrap(parts, lambda v: isinstance(v, list) and any(em(e) for e in v), value_only, expand=False)
    if op == "$regex":
        if not isinstance(arg, (str, Regex, re.Pattern)):
            raise bad_value("$regex has to be a string")
        rx = _regex_of(arg, options or "")
        return _wrap(parts, lambda v: isinstance(v, str) and rx.search(v) is not None, value_only)
    if op == "$not":
        if isinstance(arg, (Regex, re.Pattern)):
            inner = _wrap(parts, _eq_pred(arg), value_only)
        elif isinstance(arg, dict):
            if not arg:
                raise bad_value("$not cannot be empty")
            if not _is_operator_doc(arg):
                raise bad_value("$not needs a regex or a document")
            inner = _compile_operators(parts, arg, value_only)
        else:
            raise bad_value("$not needs a regex or a document")
        return lambda d: not inner(d)
    if op == "$mod":
        return _wrap(parts, _mod_pred(arg), value_only)
    if op in ("$bitsAllSet", "$bitsAllClear", "$bitsAnySet", "$bitsAnyClear"):
        return _wrap(parts, _bits_pred(op, arg), value_only)
    if op == "$comment":
        return lambda d: True
    raise bad_value(f"unknown operator: {op}")


def compile_filter(flt) -> callable:
    """Compile a query filter into `match(doc) -> bool`."""
    if flt is None:
        return lambda doc: True
    if not isinstance(flt, dict):
        raise bad_value("the match filter must be an expression in an object")
    checks = []
    for key, value in flt.items():
        if key.startswith("$"):
            checks.append(_compile_top(key, value))
            continue
        parts = split_path(key)
        if _is_operator_doc(value):
            checks.append(_compile_operators(parts, value))
        else:
            checks.append(_any_candidate(parts, _eq_pred(value)))
    if not checks:
        return lambda doc: True
    if len(checks) == 1:
        return checks[0]
    return lambda doc: all(c(doc) for c in checks)


def _compile_top(key, value):
    if key in ("$and", "$or", "$nor"):
        if not isinstance(value, list) or not value:
            raise bad_value(f"{key} argument must be a non-empty array" if isinstance(value, list)
                            else f"{key} must be an array")
        subs = [compile_filter(v) for v in value]
        if key == "$and":
            return lambda d: all(s(d) for s in subs)
        if key == "$or":
            return lambda d: any(s(d) for s in subs)
        return lambda d: not any(s(d) for s in subs)
    if key == "$expr":
        from devstack.mongo.expressions import evaluate, truthy_expr

        return lambda d: truthy_expr(evaluate(value, d, LET_VARS.get()))
    if key == "$comment":
        return lambda d: True
    if key in ("$where", "$text", "$jsonSchema"):
        raise CommandError(2, f"{key} is not supported by the emulator")
    raise bad_value(f"unknown top level operator: {key}")


def matches(flt, doc) -> bool:
    return compile_filter(flt)(doc)


# ---- id shortcuts -------------------------------------------------------------------------------------

def id_equality(flt):
    """The `_id` value when the filter pins exactly one `_id` (e.g. `{_id: 5}`), else MISSING."""
    if not isinstance(flt, dict) or "_id" not in flt:
        return MISSING
    v = flt["_id"]
    if isinstance(v, dict):
        if len(v) == 1 and "$eq" in v:
            v = v["$eq"]
        elif _is_operator_doc(v) or not v:
            return MISSING
    if isinstance(v, (Regex, re.Pattern, list)) or v is None:
        return MISSING
    return v


# ---- sort ---------------------------------------------------------------------------------------------

class _Reverse:
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __lt__(self, other):
        return self.k > other.k

    def __gt__(self, other):
        return self.k < other.k

    def __eq__(self, other):
        return self.k == other.k

    def __le__(self, other):
        return self.k >= other.k

    def __ge__(self, other):
        return self.k <= other.k


def _sort_value(doc, parts, ascending):
    vals = []
    for v in path_candidates(doc, parts):
        if isinstance(v, list):
            if not v:
                vals.append((0.5,))  # empty arrays sort before null
            vals.extend(sort_key(e) for e in v)
        else:
            vals.append(sort_key(v if v is not MISSING else None))
    if not vals:
        return (1,)
    return min(vals) if ascending else max(vals)


def sort_key_func(sort_spec: dict):
    specs = []
    for field, direction in sort_spec.items():
        if isinstance(direction, dict):
            if direction.get("$meta") in ("textScore", "randVal", "searchScore"):
                continue
            raise bad_value(f"Illegal key in $sort specification: {field}: {direction}")
        d = to_int(direction)
        if d not in (1, -1):
            raise bad_value("$sort key ordering must be 1 (for ascending) or -1 (for descending)")
        specs.append((split_path(field), d == 1))
    if not specs:
        return None

    def key(doc):
        out = []
        for parts, asc in specs:
            k = _sort_value(doc, parts, asc)
            out.append(k if asc else _Reverse(k))
        return out
    return key


def sort_docs(docs: list, sort_spec: dict | None) -> list:
    if not sort_spec:
        return docs
    key = sort_key_func(sort_spec)
    if key is None:
        return docs
    return sorted(docs, key=key)


# ---- positional "$" --------------------------------------------------------------------------------------

def positional_index(flt, doc, array_path: list[str]) -> int | None:
    """Index of the first element of the array at `array_path` that the filter matched (for `a.$`)."""
    if not isinstance(flt, dict):
        return None
    conditions = []

    def collect(f):
        for k, v in f.items():
            if k == "$and" and isinstance(v, list):
                for sub in v:
                    if isinstance(sub, dict):
                        collect(sub)
            elif not k.startswith("$"):
                conditions.append((k, v))
    collect(flt)
    n = len(array_path)
    arr = get_path(doc, ".".join(array_path))
    if not isinstance(arr, list):
        return None
    for key, cond in conditions:
        parts = split_path(key)
        if parts[:n] != array_path:
            continue
        rest = parts[n:]
        if rest and rest[0].isdigit():
            continue
        if _is_operator_doc(cond) and "$elemMatch" in cond and not rest:
            em = _compile_elem_match(cond["$elemMatch"])
            for i, e in enumerate(arr):
                if em(e):
                    return i
            continue
        if rest:
            m = compile_filter({".".join(rest): cond})
            for i, e in enumerate(arr):
                if isinstance(e, dict) and m(e):
                    return i
        else:
            m = compile_filter({"__v": cond})
            for i, e in enumerate(arr):
                if m({"__v": e}):
                    return i
    return None


def int64(v) -> Int64:
    return Int64(v)
