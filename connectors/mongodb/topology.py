"""What the connection string points at: one replica set, a sharded cluster (one pipeline per shard),
or a standalone server (refused: change streams need a replica set)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import quote_plus, urlencode

from pymongo.uri_parser import parse_uri

from connectors.errors import NotAReplicaSet
from connectors.mongodb.client import ConnectionSettings, check_connection, open_client


@dataclass(frozen=True)
class ReplicaSet:
    name: str
    hosts: tuple[str, ...]
    primary: str | None
    connection: ConnectionSettings


@dataclass(frozen=True)
class Topology:
    kind: str  # "replica_set" | "sharded"
    replica_sets: tuple[ReplicaSet, ...]


def shard_uri(base_uri: str, set_name: str, hosts: list[str]) -> str:
    """The base URI's credentials and options, pointed at one shard's replica set."""
    parsed = parse_uri(base_uri)
    options = {k: v for k, v in parsed["options"].items() if k.lower() not in {"replicaset", "directconnection"}}
    options["replicaSet"] = set_name
    auth = ""
    if parsed.get("username"):
        auth = f"{quote_plus(parsed['username'])}:{quote_plus(parsed.get('password') or '')}@"
    query = urlencode({k: str(v).lower() if isinstance(v, bool) else v for k, v in options.items()})
    return f"mongodb://{auth}{','.join(hosts)}/?{query}"


def _parse_shard_host(value: str) -> tuple[str, list[str]]:
    """`rs1/h1:27018,h2:27018` -> ("rs1", ["h1:27018", "h2:27018"])."""
    set_name, _, hosts = value.partition("/")
    return set_name, hosts.split(",")


def discover(settings: ConnectionSettings, auto_discover: bool = True) -> Topology:
    client = open_client(settings)
    try:
        hello = check_connection(client, settings)
        if hello.get("msg") == "isdbgrid":
            shards = []
            for shard in client["config"]["shards"].find({}, {"_id": 1, "host": 1}):
                set_name, hosts = _parse_shard_host(shard["host"])
                conn = replace(settings, uri=shard_uri(settings.uri, set_name, hosts))
                shards.append(ReplicaSet(set_name, tuple(hosts), None, conn))
            return Topology("sharded", tuple(shards))
        if "setName" not in hello:
            raise NotAReplicaSet(
                f"MongoDB at {settings.describe()} is a standalone server, not a replica set member; change "
                "streams need a replica set (start mongod with --replSet and run rs.initiate(), even for "
                "a single member)"
            )
        hosts = tuple(hello.get("hosts", ()))
        conn = settings
        if auto_discover:
            conn = replace(settings, uri=shard_uri(settings.uri, hello["setName"], list(hosts)))
        return Topology("replica_set", (ReplicaSet(hello["setName"], hosts, hello.get("primary"), conn),))
    finally:
        client.close()
