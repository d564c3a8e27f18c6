"""MongoDB's `Position`: a change stream resume token with its cluster time, and its offset record.

The offset record keeps the layout every MongoDB pipeline has written (docs/offsets.md; the bytes are
connectors.kafka.offset_record's): key `["<connector>",{"rs":"<replica set>"}]`, value relaxed extended JSON
with `resume_token`, `cluster_time`, `snapshot`, `startup` and the core's other state. A sharded cluster read through
mongos keys its one record as Debezium 3.x does: `["<connector>",{"server_id":"<topic.prefix>"}]`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bson import Timestamp

from connectors.core.source import StoredOffset
from connectors.kafka.offset_record import OffsetDecodeError, OffsetRecord, encode_key, timestamp_from_json
from connectors.mongodb.rawjson import RawChangeEvent
from connectors.mongodb.stream import OversizedSkipped, StartPosition


class MongoPosition:
    """A change stream position; immutable by convention (built once per change: a plain slotted class is the
    cheapest). Equal positions are the same place in the stream: only the token counts."""

    __slots__ = ("cluster_time", "invalidated", "start_at", "token")

    def __init__(self, token: dict | None, cluster_time: Timestamp | None = None, invalidated: bool = False,
                 start_at: Timestamp | None = None):
        self.token = token
        self.cluster_time = cluster_time
        self.invalidated = invalidated  # the stream ended: start after the token
        self.start_at = start_at  # no token yet: start at this cluster time

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MongoPosition) and self.token == other.token

    __hash__ = None  # tokens are documents

    def __repr__(self) -> str:
        return (f"MongoPosition({self.token!r}, {self.cluster_time!r}, invalidated={self.invalidated}, "
                f"start_at={self.start_at!r})")

    def with_token(self, token: dict) -> MongoPosition:
        return MongoPosition(token, self.cluster_time, self.invalidated, self.start_at)

    def start(self) -> StartPosition:
        if self.token is not None:
            if self.invalidated:
                return StartPosition(start_after=self.token)
            return StartPosition(resume_after=self.token)
        if self.start_at is not None:
            return StartPosition(start_at_operation_time=self.start_at)
        return StartPosition()


def position_after(item: Any, previous: MongoPosition | None) -> MongoPosition | None:
    """The position once `item` (a change event, an Idle marker's token, a skipped event) is committed."""
    kind = type(item)
    if kind is RawChangeEvent or kind is dict:
        if kind is RawChangeEvent:  # read from its bytes, without decoding it
            token, time, operation = item.resume_token, item.cluster_time, item.operation_type
        else:
            token, time, operation = item["_id"], item.get("clusterTime"), item.get("operationType")
        if time is None and previous is not None:
            time = previous.cluster_time
        return MongoPosition(token, time, operation == "invalidate")
    if isinstance(item, OversizedSkipped):
        return previous.with_token(item.resume_token) if previous else MongoPosition(item.resume_token)
    token = getattr(item, "position", None)  # core.stream.Idle: the post-batch resume token
    if token is None:
        return previous
    return previous.with_token(token) if previous else MongoPosition(token)


def position_after_changes(changes: list, previous: MongoPosition | None) -> MongoPosition | None:
    """`position_after` folded over `changes`: the last change's position when it has its cluster time (it then
    owes nothing to the changes before it), else the fold."""
    last = changes[-1]
    kind = type(last)
    timed = last.cluster_time if kind is RawChangeEvent else last.get("clusterTime") if kind is dict else None
    if timed is not None:
        return position_after(last, None)
    for change in changes:
        previous = position_after(change, previous)
    return previous


def offset_record(connector: str, replica_set: str, position: MongoPosition | None, *, snapshot: dict | None = None,
                  startup: dict | None = None, extra: dict | None = None) -> OffsetRecord:
    fields: dict[str, Any] = {}
    if position is not None and position.invalidated:
        fields["invalidated"] = True
    fields.update(extra or {})
    cluster_time = position.cluster_time if position is not None else None
    if position is None and snapshot is not None:
        cluster_time = timestamp_from_json(snapshot.get("cluster_time"))  # the snapshot's start, as it was
    return OffsetRecord(connector, replica_set, resume_token=position.token if position is not None else None,
                        cluster_time=cluster_time, snapshot=snapshot, startup=startup, extra=fields)


def sharded_offset_key(connector: str, server_id: str) -> bytes:
    return json.dumps([connector, {"server_id": server_id}], separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class ShardedOffsetRecord:
    """The offset of a sharded cluster read through mongos: the usual value under the `server_id` key."""

    key: bytes
    record: OffsetRecord

    def to_value(self) -> bytes:
        return self.record.to_value()


def decode_offset(connector: str, replica_set: str, value: bytes) -> StoredOffset:
    try:
        record = OffsetRecord.from_kafka(encode_key(connector, replica_set), value)
    except OffsetDecodeError as error:
        raise ValueError(str(error)) from None
    return stored_offset(record)


def stored_offset(record: OffsetRecord) -> StoredOffset:
    position = None
    if record.resume_token is not None:
        position = MongoPosition(record.resume_token, record.cluster_time, bool(record.extra.get("invalidated")))
    return StoredOffset(position, record.snapshot, record.startup, record.extra.get("transaction"),
                        record.extra.get("incremental_snapshot"))
