"""Debezium's records beside ours, byte for byte, after the stated masks.

A record's JSON is parsed into a tree that keeps each scalar's and each name's own text, so writing the tree back
gives the same bytes (JsonConverter writes no white space) and a mask can replace one value's text alone. Records of
a topic are paired by key and occurrence (snapshots may read rows in another order); a difference is filed under
each path where they differ, with one example.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bench.compat.dump import Record

_TOKEN = re.compile(rb'\s*(?:("(?:[^"\\]|\\.)*")|(-?[0-9][0-9.eE+-]*|true|false|null)|([{}\[\]:,]))', re.S)


class Scalar:
    __slots__ = ("text",)

    def __init__(self, text: bytes):
        self.text = text


class Obj(list):
    """[(name text, value)] in the record's order."""


class Arr(list):
    pass


def parse(data: bytes):
    tree, end = _value(data, 0)
    if data[end:].strip():
        raise ValueError("trailing bytes after the JSON value")
    return tree


def _next(data: bytes, pos: int) -> tuple[re.Match, int]:
    match = _TOKEN.match(data, pos)
    if match is None:
        raise ValueError(f"not JSON at byte {pos}")
    return match, match.end()


def _value(data: bytes, pos: int):
    match, pos = _next(data, pos)
    if match.group(1) is not None or match.group(2) is not None:
        return Scalar(match.group(1) or match.group(2)), pos
    if match.group(3) == b"{":
        obj = Obj()
        match, after = _next(data, pos)
        if match.group(3) == b"}":
            return obj, after
        while True:
            name, pos = _next(data, pos)
            colon, pos = _next(data, pos)
            if name.group(1) is None or colon.group(3) != b":":
                raise ValueError(f"bad object member at byte {pos}")
            value, pos = _value(data, pos)
            obj.append((name.group(1), value))
            match, pos = _next(data, pos)
            if match.group(3) == b"}":
                return obj, pos
            if match.group(3) != b",":
                raise ValueError(f"expected , or }} at byte {pos}")
    if match.group(3) == b"[":
        arr = Arr()
        match, after = _next(data, pos)
        if match.group(3) == b"]":
            return arr, after
        while True:
            value, pos = _value(data, pos)
            arr.append(value)
            match, pos = _next(data, pos)
            if match.group(3) == b"]":
                return arr, pos
            if match.group(3) != b",":
                raise ValueError(f"expected , or ] at byte {pos}")
    raise ValueError(f"unexpected {match.group(0)!r} at byte {pos}")


def write(tree) -> bytes:
    if isinstance(tree, Scalar):
        return tree.text
    if isinstance(tree, Obj):
        return b"{" + b",".join(name + b":" + write(value) for name, value in tree) + b"}"
    return b"[" + b",".join(write(value) for value in tree) + b"]"


def member(tree, name: str):
    """The value of `name` in an object (None when absent or not an object)."""
    if isinstance(tree, Obj):
        wanted = f'"{name}"'.encode()
        for key, value in tree:
            if key == wanted:
                return value
    return None


def set_member(tree, name: str, value: Scalar) -> bool:
    wanted = f'"{name}"'.encode()
    for index, (key, _) in enumerate(tree if isinstance(tree, Obj) else ()):
        if key == wanted:
            tree[index] = (key, value)
            return True
    return False


def text_of(value) -> str:
    return value.text.decode(errors="replace") if isinstance(value, Scalar) else ""


@dataclass(frozen=True)
class Mask:
    """A value that cannot agree between the two runs, replaced on both sides by its kind (null stays null)."""

    label: str  # what the output lists, e.g. "payload.source.ts_ms (snapshot events)"
    apply: Callable[[object], None]  # takes the record's payload object (the value without schemas)


def masked_scalar(value) -> Scalar:
    if not isinstance(value, Scalar) or value.text == b"null":
        return value
    return Scalar(b'"<masked>"')


def mask_members(payload, names: Sequence[str]) -> None:
    for name in names:
        value = member(payload, name)
        if value is not None:
            set_member(payload, name, masked_scalar(value))


def mask_snapshot_source(payload, names: Sequence[str]) -> None:
    """Masks these `source` members of a snapshot event (each connector takes its own snapshot)."""
    source = member(payload, "source")
    snapshot = member(source, "snapshot")
    if snapshot is not None and snapshot.text not in (b'"false"', b"null"):
        mask_members(source, names)


def payload_of(tree):
    """The envelope: the `payload` member with schemas on, the tree itself with schemas off."""
    payload = member(tree, "payload")
    if payload is not None and member(tree, "schema") is not None and len(tree) == 2:
        return payload
    return tree


@dataclass(frozen=True)
class Intentional:
    """A difference kept on purpose (docs/<source>.md says why): on `topic`, at the path `where` (as without
    schemas: `value.after.c`), for the records whose key payload is `key` (any record when None)."""

    topic: str
    where: str
    reason: str
    key: bytes | None = None

    def covers(self, topic: str, where: str, key: bytes | None) -> bool:
        return (topic.lstrip(".") == self.topic.lstrip(".")  # reports name topics after the prefix: ".db.table"
                and where.replace("value.payload.", "value.", 1) == self.where
                and (self.key is None or key == self.key))


@dataclass
class Category:
    count: int = 0
    example: tuple[str, bytes, bytes] | None = None  # (where, Debezium's bytes, ours)


@dataclass
class TopicReport:
    topic: str
    theirs: int = 0
    ours: int = 0
    identical: int = 0
    identical_unmasked: int = 0
    intentional_only: int = 0  # records whose every difference is an intentional one
    differing: dict[str, Category] = field(default_factory=dict)
    intentional: dict[str, tuple[Category, str]] = field(default_factory=dict)  # where -> (category, reason)
    only_theirs: list[bytes] = field(default_factory=list)
    only_ours: list[bytes] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.differing and not self.only_theirs and not self.only_ours


def differences(a, b, path: str) -> list[str]:
    """The paths where two trees differ: a scalar's text, "…: member order" (same names, another order; the members
    are then compared by name), "…: members" (names missing on one side), "…: length" (arrays). A schema's field
    is named by its `field` (`…fields[after].fields[c_int]`), and fields are compared by name."""
    if type(a) is not type(b):
        return [path]
    if isinstance(a, Scalar):
        return [] if a.text == b.text else [path]
    if isinstance(a, Obj):
        found = []
        names_a, names_b = [k for k, _ in a], [k for k, _ in b]
        if names_a != names_b:
            found.append(f"{path}: member order" if sorted(names_a) == sorted(names_b) else f"{path}: members")
        here = path
        values_b = dict(b)
        for name, value_a in a:
            if name in values_b:
                found.extend(differences(value_a, values_b[name], f"{here}.{name.decode().strip(chr(34))}"))
        return found
    fields_a, fields_b = _schema_fields(a), _schema_fields(b)
    if fields_a is not None and fields_b is not None:  # a struct schema's fields: compared by name
        found = []
        if list(fields_a) != list(fields_b):
            found.append(f"{path}: field order" if sorted(fields_a) == sorted(fields_b) else
                         f"{path}: fields {sorted(set(fields_a) ^ set(fields_b))}")
        for name, value_a in fields_a.items():
            if name in fields_b:
                found.extend(differences(value_a, fields_b[name], f"{path}[{name}]"))
        return found
    if len(a) != len(b):
        return [f"{path}: length"]
    found = []
    for value_a, value_b in zip(a, b, strict=True):
        found.extend(differences(value_a, value_b, f"{path}[]"))
    return list(dict.fromkeys(found))


def _schema_fields(array) -> dict | None:
    """{field name: field schema} when every element is a struct schema's field, else None."""
    named = {text_of(member(item, "field")).strip('"'): item for item in array if member(item, "field") is not None}
    return named if array and len(named) == len(array) else None


def _pair_key(record: Record, seen: Counter) -> tuple:
    """The key's payload (so a difference in the key's schema still pairs the records) and its occurrence."""
    try:
        key = None if record.key is None else write(payload_of(parse(record.key)))
    except ValueError:
        key = record.key
    seen[key] += 1
    return key, seen[key]


def _masked(value: bytes | None, masks: Sequence[Mask]):
    if value is None:
        return None
    tree = parse(value)
    payload = payload_of(tree)
    for mask in masks:
        mask.apply(payload)
    return tree


def _differences(theirs: Record, ours: Record, masks: Sequence[Mask], key_masks: Sequence[Mask]) -> list[str]:
    """Where the two records differ after the masks (nothing: the same)."""
    found = []
    for part, mine, other, part_masks in (("key", ours.key, theirs.key, key_masks),
                                          ("value", ours.value, theirs.value, masks)):
        if mine == other:
            continue
        if mine is None or other is None:
            found.append(f"{part}: tombstone on one side")
            continue
        try:
            if write(parse(mine)) != mine or write(parse(other)) != other:
                found.append(f"{part}: white space or layout")
                continue
            found.extend(differences(_masked(other, part_masks), _masked(mine, part_masks), part))
        except ValueError as error:
            found.append(f"{part}: not JSON ({error})")
    return found


def compare_topic(topic: str, theirs: Sequence[Record], ours: Sequence[Record], masks: Sequence[Mask],
                  key_masks: Sequence[Mask] = (), intentional: Sequence[Intentional] = ()) -> TopicReport:
    report = TopicReport(topic, theirs=len(theirs), ours=len(ours))
    seen_theirs: Counter = Counter()
    seen_ours: Counter = Counter()
    by_key = {_pair_key(record, seen_theirs): record for record in theirs}
    paired = set()
    for record in ours:
        pair = _pair_key(record, seen_ours)
        other = by_key.get(pair)
        if other is None:
            report.only_ours.append(record.value or b"")
            continue
        paired.add(pair)
        if other.key == record.key and other.value == record.value:
            report.identical += 1
            report.identical_unmasked += 1
            continue
        found = _differences(other, record, masks, key_masks)
        if not found:
            report.identical += 1
        reasons = {where: next((known.reason for known in intentional if known.covers(topic, where, pair[0])), None)
                   for where in found}
        if found and all(reasons.values()):
            report.intentional_only += 1
        for where in found:
            if reasons[where]:
                category = report.intentional.setdefault(where, (Category(), reasons[where]))[0]
            else:
                category = report.differing.setdefault(where, Category())
            category.count += 1
            if category.example is None:
                side = "key" if where.startswith("key") else "value"
                category.example = (where, getattr(other, side) or b"", getattr(record, side) or b"")
    report.only_theirs = [record.value or b"" for pair, record in by_key.items() if pair not in paired]
    return report
