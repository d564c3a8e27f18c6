"""Applying an update description to a document the way MongoDB computes a post-image: truncate arrays, unset
removed paths, set updated paths (dot notation; numeric segments index arrays).

Plain Python on mappings and lists, with no BSON import: the connector applies it to decoded BSON and the Spark
jobs (`sparkjobs.docstate`) to parsed Extended JSON, where a value such as ``{"$numberLong": "5"}`` is only a
small object, so both keep every type intact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def apply_update_description(
    document: Mapping[str, Any],
    updated: Mapping[str, Any] | None = None,
    removed: Iterable[str] | None = None,
    truncated: Iterable[tuple[str, int]] | None = None,
    *,
    in_place: bool = False,
) -> dict[str, Any]:
    """The post-image of ``document`` (left unchanged unless ``in_place``) after an update description."""
    result = document if in_place else deep_copy(document)
    for path, size in truncated or ():
        array = _get(result, path.split("."))
        if isinstance(array, list):
            del array[int(size) :]
    for path in removed or ():
        _unset(result, path.split("."))
    for path, value in (updated or {}).items():
        _set(result, path.split("."), deep_copy(value))
    return result


def deep_copy(value: Any) -> Any:
    """A copy of nested mappings (as dicts) and lists; other values are shared."""
    if isinstance(value, Mapping):
        return {key: deep_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [deep_copy(item) for item in value]
    return value


def _child(node: Any, segment: str) -> Any:
    if isinstance(node, dict):
        return node.get(segment)
    if isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
        return node[int(segment)]
    return None


def _get(node: Any, segments: list[str]) -> Any:
    for segment in segments:
        node = _child(node, segment)
    return node


def _set(node: Any, segments: list[str], value: Any) -> None:
    for position, segment in enumerate(segments):
        last = position == len(segments) - 1
        if isinstance(node, list) and segment.isdigit():
            index = int(segment)
            node.extend([None] * (index + 1 - len(node)))
            if last:
                node[index] = value
                return
            if not isinstance(node[index], dict | list):
                node[index] = {}
            node = node[index]
        elif isinstance(node, dict):
            if last:
                node[segment] = value
                return
            if not isinstance(node.get(segment), dict | list):
                node[segment] = {}
            node = node[segment]
        else:
            return


def _unset(node: Any, segments: list[str]) -> None:
    parent = _get(node, segments[:-1])
    leaf = segments[-1]
    if isinstance(parent, dict):
        parent.pop(leaf, None)
    elif isinstance(parent, list) and leaf.isdigit() and int(leaf) < len(parent):
        parent[int(leaf)] = None  # $unset of an array element leaves null in place
