"""Applying change events to a document, in plain Python on JSON text. No Spark, no BSON.

Documents travel as Extended JSON text (strict for the Debezium and legacy formats, relaxed for the
flattened one). Updates never need the BSON types themselves: an update description sets and unsets
*paths*, and its values are written in the same dialect as the document, so working on the parsed
JSON structure (``{"$numberLong": "5"}`` is just a small object here) keeps every type intact and the
result in the dialect of its input. That also keeps the Spark executors free of any dependency but the
standard library.

An update is applied the way MongoDB computes a post-image from an update description, by the code the connector
also applies to BSON (`connectors.mongodb.update_paths`, standard library only): truncate arrays, unset removed
paths, set updated paths (dot notation; numeric segments index arrays).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from connectors.mongodb.update_paths import apply_update_description

SEPARATORS = (",", ": ")  # Debezium's (the Java driver's) compact separators


def loads(text: str | None) -> Any:
    return json.loads(text) if text is not None else None


def dumps(document: Any) -> str:
    return json.dumps(document, separators=SEPARATORS, ensure_ascii=False)


def legacy_patch_parts(patch: Mapping[str, Any]) -> tuple[dict[str, Any], list[str], list[tuple[str, int]]]:
    """A Debezium 1.x ``patch`` made of operators as (updated fields, removed fields, truncated arrays)."""
    updated = dict(patch.get("$set") or {})
    removed = list((patch.get("$unset") or {}).keys())
    truncated = []
    for path, spec in (patch.get("$push") or {}).items():
        if isinstance(spec, Mapping) and "$slice" in spec and not spec.get("$each"):
            truncated.append((path, int(spec["$slice"])))
    return updated, removed, truncated


def is_operator_patch(patch: Mapping[str, Any]) -> bool:
    return bool(patch) and all(str(name).startswith("$") for name in patch)


def fold(
    base: str | None,
    patches: Iterable[Any],
    *,
    id_hint: str | None = None,
) -> tuple[str, bool]:
    """Apply ``patches`` (in order) to the document ``base`` (JSON text, or None when unknown).

    Each patch (a mapping, or an object with attributes) has ``updated_fields`` (JSON text), ``removed_fields`` (list),
    ``truncated_arrays`` (list of (field, size)) and ``legacy_patch`` (JSON text of a 1.x operator
    patch); ``filter`` (the legacy document key) seeds ``_id`` when there is no base.
    Returns the document as JSON text and whether it is complete (False: built from updates alone,
    the document's earlier state was not among the events read).
    """
    complete = base is not None
    document: dict[str, Any] = loads(base) if base is not None else {}
    for patch in patches:
        get = patch.get if isinstance(patch, Mapping) else lambda name, p=patch: getattr(p, name, None)
        if not document and not complete:
            document = _initial_document(get("filter"), id_hint)
        if get("legacy_patch") is not None:
            updated, removed, truncated = legacy_patch_parts(loads(get("legacy_patch")))
        else:
            updated = loads(get("updated_fields")) or {}
            removed = list(get("removed_fields") or ())
            truncated = [_pair(item) for item in get("truncated_arrays") or ()]
        document = apply_update_description(document, updated, removed, truncated, in_place=True)
    return dumps(document), complete


def _initial_document(filter_json: str | None, id_hint: str | None) -> dict[str, Any]:
    if filter_json:
        key = loads(filter_json)
        if isinstance(key, dict) and "_id" in key:
            return {"_id": key["_id"]}
    if id_hint is not None:
        try:
            return {"_id": json.loads(id_hint)}
        except ValueError:
            return {"_id": id_hint}
    return {}


def _pair(item: Any) -> tuple[str, int]:
    if isinstance(item, Mapping):
        return item["field"], int(item["size"])
    if hasattr(item, "field") and hasattr(item, "size"):
        return item.field, int(item.size)
    field, size = item
    return field, int(size)
