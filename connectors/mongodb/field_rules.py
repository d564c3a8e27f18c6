"""Field rules: ``field.exclude.list``, ``field.renames``, ``field.mask.hash.*`` and ``field.mask.redact``.

A rule is written ``<database>.<collection>.<field>[.<nested field>…]``. The database and
collection parts may contain ``*`` (any characters) and match ignoring case, as in Debezium; a field
segment may be ``*`` to stand for any one field at that level. Rules reach into arrays of
documents (``orders.lines.sku`` applies to every element of ``lines``).

All rules name fields by their names in MongoDB. They apply in a fixed order so that no rule hides a
field from another: masks, then exclusions, then renames (deepest paths first).

Rules apply to full documents and to change descriptions alike: in ``updatedFields`` (dot-notation
paths such as ``lines.0.sku``, where numeric segments are array positions), ``removedFields`` and
``truncatedArrays``. A removed or truncated path that lies at or under an excluded field is dropped,
one under a renamed field is renamed; masks change values, never paths. Message keys are left alone:
the key identifies the document for partitioning and compaction.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bson.binary import Binary

from connectors.core.hashing import salted_hex
from connectors.mongodb import extjson
from connectors.mongodb.config import ConnectorConfig, HashMask
from connectors.mongodb.records import Namespace, TruncatedArray, UpdateDescription

WILDCARD = "*"


class FieldRenameConflict(ValueError):
    """A rename whose new name already exists in the document; the event cannot be written faithfully."""


@dataclass(frozen=True)
class FieldRule:
    namespace: re.Pattern[str]
    path: tuple[str, ...]
    kind: str  # "mask", "exclude" or "rename"
    new_name: str | None = None
    mask: Callable[[Any], Any] | None = None

    def applies_to(self, namespace: Namespace) -> bool:
        return self.namespace.fullmatch(namespace.full_name) is not None


def parse_rule_path(spec: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    db, collection, *path = spec.split(".")
    namespace = _wildcard_regex(db) + r"\." + _wildcard_regex(collection)
    return re.compile(namespace, re.IGNORECASE), tuple(path)


def _wildcard_regex(part: str) -> str:
    return ".*".join(re.escape(piece) for piece in part.split(WILDCARD))


def hash_masker(algorithm: str, salt: str) -> Callable[[Any], Any]:
    """Debezium's salted hash: hex(digest(salt + value)); strings hash their UTF-8 text."""
    salt_bytes = salt.encode()

    def mask(value: Any) -> Any:
        if value is None:
            return None
        return salted_hex(algorithm, salt_bytes, _bytes_of(value))

    return mask


def _bytes_of(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, Binary | bytes):
        return bytes(value)
    return extjson.key_json(value).encode()


def redact_masker(replacement: str) -> Callable[[Any], Any]:
    return lambda value: None if value is None else replacement


def rules_from_config(config: ConnectorConfig) -> list[FieldRule]:
    rules: list[FieldRule] = []
    for mask in config.field_mask_hash:
        rules.extend(_mask_rules(mask))
    redact = redact_masker(config.field_mask_redact_replacement)
    for spec in config.field_mask_redact:
        namespace, path = parse_rule_path(spec)
        rules.append(FieldRule(namespace, path, "mask", mask=redact))
    for spec in config.field_exclude_list:
        namespace, path = parse_rule_path(spec)
        rules.append(FieldRule(namespace, path, "exclude"))
    for spec in config.field_renames:
        old, _, new = spec.partition(":")
        namespace, path = parse_rule_path(old)
        rules.append(FieldRule(namespace, path, "rename", new_name=new))
    return rules


def _mask_rules(mask: HashMask) -> list[FieldRule]:
    masker = hash_masker(mask.hashlib_name, mask.salt.reveal())
    rules = []
    for spec in mask.fields:
        namespace, path = parse_rule_path(spec)
        rules.append(FieldRule(namespace, path, "mask", mask=masker))
    return rules


_KIND_ORDER = {"mask": 0, "exclude": 1, "rename": 2}


class FieldRules:
    """All rules of a connector; hands out the transform for each collection (cached)."""

    def __init__(self, rules: Sequence[FieldRule]) -> None:
        self.rules = tuple(rules)
        self._by_namespace: dict[Namespace, DocumentTransform] = {}

    @classmethod
    def from_config(cls, config: ConnectorConfig) -> FieldRules:
        return cls(rules_from_config(config))

    def for_namespace(self, namespace: Namespace) -> DocumentTransform:
        transform = self._by_namespace.get(namespace)
        if transform is None:
            applicable = [rule for rule in self.rules if rule.applies_to(namespace)]
            applicable.sort(key=lambda rule: (_KIND_ORDER[rule.kind], -len(rule.path) if rule.kind == "rename" else 0))
            transform = DocumentTransform(tuple(applicable))
            self._by_namespace[namespace] = transform
        return transform


class DocumentTransform:
    """The rules of one collection. Inputs are never modified: results are fresh copies."""

    def __init__(self, rules: tuple[FieldRule, ...]) -> None:
        self.rules = rules

    @property
    def is_identity(self) -> bool:
        return not self.rules

    def document(self, document: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        if document is None or not self.rules:
            return document
        result = _copy(document)
        for rule in self.rules:
            _apply_at(result, rule, 0)
        return result

    def update_description(self, description: UpdateDescription | None) -> UpdateDescription | None:
        if description is None or not self.rules:
            return description
        updated = dict(description.updated_fields)
        removed = list(description.removed_fields)
        truncated = list(description.truncated_arrays)
        for rule in self.rules:
            updated = _rule_on_updated_fields(rule, updated)
            removed = [path for path in (_rule_on_path(rule, path) for path in removed) if path is not None]
            truncated = [
                TruncatedArray(path, item.new_size)
                for item in truncated
                if (path := _rule_on_path(rule, item.field)) is not None
            ]
        return UpdateDescription(updated, tuple(removed), tuple(truncated))


# --- documents --------------------------------------------------------------------------------


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _apply_at(node: Any, rule: FieldRule, depth: int) -> None:
    """Apply ``rule`` below ``node``, whose position corresponds to ``rule.path[depth]``."""
    if isinstance(node, list):
        for item in node:
            _apply_at(item, rule, depth)
        return
    if not isinstance(node, dict):
        return
    segment = rule.path[depth]
    keys = list(node) if segment == WILDCARD else [segment] if segment in node else []
    last = depth == len(rule.path) - 1
    for key in keys:
        if last:
            _act(node, key, rule)
        else:
            _apply_at(node[key], rule, depth + 1)


def _act(node: dict[str, Any], key: str, rule: FieldRule) -> None:
    if rule.kind == "mask":
        node[key] = rule.mask(node[key])
    elif rule.kind == "exclude":
        del node[key]
    else:
        _rename_in_place(node, key, rule.new_name)


def _rename_in_place(node: dict[str, Any], key: str, new_name: str) -> None:
    if new_name == key:
        return
    if new_name in node:
        raise FieldRenameConflict(f"cannot rename {key!r} to {new_name!r}: the document already has {new_name!r}")
    items = list(node.items())
    node.clear()
    for name, value in items:
        node[new_name if name == key else name] = value


# --- change descriptions (dot-notation paths) -------------------------------------------------


def _align(rule: FieldRule, segments: list[str]) -> tuple[str, int | None, list[int]]:
    """How a dotted path relates to the rule path.

    Numeric segments are array positions and are skipped, as in Debezium. Returns the relation
    ("at_or_under", "above" or "unrelated"), the index in ``segments`` of the segment that matches the
    rule's last segment (for renames), and the indexes of the named (non-numeric) segments.
    """
    named = [index for index, segment in enumerate(segments) if not segment.isdigit()]
    compared = min(len(named), len(rule.path))
    for position in range(compared):
        expected, actual = rule.path[position], segments[named[position]]
        if expected != WILDCARD and expected != actual:
            return "unrelated", None, named
    if len(named) >= len(rule.path):
        return "at_or_under", named[len(rule.path) - 1], named
    return "above", None, named


def _rule_on_path(rule: FieldRule, path: str) -> str | None:
    """A removed or truncated path after the rule: renamed, unchanged, or None when excluded."""
    segments = path.split(".")
    relation, rename_index, _ = _align(rule, segments)
    if relation != "at_or_under" or rule.kind == "mask":
        return path
    if rule.kind == "exclude":
        return None
    segments[rename_index] = rule.new_name
    return ".".join(segments)


def _rule_on_updated_fields(rule: FieldRule, updated: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for path, value in updated.items():
        segments = path.split(".")
        relation, rename_index, named = _align(rule, segments)
        new_path, new_value = path, value
        if relation == "at_or_under":
            if rule.kind == "exclude":
                continue
            if rule.kind == "mask":
                new_value = rule.mask(value)
            else:
                segments[rename_index] = rule.new_name
                new_path = ".".join(segments)
        elif relation == "above":
            # The value holds the field the rule names: apply the rest of the path inside it.
            new_value = _copy(value)
            holder = {"_": new_value}
            inner = FieldRule(rule.namespace, ("_", *rule.path[len(named) :]), rule.kind, rule.new_name, rule.mask)
            _apply_at(holder, inner, 0)
            new_value = holder["_"]
        if new_path in result or (new_path != path and new_path in updated):
            raise FieldRenameConflict(f"cannot rename {path!r} to {new_path!r}: the update already sets {new_path!r}")
        result[new_path] = new_value
    return result
