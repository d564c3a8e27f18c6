"""What the connection points at: one replica set, a sharded cluster, or a standalone server (refused: change
streams need a replica set).

A sharded cluster is read as Debezium 3.x reads it (`mongodb.connection.mode=sharded`, the default): one partition,
one change stream through mongos, named after the connector's `topic.prefix` (the `server_id` of its offsets). With
`mongodb.connection.mode=replica_set` each shard's replica set is a partition of its own, read directly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pymongo.uri_parser import parse_uri

from connectors.mongodb.client import check_connection, describe_hosts, not_a_replica_set, open_client


@dataclass(frozen=True)
class ReplicaSet:
    name: str
    hosts: tuple[str, ...]
    client_options: Mapping[str, Any]
    through_mongos: bool = False  # the whole sharded cluster, read through mongos


@dataclass(frozen=True)
class Topology:
    kind: str  # "replica_set" | "sharded"
    replica_sets: tuple[ReplicaSet, ...]


def shard_options(options: Mapping[str, Any], set_name: str, hosts: list[str]) -> dict[str, Any]:
    """The connector's client options pointed at one shard's replica set (credentials and TLS kept)."""
    shard = dict(options)
    host = options.get("host")
    if isinstance(host, str):
        parsed = parse_uri(host)
        for name, value in parsed["options"].items():
            if name.lower() not in {"replicaset", "directconnection"}:
                shard.setdefault(name, value)
        if parsed.get("username"):
            shard.setdefault("username", parsed["username"])
            shard.setdefault("password", parsed.get("password"))
    shard.update(host=hosts, replicaSet=set_name)
    shard.pop("directConnection", None)
    return shard


def discover(options: Mapping[str, Any], mode: str = "replica_set", server_id: str | None = None) -> Topology:
    """The partitions to read. A sharded cluster in `sharded` mode is one partition named `server_id`."""
    client = open_client(options)
    try:
        hello = check_connection(client, options)
        if hello.get("msg") == "isdbgrid" and mode == "sharded":
            hosts = tuple(f"{host}:{port}" for host, port in client.topology_description.server_descriptions())
            return Topology("sharded", (ReplicaSet(server_id or "sharded", hosts, options, through_mongos=True),))
        if hello.get("msg") == "isdbgrid":
            shards = []
            for shard in client["config"]["shards"].find({}, {"_id": 1, "host": 1}):
                set_name, _, host_list = shard["host"].partition("/")
                hosts = host_list.split(",")
                shards.append(ReplicaSet(set_name, tuple(hosts), shard_options(options, set_name, hosts)))
            return Topology("sharded", tuple(shards))
        if "setName" not in hello:
            raise not_a_replica_set(describe_hosts(options))
        return Topology("replica_set", (ReplicaSet(hello["setName"], tuple(hello.get("hosts", ())), options),))
    finally:
        client.close()


def partitions(config) -> tuple[ReplicaSet, ...]:
    """The partitions a connector with this configuration reads (its `mongodb.connection.mode` decides for a
    sharded cluster)."""
    mode = config.connection_mode.value
    return discover(config.mongo_client_options(), mode, config.topic_prefix or config.name).replica_sets
