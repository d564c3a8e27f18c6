"""Update operators, replacement and pipeline updates, producing the `$v: 2` diff MongoDB logs.

Operators are applied in MongoDB's order (paths sorted field by field, array indexes numerically) and every
modification is logged the way the server's update nodes log it: a changed field as an update, a new field
as an insert, `$push`/`$addToSet` appends as array elements, `$unset` as a delete. The log becomes the
oplog entry's `diff`, from which change streams derive `updateDescription`.
"""

from __future__ import annotations

import datetime
import time
from decimal import Decimal

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

from devstack.mongo.bsonutil import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    MISSING,
    bson_type,
    copy_doc,
    exact_equal,
    fmt_value,
    is_number,
    now_ms_datetime,
    sort_key,
    to_int,
    type_name,
    values_equal,
)
from devstack.mongo.errors import CommandError
from devstack.mongo.query import compile_filter, positional_index

OPERATORS = {
    "$set", "$unset", "$inc", "$mul", "$min", "$max", "$rename", "$setOnInsert", "$currentDate", "$push",
    "$addToSet", "$pop", "$pull", "$pullAll", "$bit",
}
_CREATING = {"$set", "$inc", "$mul", "$min", "$max", "$setOnInsert", "$currentDate", "$push", "$addToSet", "$bit"}


def kind_of(update) -> str:
    if isinstance(update, list):
        return "pipeline"
    if not isinstance(update, dict):
        raise CommandError(9, "Update argument must be either an object or an array")
    if update and next(iter(update)).startswith("$"):
        return "operators"
    return "replacement"


# ---- paths -------------------------------------------------------------------------------------------

def _is_index(part: str) -> bool:
    return part.isdigit() and (part == "0" or not part.startswith("0"))


def _cmp_component(a: str, b: str) -> int:
    if a.isdigit() and b.isdigit():
        return (int(a) > int(b)) - (int(a) < int(b))
    return (a > b) - (a < b)


class _PathKey:
    __slots__ = ("parts",)

    def __init__(self, parts):
        self.parts = parts

    def __lt__(self, other):
        for a, b in zip(self.parts, other.parts, strict=False):
            c = _cmp_component(a, b)
            if c:
                return c < 0
        return len(self.parts) < len(other.parts)


def _check_path(path: str):
    if not isinstance(path, str) or path == "":
        raise CommandError(56, "An empty update path is not valid.")
    parts = path.split(".")
    for p in parts:
        if p == "":
            raise CommandError(56, f"The update path '{path}' contains an empty field name, which is not allowed.")
    for i, p in enumerate(parts):
        if p.startswith("$") and not (p == "$" or (p.startswith("$[") and p.endswith("]"))):
            raise CommandError(52, f"The dollar ($) prefixed field '{p}' in '{path}' is not valid for storage.")
        if p == "$" and i == 0:
            raise CommandError(2, "Cannot have positional (i.e. '$') element in the first position in path "
                                  f"'{path}'")
    return parts


# ---- the log -> v2 diff ----------------------------------------------------------------------------------

class _DocNode:
    __slots__ = ("deletes", "updates", "inserts", "subs")

    def __init__(self):
        self.deletes: dict = {}
        self.updates: dict = {}
        self.inserts: dict = {}
        self.subs: dict = {}

    def leaf(self, name):
        return name in self.updates or name in self.inserts or name in self.deletes


class _ArrayNode:
    __slots__ = ("updates", "subs", "resize")

    def __init__(self):
        self.updates: dict = {}
        self.subs: dict = {}
        self.resize = None

    def leaf(self, name):
        return name in self.updates


class ChangeLog:
    """Records modifications as (kind, [(name, is_array_index), ...]) and builds the `$v: 2` diff."""

    def __init__(self):
        self.entries: list = []

    def log(self, kind: str, comps: list):
        self.entries.append((kind, list(comps)))

    def __bool__(self):
        return bool(self.entries)

    def build(self, doc: dict) -> dict:
        root = _DocNode()
        for kind, comps in self.entries:
            node = root
            container = doc
            subsumed = False
            for depth, (name, _is_idx) in enumerate(comps[:-1]):
                key = int(name) if isinstance(node, _ArrayNode) else name
                if node.leaf(key):
                    subsumed = True
                    break
                next_is_array = comps[depth + 1][1]
                child = node.subs.get(key)
                if child is None:
                    child = _ArrayNode() if next_is_array else _DocNode()
                    node.subs[key] = child
                node = child
                container = container[key] if container is not MISSING else MISSING
            if subsumed:
                continue
            name = comps[-1][0]
            if isinstance(node, _ArrayNode):
                idx = int(name)
                node.subs.pop(idx, None)
                node.updates[idx] = True
            else:
                node.subs.pop(name, None)
                if kind == "d":
                    node.deletes[name] = True
                elif kind == "i":
                    node.inserts[name] = True
                else:
                    node.updates[name] = True
        return _serialize_doc(root, doc)

    def touched_paths(self) -> list[str]:
        return [".".join(n for n, _ in comps) for _, comps in self.entries]


def _serialize_doc(node: _DocNode, value) -> dict:
    out: dict = {}
    if node.deletes:
        out["d"] = {k: False for k in node.deletes}
    if node.updates:
        out["u"] = {k: value[k] for k in node.updates}
    if node.inserts:
        out["i"] = {k: value[k] for k in node.inserts}
    for k, sub in node.subs.items():
        child = value[k]
        out["s" + k] = _serialize_array(sub, child) if isinstance(sub, _ArrayNode) else _serialize_doc(sub, child)
    return out


def _serialize_array(node: _ArrayNode, value: list) -> dict:
    out: dict = {"a": True}
    if node.resize is not None:
        out["l"] = node.resize
    keys = sorted(set(node.updates) | set(node.subs))
    for idx in keys:
        if idx in node.updates:
            out[f"u{idx}"] = value[idx]
        else:
            sub = node.subs[idx]
            child = value[idx]
            out[f"s{idx}"] = _serialize_array(sub, child) if isinstance(sub, _ArrayNode) else _serialize_doc(sub, child)
    return out


# ---- full-document diff (pipeline updates) ----------------------------------------------------------------

def compute_diff(old: dict, new: dict) -> dict | None:
    diff = _diff_doc(old, new)
    return diff or None


def _diff_doc(old: dict, new: dict) -> dict:
    deletes = {k: False for k in old if k not in new}
    updates, inserts, subs = {}, {}, {}
    common_old = [k for k in old if k in new]
    common_new = [k for k in new if k in old]
    reordered = common_old != common_new
    for k, v in new.items():
        if k not in old:
            inserts[k] = v
            continue
        if reordered:
            # the server cannot express a move: it deletes and re-inserts out-of-order fields
            inserts[k] = v
            deletes.setdefault(k, False)
            continue
        ov = old[k]
        if exact_equal(ov, v):
            continue
        if isinstance(ov, dict) and isinstance(v, dict):
            sub = _diff_doc(ov, v)
            if sub:
                subs["s" + k] = sub
        elif isinstance(ov, list) and isinstance(v, list):
            subs["s" + k] = _diff_array(ov, v)
        else:
            updates[k] = v
    out: dict = {}
    if deletes:
        out["d"] = deletes
    if updates:
        out["u"] = updates
    if inserts:
        out["i"] = inserts
    out.update(subs)
    return out


def _diff_array(old: list, new: list) -> dict:
    out: dict = {"a": True}
    if len(new) < len(old):
        out["l"] = len(new)
    for i, v in enumerate(new):
        if i >= len(old):
            out[f"u{i}"] = v
            continue
        ov = old[i]
        if exact_equal(ov, v):
            continue
        if isinstance(ov, dict) and isinstance(v, dict):
            out[f"s{i}"] = _diff_doc(ov, v)
        elif isinstance(ov, list) and isinstance(v, list):
            out[f"s{i}"] = _diff_array(ov, v)
        else:
            out[f"u{i}"] = v
    return out


# ---- arithmetic ----------------------------------------------------------------------------------------

def _num(v):
    if isinstance(v, Decimal128):
        return v.to_decimal()
    return v


def _arith(op: str, a, b):
    ta, tb = bson_type(a), bson_type(b)
    if 19 in (ta, tb):
        da, db = Decimal(str(_num(a))) if not isinstance(a, Decimal128) else a.to_decimal(), \
            Decimal(str(_num(b))) if not isinstance(b, Decimal128) else b.to_decimal()
        return Decimal128(da + db if op == "$inc" else da * db)
    if 1 in (ta, tb):
        return float(a) + float(b) if op == "$inc" else float(a) * float(b)
    r = int(a) + int(b) if op == "$inc" else int(a) * int(b)
    if ta == 16 and tb == 16 and INT32_MIN <= r <= INT32_MAX:
        return int(r)
    if INT64_MIN <= r <= INT64_MAX:
        return Int64(r)
    raise CommandError(2, f"Failed to apply {op} operations to current value ({fmt_value(a)}) for document")


# ---- applying operators ------------------------------------------------------------------------------------

class _Ctx:
    def __init__(self, doc, query, array_filters, upsert_insert):
        self.doc = doc
        self.query = query
        self.upsert_insert = upsert_insert
        self.filters = {}
        self.used_filters = set()
        for flt in array_filters or []:
            if not isinstance(flt, dict) or not flt:
                raise CommandError(9, "Cannot use an expression without a top-level field name in arrayFilters")
            ident = None
            rewritten = {}
            for key, cond in flt.items():
                top, _, rest = key.partition(".")
                if ident is None:
                    ident = top
                elif ident != top:
                    raise CommandError(9, "Error parsing array filter :: caused by :: Expected a single top-level "
                                          f"field name, found '{ident}' and '{top}'")
                rewritten[rest if rest else "__v"] = cond
            if not ident or not ident[0].islower() or not ident.isalnum():
                raise CommandError(2, f"Error parsing array filter :: caused by :: The top-level field name must be "
                                      f"an alphanumeric string beginning with a lowercase letter, found '{ident}'")
            if ident in self.filters:
                raise CommandError(9, f"Found multiple array filters with the same top-level field name {ident}")
            self.filters[ident] = (compile_filter(rewritten), "__v" in rewritten and len(rewritten) == 1)
        self.log = ChangeLog()

    def element_matches(self, ident, elem) -> bool:
        match, scalar = self.filters[ident]
        if scalar:
            return match({"__v": elem})
        if "__v" in []:
            return False
        if isinstance(elem, dict):
            return match(elem)
        return match({"__v": elem})


def _expand(ctx: _Ctx, container, parts, i, prefix, out, path_str):
    """Resolve positional parts ($, $[], $[id]) into concrete [(name, is_index)] paths."""
    if i == len(parts):
        out.append(list(prefix))
        return
    part = parts[i]
    is_list = isinstance(container, list)
    if part == "$":
        arr_path = [n for n, _ in prefix]
        idx = positional_index(ctx.query, ctx.doc, arr_path) if ctx.query is not None else None
        if idx is None:
            raise CommandError(2, "The positional operator did not find the match needed from the query.")
        part = str(idx)
    if part.startswith("$[") and part.endswith("]"):
        ident = part[2:-1]
        if container is MISSING:
            raise CommandError(2, f"The path '{'.'.join(n for n, _ in prefix)}' must exist in the document in order "
                                  "to apply array updates.")
        if not is_list:
            raise CommandError(2, f"Cannot apply array updates to non-array element "
                                  f"{prefix[-1][0] if prefix else ''}: {fmt_value(container)}")
        if ident and ident not in ctx.filters:
            raise CommandError(2, f"No array filter found for identifier '{ident}' in path '{path_str}'")
        if ident:
            ctx.used_filters.add(ident)
        for idx, elem in enumerate(container):
            if ident and not ctx.element_matches(ident, elem):
                continue
            prefix.append((str(idx), True))
            _expand(ctx, elem, parts, i + 1, prefix, out, path_str)
            prefix.pop()
        return
    if is_list:
        child = container[int(part)] if _is_index(part) and int(part) < len(container) else MISSING
        prefix.append((part, _is_index(part)))
    else:
        child = container.get(part, MISSING) if isinstance(container, dict) else MISSING
        prefix.append((part, False))
    _expand(ctx, child, parts, i + 1, prefix, out, path_str)
    prefix.pop()


def _lookup(doc, comps):
    cur = doc
    for name, _ in comps:
        if isinstance(cur, dict):
            cur = cur.get(name, MISSING)
        elif isinstance(cur, list) and _is_index(name) and int(name) < len(cur):
            cur = cur[int(name)]
        else:
            return MISSING
        if cur is MISSING:
            return MISSING
    return cur


def _parent_for_write(ctx: _Ctx, comps, create: bool):
    """Return (parent container, key, created_at) creating missing intermediates when `create`."""
    cur = ctx.doc
    created_at = None
    for depth, (name, _) in enumerate(comps[:-1]):
        nxt_name = comps[depth + 1][0]
        if isinstance(cur, dict):
            child = cur.get(name, MISSING)
            if child is MISSING:
                if not create:
                    return None, None, None
                child = {}
                cur[name] = child
                created_at = depth if created_at is None else created_at
        elif isinstance(cur, list):
            if not _is_index(name):
                raise CommandError(28, f"Cannot create field '{name}' in element "
                                       f"{{{comps[depth - 1][0] if depth else ''}: {fmt_value(cur)}}}")
            idx = int(name)
            if idx >= len(cur):
                if not create:
                    return None, None, None
                cur.extend([None] * (idx - len(cur)))
                cur.append({})
                created_at = depth if created_at is None else created_at
            child = cur[idx]
        else:
            return None, None, None
        if not isinstance(child, (dict, list)):
            if not create:
                return None, None, None
            raise CommandError(28, f"Cannot create field '{nxt_name}' in element {{{name}: {fmt_value(child)}}}")
        if child is None:
            return None, None, None
        cur = child
    return cur, comps[-1][0], created_at


def _set_value(ctx: _Ctx, comps, value, op="$set"):
    """Set the value at a concrete path, logging as update / insert; returns False when it was a no-op."""
    current = _lookup(ctx.doc, comps)
    if current is not MISSING:
        if op == "$set" and values_equal(current, value) and bson_type(current) == bson_type(value) \
                and exact_equal(current, value):
            return False
        parent, key, _ = _parent_for_write(ctx, comps, False)
        if isinstance(parent, list):
            parent[int(key)] = value
        else:
            parent[key] = value
        ctx.log.log("u", comps)
        return True
    parent, key, created_at = _parent_for_write(ctx, comps, True)
    if parent is None:
        raise CommandError(28, f"Cannot create field '{key}'")
    if isinstance(parent, list):
        if not _is_index(key):
            owner = comps[-2][0] if len(comps) > 1 else ""
            raise CommandError(28, f"Cannot create field '{key}' in element {{{owner}: {fmt_value(parent)}}}")
        idx = int(key)
        if idx >= len(parent):
            parent.extend([None] * (idx - len(parent)))
            parent.append(value)
        else:
            parent[idx] = value
    else:
        parent[key] = value
    at = created_at if created_at is not None else len(comps) - 1
    ctx.log.log("i", comps[: at + 1])
    return True


def _unset(ctx: _Ctx, comps):
    if _lookup(ctx.doc, comps) is MISSING:
        return False
    parent, key, _ = _parent_for_write(ctx, comps, False)
    if isinstance(parent, list):
        parent[int(key)] = None
        ctx.log.log("u", comps)
    else:
        del parent[key]
        ctx.log.log("d", comps)
    return True


def _path_str(comps):
    return ".".join(n for n, _ in comps)


def _apply_one(ctx: _Ctx, op, comps, arg):
    cur = _lookup(ctx.doc, comps)
    field = comps[-1][0]
    if op == "$set" or (op == "$setOnInsert" and ctx.upsert_insert):
        return _set_value(ctx, comps, copy_value(arg))
    if op == "$setOnInsert":
        return False
    if op == "$unset":
        return _unset(ctx, comps)
    if op in ("$inc", "$mul"):
        if not is_number(arg):
            verb = "increment" if op == "$inc" else "multiply"
            raise CommandError(14, f"Cannot {verb} with non-numeric argument: {{{_path_str(comps)}: {fmt_value(arg)}}}")
        if cur is MISSING:
            new = arg if op == "$inc" else _arith("$mul", 0, arg) if not isinstance(arg, float) else 0.0
            if op == "$mul" and isinstance(arg, Int64):
                new = Int64(0)
            return _set_value(ctx, comps, new, op)
        if not is_number(cur):
            raise CommandError(14, f"Cannot apply {op} to a value of non-numeric type. {{_id: "
                                   f"{fmt_value(ctx.doc.get('_id'))}}} has the field '{field}' of non-numeric type "
                                   f"{type_name(cur)}")
        new = _arith(op, cur, arg)
        if exact_equal(new, cur):
            return False
        return _set_value(ctx, comps, new, op)
    if op in ("$min", "$max"):
        if cur is MISSING:
            return _set_value(ctx, comps, copy_value(arg), op)
        c = (sort_key(arg) > sort_key(cur)) - (sort_key(arg) < sort_key(cur))
        if (op == "$min" and c < 0) or (op == "$max" and c > 0):
            return _set_value(ctx, comps, copy_value(arg), op)
        return False
    if op == "$currentDate":
        if arg is True or (isinstance(arg, dict) and arg.get("$type") == "date"):
            value = now_ms_datetime()
        elif isinstance(arg, dict) and arg.get("$type") == "timestamp":
            value = Timestamp(int(time.time()), 1)
        elif isinstance(arg, bool):
            value = now_ms_datetime()
        else:
            raise CommandError(2, "The $type string field is required to be 'date' or 'timestamp': "
                                  "{$currentDate: {field : {$type: 'date'}}}")
        return _set_value(ctx, comps, value, op)
    if op == "$bit":
        if not isinstance(arg, dict) or not arg:
            raise CommandError(2, "You must pass in at least one bitwise operation. The format is: "
                                  "{$bit: {field: {and/or/xor: #}}")
        if cur is MISSING:
            cur_v = 0
        elif bson_type(cur) not in (16, 18):
            raise CommandError(2, f"Cannot apply $bit to a value of non-integral type.{{_id: "
                                  f"{fmt_value(ctx.doc.get('_id'))}}} has the field {field} of non-integer type "
                                  f"{type_name(cur)}")
        else:
            cur_v = int(cur)
        result = cur_v
        wide = isinstance(cur, Int64)
        for bop, val in arg.items():
            if bson_type(val) not in (16, 18):
                raise CommandError(2, f"The $bit modifier field must be an Integer(32/64 bit); a '{type_name(val)}' "
                                      f"is not supported here: {{{bop}: {fmt_value(val)}}}")
            wide = wide or isinstance(val, Int64)
            if bop == "and":
                result &= int(val)
            elif bop == "or":
                result |= int(val)
            elif bop == "xor":
                result ^= int(val)
            else:
                raise CommandError(2, f"The $bit modifier only supports 'and', 'or', and 'xor', not '{bop}' which is "
                                      f"an unknown operator: {{{bop}: {fmt_value(val)}}}")
        new = Int64(result) if wide else result
        if cur is not MISSING and exact_equal(new, cur):
            return False
        return _set_value(ctx, comps, new, op)
    if op == "$push":
        return _push(ctx, comps, cur, arg)
    if op == "$addToSet":
        return _add_to_set(ctx, comps, cur, arg)
    if op == "$pop":
        n = to_int(arg) if is_number(arg) else None
        if n not in (1, -1):
            raise CommandError(9, f"$pop expects 1 or -1, found: {fmt_value(arg)}")
        if cur is MISSING:
            return False
        if not isinstance(cur, list):
            raise CommandError(14, f"Path '{_path_str(comps)}' contains an element of non-array type "
                                   f"'{type_name(cur)}'")
        if not cur:
            return False
        new = cur[:-1] if n == 1 else cur[1:]
        return _set_value(ctx, comps, new, op)
    if op in ("$pull", "$pullAll"):
        if op == "$pullAll" and not isinstance(arg, list):
            raise CommandError(2, f"$pullAll requires an array argument but was given a {type_name(arg)}")
        if cur is MISSING:
            return False
        if not isinstance(cur, list):
            raise CommandError(2, "Cannot apply $pull to a non-array value")
        if op == "$pullAll":
            new = [e for e in cur if not any(values_equal(e, x) for x in arg)]
        else:
            pred = _pull_predicate(arg)
            new = [e for e in cur if not pred(e)]
        if len(new) == len(cur):
            return False
        return _set_value(ctx, comps, new, op)
    raise CommandError(9, f"Unknown modifier: {op}. Expected a valid update modifier or pipeline-style update "
                          "specified as an array")


def _pull_predicate(arg):
    if isinstance(arg, dict) and arg:
        first = next(iter(arg))
        if first.startswith("$") and first not in ("$and", "$or", "$nor"):
            m = compile_filter({"__v": arg})
            return lambda e: m({"__v": e})
        m = compile_filter(arg)
        return lambda e: isinstance(e, dict) and m(e)
    return lambda e: values_equal(e, arg)


def _push(ctx, comps, cur, arg):
    modifiers = isinstance(arg, dict) and "$each" in arg
    if modifiers:
        each = arg["$each"]
        if not isinstance(each, list):
            raise CommandError(2, f"The argument to $each in $push must be an array but it was of type: "
                                  f"{type_name(each)}")
        for k in arg:
            if k not in ("$each", "$slice", "$sort", "$position"):
                raise CommandError(2, f"Unrecognized clause in $push: {k}")
        slice_ = arg.get("$slice", MISSING)
        sort = arg.get("$sort", MISSING)
        position = arg.get("$position", MISSING)
        if slice_ is not MISSING and to_int(slice_) is None:
            raise CommandError(2, f"The value for $slice must be an integer value but was given type: "
                                  f"{type_name(slice_)}")
        if position is not MISSING and to_int(position) is None:
            raise CommandError(2, f"The value for $position must be an integer value, not of type: "
                                  f"{type_name(position)}")
    else:
        each, slice_, sort, position = [arg], MISSING, MISSING, MISSING
    each = [copy_value(e) for e in each]
    if cur is not MISSING and not isinstance(cur, list):
        raise CommandError(2, f"The field '{_path_str(comps)}' must be an array but is of type {type_name(cur)} in "
                              f"document {{_id: {fmt_value(ctx.doc.get('_id'))}}}")
    base = list(cur) if cur is not MISSING else []
    pos = to_int(position) if position is not MISSING else None
    if pos is None or pos >= len(base):
        new = base + each
        appended_only = True
    else:
        if pos < 0:
            pos = max(0, len(base) + pos)
        new = base[:pos] + each + base[pos:]
        appended_only = False
    if sort is not MISSING:
        new = _push_sort(new, sort)
        appended_only = False
    if slice_ is not MISSING:
        n = to_int(slice_)
        new = new[:n] if n >= 0 else new[len(new) + n:] if -n < len(new) else new
        appended_only = False
    if cur is MISSING:
        return _set_value(ctx, comps, new, "$push")
    if exact_equal(new, cur):
        return False
    if appended_only and base:
        return _append(ctx, comps, cur, new[len(base):])
    return _set_value(ctx, comps, new, "$push")


def _append(ctx, comps, arr, items):
    start = len(arr)
    arr.extend(items)
    for i in range(start, len(arr)):
        ctx.log.log("i", comps + [(str(i), True)])
    return True


def _push_sort(values, sort):
    from devstack.mongo.query import sort_key_func

    if isinstance(sort, dict):
        keyf = sort_key_func(sort)
        return sorted(values, key=lambda v: keyf(v) if isinstance(v, dict) else keyf({}))
    d = to_int(sort)
    if d not in (1, -1):
        raise CommandError(2, "The $sort element value must be either 1 or -1")
    return sorted(values, key=sort_key, reverse=(d == -1))


def _add_to_set(ctx, comps, cur, arg):
    if isinstance(arg, dict) and "$each" in arg:
        each = arg["$each"]
        if not isinstance(each, list):
            raise CommandError(2, f"The argument to $each in $addToSet must be an array but it was of type "
                                  f"{type_name(each)}")
    else:
        each = [arg]
    if cur is not MISSING and not isinstance(cur, list):
        raise CommandError(2, f"Cannot apply $addToSet to non-array field. Field named '{comps[-1][0]}' has non-array "
                              f"type {type_name(cur)}")
    base = cur if cur is not MISSING else []
    to_add = []
    for e in each:
        if not any(values_equal(e, x) and exact_equal(e, x) for x in base) and \
                not any(values_equal(e, x) and exact_equal(e, x) for x in to_add):
            to_add.append(copy_value(e))
    if cur is MISSING:
        return _set_value(ctx, comps, to_add, "$addToSet")
    if not to_add:
        return False
    return _append(ctx, comps, cur, to_add)


def copy_value(v):
    if isinstance(v, dict):
        return {k: copy_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [copy_value(x) for x in v]
    return v


def parse_operators(update: dict) -> list:
    """Validate an operator update; return [(op, path_parts, arg)] in application order."""
    ops = []
    for op, spec in update.items():
        if op not in OPERATORS:
            if not op.startswith("$"):
                raise CommandError(9, f"Unknown modifier: {op}. Expected a valid update modifier or pipeline-style "
                                      "update specified as an array")
            raise CommandError(9, f"Unknown modifier: {op}. Expected a valid update modifier or pipeline-style "
                                  "update specified as an array")
        if not isinstance(spec, dict):
            raise CommandError(9, f"Modifiers operate on fields but we found type {type_name(spec)} instead. For "
                                  f"example: {{$mod: {{<field>: ...}}}} not {{{op}: {fmt_value(spec)}}}")
        for path, arg in spec.items():
            parts = _check_path(path)
            ops.append((op, parts, arg))
            if op == "$rename":
                if not isinstance(arg, str):
                    raise CommandError(2, f"The 'to' field for $rename must be a string: {path}: {fmt_value(arg)}")
                if arg == path:
                    raise CommandError(2, f"The source and target field for $rename must differ: {path}: \"{arg}\"")
                to_parts = _check_path(arg)
                for p in parts + to_parts:
                    if p == "$" or p.startswith("$["):
                        raise CommandError(2, "The source field for $rename may not be dynamic: " + path)
                ops.append(("$rename->", to_parts, path))
    # conflicts: equal paths, or one a prefix of the other
    seen = sorted(ops, key=lambda o: _PathKey(o[1]))
    for a, b in zip(seen, seen[1:], strict=False):
        pa, pb = a[1], b[1]
        if pb[: len(pa)] == pa:
            raise CommandError(40, f"Updating the path '{'.'.join(pb)}' would create a conflict at '{'.'.join(pa)}'")
    return seen


def apply_operators(doc: dict, update: dict, *, query=None, array_filters=None, upsert_insert=False):
    """Apply an operator update to a copy of `doc`. Returns (new_doc, diff) with diff None for a no-op."""
    ops = parse_operators(update)
    new = copy_doc(doc)
    ctx = _Ctx(new, query, array_filters, upsert_insert)
    for op, parts, arg in ops:
        if op == "$rename->":
            continue
        if op == "$rename":
            _rename(ctx, parts, arg)
            continue
        concretes: list = []
        _expand(ctx, new, parts, 0, [], concretes, ".".join(parts))
        for comps in concretes:
            _apply_one(ctx, op, comps, arg)
    unused = set(ctx.filters) - ctx.used_filters
    if unused:
        ident = sorted(unused)[0]
        raise CommandError(9, f"The array filter for identifier '{ident}' was not used in the update "
                              f"{fmt_value(update)}")
    if "_id" in doc and new.get("_id", MISSING) is not doc["_id"] and (
            not values_equal(new.get("_id", MISSING), doc["_id"]) or
            (not exact_equal(new.get("_id"), doc["_id"]) and not upsert_insert)):
        raise CommandError(66, "Performing an update on the path '_id' would modify the immutable field '_id'")
    if not ctx.log:
        return new, None
    return new, ctx.log.build(new)


def _rename(ctx: _Ctx, src_parts, dest_path):
    src = [(p, False) for p in src_parts]
    cur = ctx.doc
    for i, (name, _) in enumerate(src):
        if isinstance(cur, list):
            raise CommandError(28, f"The source field cannot be an array element, '{'.'.join(src_parts)}' in doc "
                                   f"with {src[i - 1][0]} set to {fmt_value(cur)}")
        if not isinstance(cur, dict) or name not in cur:
            return False
        cur = cur[name]
    value = cur
    dest = [(p, False) for p in dest_path.split(".")]
    dcur = ctx.doc
    for name, _ in dest[:-1]:
        if isinstance(dcur, dict) and name in dcur:
            dcur = dcur[name]
            if isinstance(dcur, list):
                raise CommandError(28, f"The destination field cannot be an array element, '{dest_path}' in doc "
                                       f"with {name} set to {fmt_value(dcur)}")
        else:
            break
    _unset(ctx, src)
    _set_value(ctx, dest, value, "$rename")
    return True


def apply_replacement(doc: dict, replacement: dict) -> dict:
    check_replacement(replacement)
    new = {"_id": doc["_id"]} if "_id" in doc else {}
    if "_id" in replacement:
        if "_id" in doc and not (values_equal(replacement["_id"], doc["_id"]) and
                                 exact_equal(replacement["_id"], doc["_id"])):
            raise CommandError(66, "After applying the update, the (immutable) field '_id' was found to have been "
                                   f"altered to _id: {fmt_value(replacement['_id'])}")
        new["_id"] = replacement["_id"]
    for k, v in replacement.items():
        if k != "_id":
            new[k] = copy_value(v)
    return new


def check_replacement(replacement: dict):
    """MongoDB 5.0+ stores `$`-prefixed and dotted field names; only `_id` sub-fields may not start with `$`."""
    v = replacement.get("_id")
    if isinstance(v, dict):
        for k in v:
            if k.startswith("$"):
                raise CommandError(52, f"_id fields may not contain '$'-prefixed fields: {k} is not valid for "
                                       "storage.")


# ---- upserts --------------------------------------------------------------------------------------------

def upsert_seed(query) -> dict:
    """The document an upsert starts from: the query's equality conditions."""
    seed: dict = {}
    if not isinstance(query, dict):
        return seed

    def visit(q):
        for k, v in q.items():
            if k == "$and" and isinstance(v, list):
                for sub in v:
                    if isinstance(sub, dict):
                        visit(sub)
                continue
            if k.startswith("$"):
                continue
            if isinstance(v, dict) and v and next(iter(v)).startswith("$"):
                if "$eq" in v:
                    v = v["$eq"]
                else:
                    continue
            _seed_set(seed, k.split("."), copy_value(v))
    visit(query)
    return seed


def _seed_set(doc, parts, value):
    cur = doc
    for p in parts[:-1]:
        nxt = cur.get(p)
        if not isinstance(nxt, dict):
            if nxt is not None:
                return
            nxt = {}
            cur[p] = nxt
        cur = nxt
    cur[parts[-1]] = value


def ensure_id_first(doc: dict) -> dict:
    if "_id" not in doc:
        return {"_id": ObjectId(), **doc}
    if next(iter(doc)) != "_id":
        return {"_id": doc["_id"], **{k: v for k, v in doc.items() if k != "_id"}}
    return doc


def now() -> datetime.datetime:
    return now_ms_datetime()
