"""A PostgreSQL pipeline's offset record: Debezium's PostgreSQL offset (key `["<name>",{"server":"<topic.prefix>"}]`,
value `lsn`, `lsn_commit`, `lsn_proc`, `txId`, `ts_usec`, see position.py) plus the core's state (`snapshot`
progress, a reset's `startup`, `transaction`, `incremental_snapshot`) in the same JSON object.

`before(lsn)` is the position "everything before `lsn` is handled": where a snapshot's stream starts (the slot's
consistent point) and what an idle keepalive commits. Its `lsn_commit` is `lsn - 1` so that a transaction whose
commit record starts exactly at `lsn` is not covered (WAL records are 8-byte aligned: no commit starts at lsn - 1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from connectors.core.source import StoredOffset
from connectors.postgres.overlap import SnapshotOverlap
from connectors.postgres.position import OVERLAP_FIELD, OffsetError, Position, offset_key_json

CORE_FIELDS = ("snapshot", "startup", "transaction", "incremental_snapshot")


def before(lsn: int, previous: Position | None = None) -> Position:
    """The position of an idle stream at `lsn`; the last transaction's id and time stay in the offset, as in
    Debezium's (a heartbeat moves the LSN, not `txId`)."""
    if previous is None:
        return Position(lsn - 1, lsn, completed=True)
    return Position(lsn - 1, lsn, previous.tx_id, previous.ts_usec, completed=True)


def acknowledgeable(position: Position) -> int:
    """The flush LSN the slot may be told once `position` is committed: the end of the last whole transaction (a
    transaction split across batches is acknowledged only once its end is in Kafka)."""
    return position.lsn_proc if position.completed else position.lsn_commit - 1


@dataclass(frozen=True)
class PgOffsetRecord:
    key: bytes
    value: dict

    def to_value(self) -> bytes:
        return json.dumps(self.value, separators=(",", ":"), ensure_ascii=False).encode()


def offset_key(connector: str, topic_prefix: str) -> bytes:
    return offset_key_json(connector, topic_prefix).encode()


def offset_record(connector: str, topic_prefix: str, position: Position | None, *, snapshot: dict | None = None,
                  startup: dict | None = None, extra: dict | None = None,
                  overlap: SnapshotOverlap | None = None) -> PgOffsetRecord:
    value: dict[str, Any] = dict(position.offset()) if position is not None else {}
    if overlap is not None:
        value[OVERLAP_FIELD] = overlap.to_json()
    if snapshot is not None:
        value["snapshot"] = snapshot
    if startup is not None:
        value["startup"] = startup
    value.update(extra or {})
    return PgOffsetRecord(offset_key(connector, topic_prefix), value)


def decode_offset(value: bytes) -> StoredOffset:
    try:
        document = json.loads(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    position = None
    if "lsn" in document or "lsn_proc" in document:
        try:
            position = Position.from_offset(document)
        except OffsetError as error:
            raise ValueError(str(error)) from None
    return StoredOffset(position, *(document.get(name) for name in CORE_FIELDS))
