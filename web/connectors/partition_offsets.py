"""Offsets of connectors whose source keeps its own offset layout (PostgreSQL, MySQL/MariaDB): read, reset and
deleted through the source's key and record (PartitionSource.offset_key / offset_record), so the control plane
writes exactly what the pipeline reads. MongoDB's richer resets (timestamp, resume token) stay in
web.connectors.offsets; the modes here are those the core pipeline obeys for any source:

- latest: stream from where the source is now (PostgreSQL: the slot's confirmed position; MySQL/MariaDB: the
  server's current binlog position), without a snapshot;
- snapshot: take a new initial snapshot at the next start;
- initial: delete the offset, so the next start is a first run (per snapshot.mode).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from connectors.kafka import OffsetStore
from connectors.kafka.offset_record import STARTUP_LATEST, STARTUP_SNAPSHOT, KeyTombstone
from connectors.sources import open_source

RESET_MODES = ("latest", "snapshot", "initial")


@dataclass(frozen=True)
class PartitionOffset:
    partition: str
    key: bytes
    value: dict | None  # the stored JSON: Debezium's offset fields, plus `snapshot`/`startup` while they apply

    @property
    def replica_set(self) -> str:
        """The name the control plane files every partition under (MongoDB's replica set, or this partition)."""
        return self.partition

    def describe(self) -> dict[str, Any]:
        """For the API and the dashboard (the `replica_set` key names the partition, as for MongoDB)."""
        value = dict(self.value or {})
        startup = value.pop("startup", None)
        snapshot = value.pop("snapshot", None)
        return {"replica_set": self.partition, "position": value or None, "snapshot": snapshot,
                "pending_reset": startup}

    def connect_partition(self) -> dict[str, Any]:
        """KIP-875 shape: Debezium's source partition (e.g. {"server": "<topic.prefix>"}) and the stored offset."""
        key = json.loads(self.key)
        partition = key[1] if isinstance(key, list) and len(key) == 2 else {"key": key}
        return {"partition": partition, "offset": self.value}


def partition_sources(config) -> dict[str, Any]:
    """partition name -> its PartitionSource (opened without connecting: only its offset layout is used)."""
    source = open_source(config)
    return {partition.name: source.open(partition) for partition in source.partitions()}


def read(store: OffsetStore, config) -> dict[str, PartitionOffset]:
    found = {}
    for name, partition in partition_sources(config).items():
        key = partition.offset_key()
        value, _ = store.read_value(key)
        if value is not None:
            found[name] = PartitionOffset(name, key, json.loads(value))
    return found


def reset(store: OffsetStore, config, mode: str, partitions: list[str], requested_by: str | None) -> list:
    """Writes the reset for each named partition; returns what was written (PartitionOffset, value None: deleted)."""
    sources = partition_sources(config)
    written = []
    for name in partitions:
        partition = sources[name]
        if mode == "initial":
            record = KeyTombstone(partition.offset_key())
            store.write_partition(config.name, name, record)
            written.append(PartitionOffset(name, record.key, None))
            continue
        startup = {"mode": STARTUP_LATEST if mode == "latest" else STARTUP_SNAPSHOT, "requested_by": requested_by,
                   "requested_at_ms": int(time.time() * 1000)}
        record = partition.offset_record(None, startup=startup)
        store.write_partition(config.name, name, record)
        written.append(PartitionOffset(name, record.key, json.loads(record.to_value())))
    return written
