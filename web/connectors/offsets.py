"""Reading a connector's offsets for people: resume tokens decoded to cluster time, snapshot progress, pending
reset instructions. The store itself is connectors.kafka.OffsetStore (schema: docs/offsets.md)."""

from __future__ import annotations

import datetime
import json
from typing import Any

from bson import Timestamp, json_util
from bson.json_util import RELAXED_JSON_OPTIONS
from django.conf import settings

from connectors.config.types import ConfigError
from connectors.kafka import OffsetRecord, OffsetStore, offsets_topic_spec
from web.connectors.definitions import engine_config
from web.connectors.models import Connector
from web.connectors.partition_offsets import PartitionOffset

_JSON = RELAXED_JSON_OPTIONS.with_options(tz_aware=True, tzinfo=datetime.UTC)
RESET_MODES = ("latest", "timestamp", "token", "snapshot", "initial")


def offsets_topic(connector: Connector) -> tuple[str, int, int]:
    """(name, partitions, replication factor) of the connector's offsets topic, from its properties."""
    try:
        config = engine_config(connector)
    except ConfigError:
        options = connector.properties or {}
        return str(options.get("offset.storage.topic") or "cdc.offsets"), 1, -1
    replication = getattr(config, "offset_storage_replication_factor", -1)  # MongoDB's option only
    return config.offset_storage_topic, config.offset_storage_partitions, replication


def store_for(connector: Connector) -> OffsetStore:
    name, partitions, replication = offsets_topic(connector)
    return OffsetStore(
        settings.KAFKA_BOOTSTRAP_SERVERS,
        offsets_topic_spec(name, partitions, replication),
        timeout=settings.CDC_KAFKA_TIMEOUT_SECONDS,
    )


def token_cluster_time(token: Any) -> Timestamp | None:
    """The cluster time inside a resume token's `_data` (KeyString: 0x82 + 4-byte seconds + 4-byte increment)."""
    if not isinstance(token, dict) or not isinstance(token.get("_data"), str):
        return None
    data = token["_data"]
    if len(data) < 18 or data[:2] != "82":
        return None
    try:
        return Timestamp(int(data[2:10], 16), int(data[10:18], 16))
    except ValueError:
        return None


def resume_token_problem(token: Any) -> str | None:
    """Why `token` is not a MongoDB resume token ({"_data": "<hex KeyString>"}, optionally "_typeBits"); None if
    it looks like one. Checked before a token is stored, so a pipeline never starts from garbage."""
    if not isinstance(token, dict):
        return 'a resume token is a JSON object such as {"_data": "8263…"}'
    unknown = sorted(set(token) - {"_data", "_typeBits"})
    if unknown:
        return f"a resume token has only _data (and _typeBits), not {', '.join(unknown)}"
    data = token.get("_data")
    if not isinstance(data, str) or not data:
        return 'a resume token needs "_data", a hexadecimal string'
    if len(data) % 2 or any(ch not in "0123456789abcdefABCDEF" for ch in data):
        return f"the resume token's _data {data[:40]!r} is not hexadecimal"
    if token_cluster_time(token) is None:
        return "the resume token's _data does not start with a cluster time (82 + 8 bytes); copy it from an event"
    return None


def timestamp_json(ts: Timestamp | None) -> dict | None:
    if ts is None:
        return None
    when = datetime.datetime.fromtimestamp(ts.time, datetime.UTC)
    return {"t": ts.time, "i": ts.inc, "iso": when.isoformat().replace("+00:00", "Z")}


def _plain(value: Any) -> Any:
    """Relaxed extended JSON as plain JSON data (ObjectId -> {"$oid": …})."""
    return json.loads(json_util.dumps(value, json_options=_JSON))


def describe(record: OffsetRecord | PartitionOffset) -> dict[str, Any]:
    """One replica set's (or another source's partition's) position as JSON for the API and the admin page."""
    if isinstance(record, PartitionOffset):
        return record.describe()
    cluster_time = record.cluster_time or token_cluster_time(record.resume_token)
    startup = record.startup
    return {
        "replica_set": record.replica_set,
        "partition": {record.key_field: record.replica_set},
        "resume_token": _plain(record.resume_token) if record.resume_token is not None else None,
        "cluster_time": timestamp_json(cluster_time),
        "token_cluster_time": timestamp_json(token_cluster_time(record.resume_token)),
        "snapshot": _plain(record.snapshot) if record.snapshot is not None else None,
        "pending_reset": _pending(startup),
    }


def _pending(startup: dict | None) -> dict | None:
    if not startup:
        return None
    if "timestamp" in startup:
        startup = {**startup, "timestamp": timestamp_json(startup["timestamp"])}
    return _plain(startup)


def connect_partition(record: OffsetRecord | PartitionOffset) -> dict[str, Any]:
    """KIP-875 shape: {"partition": {"rs": …} (a sharded cluster read through mongos: {"server_id": …}),
    "offset": <the stored value>}."""
    if isinstance(record, PartitionOffset):
        return record.connect_partition()
    return {"partition": {record.key_field: record.replica_set}, "offset": json.loads(record.to_value())}


def parse_timestamp(raw: Any) -> Timestamp:
    """A reset timestamp: ms since the epoch, ISO-8601, or {"t": seconds, "i": increment}."""
    if isinstance(raw, dict):
        try:
            return Timestamp(int(raw["t"]), int(raw.get("i", 0)))
        except (KeyError, TypeError, ValueError):
            raise ValueError('give {"t": seconds, "i": increment}') from None
    if isinstance(raw, datetime.datetime):
        when = raw if raw.tzinfo else raw.replace(tzinfo=datetime.UTC)
        seconds = int(when.timestamp())
        if not 0 <= seconds < 2**32:
            raise ValueError("time out of range")
        return Timestamp(seconds, 0)
    if isinstance(raw, bool):
        raise ValueError("expected milliseconds since the epoch or an ISO-8601 time")
    if isinstance(raw, int | float) or (isinstance(raw, str) and raw.strip().isdigit()):
        millis = int(raw)
        if not 0 <= millis < 2**32 * 1000:
            raise ValueError("milliseconds since the epoch out of range")
        return Timestamp(millis // 1000, 0)
    if isinstance(raw, str):
        try:
            when = datetime.datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{raw!r} is neither milliseconds since the epoch nor an ISO-8601 time") from None
        return parse_timestamp(when)
    raise ValueError("expected milliseconds since the epoch or an ISO-8601 time")
