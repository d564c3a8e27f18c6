"""Which key a MongoDB connector's offset record has: `rs` for a replica set (or a shard read directly),
`server_id` for a sharded cluster read through mongos (`mongodb.connection.mode=sharded`). A reset must write the key
the pipeline reads, also for a connector that has not committed an offset yet."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pymongo.errors import ConfigurationError, PyMongoError
from pymongo.uri_parser import parse_uri

from connectors import ConnectorError
from connectors.kafka import OffsetRecord
from connectors.kafka.offset_record import REPLICA_SET_KEY, SHARDED_KEY
from connectors.mongodb import topology


class KeyUnknown(Exception):
    """The source could not be asked how the pipeline keys its offset."""


def names_a_replica_set(options: Mapping) -> bool:
    """The connection options name a replica set, so the source is not a sharded cluster (read without asking)."""
    if options.get("replicaSet"):
        return True
    host = options.get("host")
    if not isinstance(host, str):
        return False
    try:
        parsed = parse_uri(host)["options"]
    except (ConfigurationError, ValueError):
        return False
    return any(name.lower() == "replicaset" and value for name, value in parsed.items())


def key_fields(config, current: Mapping[str, OffsetRecord], targets: Iterable[str]) -> dict[str, str]:
    """target partition -> the field its offset key has. A committed record says; without one, a sharded-mode
    connector whose connection string names no replica set asks the source which partition is read through
    mongos (raises KeyUnknown when it cannot)."""
    fields = {name: current[name].key_field if name in current else None for name in targets}
    missing = [name for name, field in fields.items() if field is None]
    if not missing:
        return fields
    options = config.mongo_client_options()
    if config.connection_mode.value != "sharded" or names_a_replica_set(options):
        return {**fields, **dict.fromkeys(missing, REPLICA_SET_KEY)}
    try:
        through_mongos = {partition.name for partition in topology.partitions(config) if partition.through_mongos}
    except (ConnectorError, PyMongoError) as error:
        raise KeyUnknown(str(error)) from None
    return {**fields, **{name: SHARDED_KEY if name in through_mongos else REPLICA_SET_KEY for name in missing}}
