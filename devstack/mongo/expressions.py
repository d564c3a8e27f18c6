"""Aggregation expressions: field paths, variables (`$$ROOT`, `let`), and the common operators natively;
anything else falls back to mongomock's expression engine."""

from __future__ import annotations

import datetime
import math
import random
import re
from decimal import Decimal

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from mongomock import OperationFailure as MockOperationFailure
from mongomock import aggregate as _mock

from devstack.mongo.bsonutil import (
    INT32_MAX,
    INT32_MIN,
    LET_VARS,
    MISSING,
    bson_type,
    compare,
    is_number,
    number_value,
    type_name,
    values_equal,
)
from devstack.mongo.errors import CommandError


def truthy_expr(value) -> bool:
    if value is None or value is MISSING or value is False:
        return False
    if is_number(value):
        return number_value(value) != 0
    return True


def _field_path(value, parts):
    for i, p in enumerate(parts):
        if isinstance(value, dict):
            value = value.get(p, MISSING)
        elif isinstance(value, list):
            rest = parts[i:]
            out = []
            for e in value:
                if isinstance(e, (dict, list)):
                    v = _field_path(e, rest)
                    if v is not MISSING:
                        out.append(v)
            return out
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value


class Evaluator:
    def __init__(self, root, variables: dict | None = None):
        self.vars = {"ROOT": root, "CURRENT": root}
        if variables:
            self.vars.update(variables)

    def __call__(self, expr):
        return self.ev(expr)

    def ev(self, expr):
        if isinstance(expr, str):
            if expr.startswith("$$"):
                name, _, rest = expr[2:].partition(".")
                if name == "REMOVE":
                    return MISSING
                if name == "NOW":
                    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
                if name not in self.vars:
                    raise CommandError(17276, f"Use of undefined variable: {name}", code_name_override="Location17276")
                value = self.vars[name]
                return _field_path(value, rest.split(".")) if rest else value
            if expr.startswith("$") and len(expr) > 1:
                return _field_path(self.vars["CURRENT"], expr[1:].split("."))
            return expr
        if isinstance(expr, list):
            return [self._nm(self.ev(e)) for e in expr]
        if isinstance(expr, dict):
            if len(expr) == 1:
                op = next(iter(expr))
                if op.startswith("$"):
                    return self.op(op, expr[op])
            out = {}
            for k, v in expr.items():
                if k.startswith("$"):
                    raise CommandError(15983, f"An object representing an expression must have exactly one field: "
                                              f"{expr}", code_name_override="Location15983")
                val = self.ev(v)
                if val is not MISSING:
                    out[k] = val
            return out
        return expr

    @staticmethod
    def _nm(v):
        return None if v is MISSING else v

    def args(self, arg, n=None):
        vals = [self.ev(a) for a in arg] if isinstance(arg, list) else [self.ev(arg)]
        if n is not None and len(vals) != n:
            raise CommandError(16020, f"Expression takes exactly {n} arguments. {len(vals)} were passed in.",
                               code_name_override="Location16020")
        return vals

    def op(self, op, arg):
        fn = _OPS.get(op)
        if fn is not None:
            return fn(self, arg)
        try:
            return _mock._parse_expression({op: arg}, self.vars["CURRENT"], ignore_missing_keys=True)
        except MockOperationFailure as exc:
            raise CommandError(2, str(exc)) from None
        except (NotImplementedError, KeyError, TypeError) as exc:
            raise CommandError(168, f"Unrecognized expression '{op}'",
                               code_name_override="InvalidPipelineOperator") from exc


def evaluate(expr, doc, variables: dict | None = None):
    if variables is None:
        variables = LET_VARS.get()
    return Evaluator(doc, variables).ev(expr)


def evaluate_let(let: dict | None) -> dict:
    if not let:
        return {}
    ev = Evaluator({})
    return {k: ev.ev(v) for k, v in let.items()}


# ---- operators ------------------------------------------------------------------------------------------

def _num_result(x):
    if isinstance(x, Decimal):
        return Decimal128(x)
    if isinstance(x, int) and not isinstance(x, bool) and not (INT32_MIN <= x <= INT32_MAX):
        return Int64(x)
    return x


def _nums(vals, op):
    for v in vals:
        if v is not None and v is not MISSING and not is_number(v) and not isinstance(v, datetime.datetime):
            raise CommandError(16554, f"{op} only supports numeric or date types, not {type_name(v)}",
                               code_name_override="TypeMismatch")


def _arith(ev, arg, op):
    vals = ev.args(arg)
    if any(v is None or v is MISSING for v in vals):
        return None
    _nums(vals, op)
    if op == "$add":
        date = next((v for v in vals if isinstance(v, datetime.datetime)), None)
        total = sum(number_value(v) if not isinstance(v, Decimal128) else v.to_decimal()
                    for v in vals if not isinstance(v, datetime.datetime))
        if date is not None:
            return date + datetime.timedelta(milliseconds=float(total))
        return _num_result(total)
    if op == "$multiply":
        total = 1
        for v in vals:
            total = total * (v.to_decimal() if isinstance(v, Decimal128) else v)
        return _num_result(total)
    a, b = vals
    a = a.to_decimal() if isinstance(a, Decimal128) else a
    b = b.to_decimal() if isinstance(b, Decimal128) else b
    if op == "$subtract":
        if isinstance(a, datetime.datetime) and isinstance(b, datetime.datetime):
            return Int64(int((a - b).total_seconds() * 1000))
        if isinstance(a, datetime.datetime):
            return a - datetime.timedelta(milliseconds=float(b))
        return _num_result(a - b)
    if op == "$divide":
        if b == 0:
            raise CommandError(2, "can't $divide by zero")
        return float(a) / float(b) if not isinstance(a, Decimal) and not isinstance(b, Decimal) else \
            Decimal128(Decimal(a) / Decimal(b))
    if op == "$mod":
        if b == 0:
            raise CommandError(16610, "can't $mod by zero", code_name_override="Location16610")
        return _num_result(math.fmod(a, b) if isinstance(a, float) or isinstance(b, float) else
                           int(math.copysign(abs(a) % abs(b), a)))
    raise CommandError(2, f"bad arithmetic {op}")


def _cmp(ev, arg, op):
    a, b = ev.args(arg, 2)
    a = None if a is MISSING else a
    b = None if b is MISSING else b
    c = compare(a, b)
    return {"$eq": c == 0, "$ne": c != 0, "$gt": c > 0, "$gte": c >= 0, "$lt": c < 0, "$lte": c <= 0,
            "$cmp": c}[op]


def _cond(ev, arg):
    if isinstance(arg, dict):
        c, t, e = arg.get("if"), arg.get("then"), arg.get("else")
    else:
        c, t, e = arg
    return ev.ev(t) if truthy_expr(ev.ev(c)) else ev.ev(e)


def _if_null(ev, arg):
    for a in arg[:-1]:
        v = ev.ev(a)
        if v is not None and v is not MISSING:
            return v
    return ev.ev(arg[-1])


def _switch(ev, arg):
    for branch in arg.get("branches", []):
        if truthy_expr(ev.ev(branch["case"])):
            return ev.ev(branch["then"])
    if "default" in arg:
        return ev.ev(arg["default"])
    raise CommandError(40066, "$switch could not find a matching branch for an input, and no default was specified.",
                       code_name_override="Location40066")


def _concat(ev, arg):
    vals = ev.args(arg)
    if any(v is None or v is MISSING for v in vals):
        return None
    for v in vals:
        if not isinstance(v, str):
            raise CommandError(16702, f"$concat only supports strings, not {type_name(v)}",
                               code_name_override="Location16702")
    return "".join(vals)


def _size(ev, arg):
    (v,) = ev.args(arg, 1)
    if not isinstance(v, list):
        raise CommandError(17124, f"The argument to $size must be an array. Type of argument is: {type_name(v)}",
                           code_name_override="Location17124")
    return len(v)


def _elem_at(ev, arg):
    arr, idx = ev.args(arg, 2)
    if arr is None or arr is MISSING:
        return None
    idx = int(idx)
    if -len(arr) <= idx < len(arr):
        return arr[idx]
    return MISSING


def _in(ev, arg):
    v, arr = ev.args(arg, 2)
    if not isinstance(arr, list):
        raise CommandError(40081, f"$in requires an array as a second argument, found: {type_name(arr)}",
                           code_name_override="Location40081")
    return any(values_equal(v, x) for x in arr)


def _filter(ev, arg):
    inp = ev.ev(arg["input"])
    if inp is None or inp is MISSING:
        return None
    name = arg.get("as", "this")
    out = []
    for e in inp:
        sub = Evaluator(ev.vars["ROOT"], {**ev.vars, name: e})
        sub.vars["CURRENT"] = ev.vars["CURRENT"]
        if truthy_expr(sub.ev(arg["cond"])):
            out.append(e)
    limit = arg.get("limit")
    return out[: int(ev.ev(limit))] if limit is not None else out


def _map(ev, arg):
    inp = ev.ev(arg["input"])
    if inp is None or inp is MISSING:
        return None
    name = arg.get("as", "this")
    out = []
    for e in inp:
        sub = Evaluator(ev.vars["ROOT"], {**ev.vars, name: e})
        sub.vars["CURRENT"] = ev.vars["CURRENT"]
        out.append(Evaluator._nm(sub.ev(arg["in"])))
    return out


def _reduce(ev, arg):
    inp = ev.ev(arg["input"])
    if inp is None or inp is MISSING:
        return None
    value = ev.ev(arg["initialValue"])
    for e in inp:
        sub = Evaluator(ev.vars["ROOT"], {**ev.vars, "this": e, "value": value})
        sub.vars["CURRENT"] = ev.vars["CURRENT"]
        value = sub.ev(arg["in"])
    return value


def _let(ev, arg):
    sub = Evaluator(ev.vars["ROOT"], dict(ev.vars))
    for k, v in arg.get("vars", {}).items():
        sub.vars[k] = ev.ev(v)
    return sub.ev(arg["in"])


def _merge_objects(ev, arg):
    out = {}
    for v in ev.args(arg):
        if v is None or v is MISSING:
            continue
        if not isinstance(v, dict):
            raise CommandError(40400, f"$mergeObjects requires object inputs, but input {v!r} is of type "
                                      f"{type_name(v)}", code_name_override="Location40400")
        out.update(v)
    return out


def _get_field(ev, arg):
    if isinstance(arg, dict) and "field" in arg:
        field = ev.ev(arg["field"])
        inp = ev.ev(arg.get("input", "$$CURRENT"))
    else:
        field = ev.ev(arg)
        inp = ev.vars["CURRENT"]
    if not isinstance(field, str):
        raise CommandError(5654602, "$getField requires 'field' to evaluate to type String",
                           code_name_override="Location5654602")
    if not isinstance(inp, dict):
        return MISSING
    return inp.get(field, MISSING)


def _set_field(ev, arg, unset=False):
    field = ev.ev(arg["field"])
    inp = ev.ev(arg["input"])
    if not isinstance(field, str):
        raise CommandError(4161106, "$setField requires 'field' to evaluate to type String",
                           code_name_override="Location4161106")
    if inp is None or inp is MISSING:
        return None
    out = dict(inp)
    value = MISSING if unset else ev.ev(arg["value"])
    if value is MISSING:
        out.pop(field, None)
    else:
        out[field] = value
    return out


def _type(ev, arg):
    (v,) = ev.args(arg, 1)
    if v is MISSING:
        return "missing"
    return type_name(v)


def _to_string(v):
    if v is None or v is MISSING:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _convert(v, to):
    if v is None or v is MISSING:
        return None
    if to in ("string",):
        return _to_string(v)
    if to in ("int", "long"):
        n = int(float(v.to_decimal()) if isinstance(v, Decimal128) else float(v) if not isinstance(v, str) else
                int(v))
        return Int64(n) if to == "long" else n
    if to == "double":
        return float(v.to_decimal()) if isinstance(v, Decimal128) else float(v)
    if to == "decimal":
        return Decimal128(str(v))
    if to == "bool":
        return truthy_expr(v)
    if to == "objectId":
        return ObjectId(v)
    if to == "date":
        if isinstance(v, datetime.datetime):
            return v
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=int(v))
    raise CommandError(2, f"unsupported conversion to {to}")


def _regex_match(ev, arg):
    inp = ev.ev(arg["input"])
    regex = ev.ev(arg["regex"])
    opts = ev.ev(arg.get("options", "")) or ""
    if inp is None or inp is MISSING:
        return False
    flags = 0
    for ch in opts:
        flags |= {"i": re.I, "m": re.M, "s": re.S, "x": re.X}.get(ch, 0)
    pattern = regex.pattern if hasattr(regex, "pattern") else regex
    return re.search(pattern, inp, flags) is not None


def _and(ev, arg):
    return all(truthy_expr(ev.ev(a)) for a in (arg if isinstance(arg, list) else [arg]))


def _or(ev, arg):
    return any(truthy_expr(ev.ev(a)) for a in (arg if isinstance(arg, list) else [arg]))


def _not(ev, arg):
    (v,) = ev.args(arg, 1)
    return not truthy_expr(v)


def _str_fn(fn):
    def run(ev, arg):
        (v,) = ev.args(arg, 1)
        if v is None or v is MISSING:
            return ""
        return fn(v if isinstance(v, str) else _to_string(v))
    return run


def _substr(ev, arg):
    s, start, length = ev.args(arg, 3)
    if s is None or s is MISSING:
        return ""
    start, length = int(start), int(length)
    return s[start:] if length < 0 else s[start:start + length]


def _array_fn(ev, arg, fn):
    (v,) = ev.args(arg, 1)
    if v is None or v is MISSING:
        return None
    return fn(v)


_OPS = {
    "$literal": lambda ev, arg: arg,
    "$add": lambda ev, arg: _arith(ev, arg, "$add"),
    "$subtract": lambda ev, arg: _arith(ev, arg, "$subtract"),
    "$multiply": lambda ev, arg: _arith(ev, arg, "$multiply"),
    "$divide": lambda ev, arg: _arith(ev, arg, "$divide"),
    "$mod": lambda ev, arg: _arith(ev, arg, "$mod"),
    "$abs": lambda ev, arg: _array_fn(ev, arg, abs),
    "$eq": lambda ev, arg: _cmp(ev, arg, "$eq"),
    "$ne": lambda ev, arg: _cmp(ev, arg, "$ne"),
    "$gt": lambda ev, arg: _cmp(ev, arg, "$gt"),
    "$gte": lambda ev, arg: _cmp(ev, arg, "$gte"),
    "$lt": lambda ev, arg: _cmp(ev, arg, "$lt"),
    "$lte": lambda ev, arg: _cmp(ev, arg, "$lte"),
    "$cmp": lambda ev, arg: _cmp(ev, arg, "$cmp"),
    "$and": _and,
    "$or": _or,
    "$not": _not,
    "$cond": _cond,
    "$ifNull": _if_null,
    "$switch": _switch,
    "$concat": _concat,
    "$toLower": _str_fn(str.lower),
    "$toUpper": _str_fn(str.upper),
    "$trim": lambda ev, arg: (ev.ev(arg["input"]) or "").strip(),
    "$substr": _substr,
    "$substrCP": _substr,
    "$substrBytes": _substr,
    "$strLenCP": lambda ev, arg: len(ev.args(arg, 1)[0]),
    "$size": _size,
    "$arrayElemAt": _elem_at,
    "$first": lambda ev, arg: _array_fn(ev, arg, lambda a: a[0] if a else MISSING),
    "$last": lambda ev, arg: _array_fn(ev, arg, lambda a: a[-1] if a else MISSING),
    "$isArray": lambda ev, arg: isinstance(ev.args(arg, 1)[0], list),
    "$concatArrays": lambda ev, arg: (None if any(v is None or v is MISSING for v in ev.args(arg))
                                      else [x for v in ev.args(arg) for x in v]),
    "$reverseArray": lambda ev, arg: _array_fn(ev, arg, lambda a: list(reversed(a))),
    "$in": _in,
    "$filter": _filter,
    "$map": _map,
    "$reduce": _reduce,
    "$let": _let,
    "$mergeObjects": _merge_objects,
    "$getField": _get_field,
    "$setField": _set_field,
    "$unsetField": lambda ev, arg: _set_field(ev, arg, unset=True),
    "$type": _type,
    "$isNumber": lambda ev, arg: is_number(ev.args(arg, 1)[0]),
    "$toString": lambda ev, arg: _convert(ev.args(arg, 1)[0], "string"),
    "$toInt": lambda ev, arg: _convert(ev.args(arg, 1)[0], "int"),
    "$toLong": lambda ev, arg: _convert(ev.args(arg, 1)[0], "long"),
    "$toDouble": lambda ev, arg: _convert(ev.args(arg, 1)[0], "double"),
    "$toDecimal": lambda ev, arg: _convert(ev.args(arg, 1)[0], "decimal"),
    "$toBool": lambda ev, arg: _convert(ev.args(arg, 1)[0], "bool"),
    "$toObjectId": lambda ev, arg: _convert(ev.args(arg, 1)[0], "objectId"),
    "$toDate": lambda ev, arg: _convert(ev.args(arg, 1)[0], "date"),
    "$convert": lambda ev, arg: _convert(ev.ev(arg["input"]), ev.ev(arg["to"])),
    "$regexMatch": _regex_match,
    "$objectToArray": lambda ev, arg: _array_fn(ev, arg, lambda o: [{"k": k, "v": v} for k, v in o.items()]),
    "$arrayToObject": lambda ev, arg: _array_fn(
        ev, arg, lambda a: {(e["k"] if isinstance(e, dict) else e[0]): (e["v"] if isinstance(e, dict) else e[1])
                            for e in a}),
    "$rand": lambda ev, arg: random.random(),
    "$range": lambda ev, arg: list(range(*[int(x) for x in ev.args(arg)])),
}


def bson_kind(v) -> int:
    return bson_type(v)


def run_stages(docs: list, stages: list, database=None) -> list:
    """Run pipeline stages through mongomock (documents are copies the caller owns)."""
    try:
        return list(_mock.process_pipeline(docs, database, stages, None))
    except MockOperationFailure as exc:
        raise CommandError(getattr(exc, "code", None) or 2, str(exc)) from None
    except NotImplementedError as exc:
        raise CommandError(2, f"pipeline stage not supported by the emulator: {exc}") from None
