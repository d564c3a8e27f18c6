"""The offset record of one pipeline and its bytes in the compacted offsets topic (schema: docs/offsets.md).

Key: the Kafka Connect offsets layout `["<connector>",{"rs":"<replica set>"}]` as compact JSON; a sharded cluster
read through mongos keys its one record `["<connector>",{"server_id":"<topic.prefix>"}]` (Debezium 3.x).
Value: relaxed extended JSON (bson.json_util), so resume tokens and snapshot boundaries keep their BSON
types (ObjectId, Decimal128, Binary, dates) while staying readable; a null value (tombstone) deletes.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from typing import Any

from bson import Timestamp, json_util
from bson.json_util import RELAXED_JSON_OPTIONS

# What the pipeline does at start-up when a record carries a `startup` instruction (written by resets).
STARTUP_LATEST = "latest"  # stream from now, no snapshot
STARTUP_TIMESTAMP = "timestamp"  # stream from startup.timestamp (startAtOperationTime)
STARTUP_TOKEN = "token"  # noqa: S105 - stream after startup.token (resumeAfter)
STARTUP_SNAPSHOT = "snapshot"  # take a new snapshot, then stream
STARTUP_MODES = (STARTUP_LATEST, STARTUP_TIMESTAMP, STARTUP_TOKEN, STARTUP_SNAPSHOT)

_JSON_OPTIONS = RELAXED_JSON_OPTIONS.with_options(tz_aware=True, tzinfo=datetime.UTC)
_KNOWN_FIELDS = ("resume_token", "cluster_time", "snapshot", "startup")
REPLICA_SET_KEY = "rs"  # the partition field of a replica set's (or a shard's) record
SHARDED_KEY = "server_id"  # the partition field of a sharded cluster's one record, read through mongos
PARTITION_KEYS = (REPLICA_SET_KEY, SHARDED_KEY)


class OffsetDecodeError(ValueError):
    """Bytes in the offsets topic that are not an offset record of this layout."""


@dataclass(frozen=True)
class OffsetRecord:
    connector: str
    replica_set: str
    resume_token: dict | None = None
    cluster_time: Timestamp | None = None
    snapshot: dict | None = None
    startup: dict | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    key_field: str = REPLICA_SET_KEY  # SHARDED_KEY: the record of a sharded cluster read through mongos

    @property
    def key(self) -> bytes:
        return encode_key(self.connector, self.replica_set, self.key_field)

    def to_value(self) -> bytes:
        document: dict[str, Any] = dict(self.extra)
        document["resume_token"] = self.resume_token
        document["cluster_time"] = timestamp_to_json(self.cluster_time)
        document["snapshot"] = self.snapshot
        if self.startup is not None:
            document["startup"] = _startup_to_json(self.startup)
        return json_util.dumps(document, json_options=_JSON_OPTIONS, separators=(",", ":")).encode()

    @classmethod
    def from_kafka(cls, key: bytes, value: bytes) -> OffsetRecord:
        connector, replica_set, key_field = decode_partition_key(key)
        try:
            document = json_util.loads(value, json_options=_JSON_OPTIONS)
        except ValueError as error:
            raise OffsetDecodeError(f"offset value for {connector}/{replica_set} is not JSON: {error}") from None
        if not isinstance(document, dict):
            raise OffsetDecodeError(f"offset value for {connector}/{replica_set} is not a JSON object")
        startup = document.get("startup")
        return cls(
            connector=connector,
            replica_set=replica_set,
            resume_token=document.get("resume_token"),
            cluster_time=timestamp_from_json(document.get("cluster_time")),
            snapshot=document.get("snapshot"),
            startup=_startup_from_json(startup) if startup is not None else None,
            extra={name: value for name, value in document.items() if name not in _KNOWN_FIELDS},
            key_field=key_field,
        )


@dataclass(frozen=True)
class OffsetTombstone:
    """Deletes a pipeline's offset when written: the pipeline then starts as if it never ran."""

    connector: str
    replica_set: str
    key_field: str = REPLICA_SET_KEY

    @property
    def key(self) -> bytes:
        return encode_key(self.connector, self.replica_set, self.key_field)

    def to_value(self) -> None:
        return None


@dataclass(frozen=True)
class KeyTombstone:
    """Deletes the offset stored under `key`, whatever the source's key layout."""

    key: bytes

    def to_value(self) -> None:
        return None


def encode_key(connector: str, replica_set: str, key_field: str = REPLICA_SET_KEY) -> bytes:
    return json.dumps([connector, {key_field: replica_set}], separators=(",", ":"), ensure_ascii=False).encode()


def decode_key(key: bytes) -> tuple[str, str]:
    connector, name, _ = decode_partition_key(key)
    return connector, name


def decode_partition_key(key: bytes) -> tuple[str, str, str]:
    """(connector, partition name, its field: `rs` or `server_id`) of a MongoDB offset key."""
    layout = '["<connector>", {"rs": "<replica set>"}] or ["<connector>", {"server_id": "<topic.prefix>"}]'
    try:
        connector, partition = json.loads(key)
    except (ValueError, TypeError) as error:
        raise OffsetDecodeError(f"offset key {key[:200]!r} is not {layout}: {error}") from None
    if not isinstance(partition, dict) or len(partition) != 1 or next(iter(partition)) not in PARTITION_KEYS:
        raise OffsetDecodeError(f"offset key {key[:200]!r} is not {layout}")
    ((key_field, name),) = partition.items()
    return str(connector), str(name), key_field


def timestamp_to_json(timestamp: Timestamp | None) -> dict | None:
    if timestamp is None:
        return None
    return {"t": timestamp.time, "i": timestamp.inc}


def timestamp_from_json(value: Any) -> Timestamp | None:
    if value is None or isinstance(value, Timestamp):
        return value
    try:
        return Timestamp(int(value["t"]), int(value["i"]))
    except (TypeError, KeyError, ValueError) as error:
        raise OffsetDecodeError(f"cluster time {value!r} is not {{\"t\": seconds, \"i\": increment}}") from error


def _startup_to_json(startup: dict) -> dict:
    if "timestamp" in startup:
        return {**startup, "timestamp": timestamp_to_json(startup["timestamp"])}
    return startup


def _startup_from_json(startup: Any) -> dict:
    if not isinstance(startup, dict) or startup.get("mode") not in STARTUP_MODES:
        raise OffsetDecodeError(f"startup instruction {startup!r} has no mode among {', '.join(STARTUP_MODES)}")
    if "timestamp" in startup:
        return {**startup, "timestamp": timestamp_from_json(startup["timestamp"])}
    return startup
