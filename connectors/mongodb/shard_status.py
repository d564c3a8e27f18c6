"""A sharded cluster's state as mongos and the config servers tell it, for the dashboard of a connector that reads the
cluster through mongos: its shards and each one's primary (mongos' `connPoolStats`, the router's replica set
monitor), the primary changes seen per shard since the pipeline started (elections), and the chunk migrations the
config servers logged since then (`config.changelog`, `moveChunk.commit`).

Nothing here connects to a shard directly: sharded mode needs no network path to the shards. A primary change is
counted when two reads name different primaries, so a step-down whose old primary is re-elected between two reads is
not seen; the change streams through mongos are not affected either way."""

from __future__ import annotations

import datetime

from pymongo.errors import PyMongoError

from connectors import ConnectorError

RECENT_MIGRATIONS = 5


class ShardStatus:
    """Reads the cluster's shards, primaries and migrations on the pipeline's mongos client; keeps the primaries of
    the last read to count elections."""

    def __init__(self, started: datetime.datetime | None = None):
        self.started = started or datetime.datetime.now(datetime.UTC)
        self._primaries: dict[str, str | None] = {}
        self._elections: dict[str, int] = {}

    def read(self, client) -> dict:
        try:
            shards = list(client["config"]["shards"].find({}, {"_id": 1, "host": 1}).sort("_id", 1))
            replica_sets = client.admin.command("connPoolStats").get("replicaSets") or {}
            migrations = client["config"]["changelog"].find(
                {"what": "moveChunk.commit", "time": {"$gte": self.started.replace(tzinfo=None)}},
                {"ns": 1, "time": 1, "details.to": 1}).sort("time", -1)
            migrations = list(migrations)
        except PyMongoError as error:
            raise ConnectorError(f"reading the sharded cluster's shards and migrations through mongos failed: "
                                 f"{error}") from None
        return {"shards": [self._shard(shard, replica_sets) for shard in shards],
                "migrations": len(migrations),
                "recent_migrations": [_migration(entry) for entry in migrations[:RECENT_MIGRATIONS]],
                "since": self.started.isoformat()}

    def _shard(self, shard: dict, replica_sets: dict) -> dict:
        name = shard["_id"]
        set_name, _, host_list = str(shard.get("host", "")).partition("/")
        members = (replica_sets.get(set_name) or replica_sets.get(name) or {}).get("hosts") or []
        primary = next((m.get("addr") for m in members if m.get("ismaster") and m.get("ok", True)), None)
        if name in self._primaries and primary is not None and primary != self._primaries[name]:
            self._elections[name] = self._elections.get(name, 0) + 1
        if primary is not None or name not in self._primaries:
            self._primaries[name] = primary
        hosts = [m.get("addr") for m in members] or [h for h in host_list.split(",") if h]
        return {"name": name, "replica_set": set_name or name, "primary": primary, "members": hosts,
                "elections": self._elections.get(name, 0)}


def _migration(entry: dict) -> dict:
    moved_at = entry.get("time")
    if isinstance(moved_at, datetime.datetime) and moved_at.tzinfo is None:
        moved_at = moved_at.replace(tzinfo=datetime.UTC)
    return {"ns": entry.get("ns"), "to": (entry.get("details") or {}).get("to"),
            "time": moved_at.isoformat() if isinstance(moved_at, datetime.datetime) else None}
