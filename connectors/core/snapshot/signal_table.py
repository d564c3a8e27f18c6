"""Debezium's signal table as the SQL sources use it (`signal.data.collection`, columns `id`, `type`, `data`): the
types of the watermark rows a window writes there, the columns it needs, and the additional condition a snapshot
request may give for a table."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

WINDOW_OPEN = "snapshot-window-open"
WINDOW_CLOSE = "snapshot-window-close"
SIGNAL_COLUMNS = ("id", "type", "data")


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
