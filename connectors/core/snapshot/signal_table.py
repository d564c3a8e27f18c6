"""Debezium's signal table as the SQL sources use it (`signal.data.collection`, columns `id`, `type`, `data`): the
types and data of the watermark rows a window writes there, what a row inserted there is to the incremental
snapshot, the columns it needs, and the additional condition a snapshot request may give for a table."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from connectors.core.snapshot.chunks import Chunk
from connectors.core.snapshot.incremental import SIGNAL, WATERMARK_CLOSE, WATERMARK_OPEN, StreamEvent

WINDOW_OPEN = "snapshot-window-open"
WINDOW_CLOSE = "snapshot-window-close"
SIGNAL_COLUMNS = ("id", "type", "data")


def window_data(window_id: str, snapshot_id: str, chunk: Chunk) -> str:
    """The `data` of a window's watermark rows: the window they bound (what `signal_event` reads back)."""
    return json.dumps({"window": window_id, "snapshot": snapshot_id, "collection": chunk.namespace,
                       "chunk": chunk.index})


def windows_data_prefix(prefix: str) -> str:
    """The text the `data` of every watermark row of the windows whose ids start with `prefix` begins with."""
    return json.dumps({"window": prefix})[:-2]


def signal_event(row: Mapping[str, Any]) -> StreamEvent:
    """What a row inserted into the signal table (its `id`, `type` and `data` as text) is to the incremental
    snapshot: a window's low or high watermark, or a request."""
    signal_id, signal_type, data = row.get("id"), row.get("type"), row.get("data")
    if signal_type in (WINDOW_OPEN, WINDOW_CLOSE):
        try:
            window = json.loads(data).get("window") if isinstance(data, str) else None
        except (ValueError, AttributeError):
            window = None
        return StreamEvent(WATERMARK_CLOSE if signal_type == WINDOW_CLOSE else WATERMARK_OPEN, window)
    return StreamEvent(SIGNAL, signal_id, signal={"id": signal_id, "type": signal_type, "data": data})


def missing_columns_problem(name: str, columns: Collection[str]) -> str | None:
    """What the signal table `name` with these (lower-case) columns lacks (None: nothing)."""
    missing = [c for c in SIGNAL_COLUMNS if c not in columns]
    if missing:
        return f"signal.data.collection {name} lacks column(s) {', '.join(missing)} (it needs id, type and data)"
    return None


def parse_sql_condition(value: Any) -> str | None:
    """Debezium's additional condition: an SQL condition on the table's columns (None when empty)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ValueError(f"filter {value!r} is not an SQL condition (text such as \"status = 'A'\")")
    if ";" in value:
        raise ValueError(f"filter {value!r}: one SQL condition, without ';'")
    return value.strip()
