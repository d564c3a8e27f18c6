"""Opening a pymongo client from a connector's client options, with errors a user can act on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pymongo
from bson.codec_options import DatetimeConversion
from pymongo.errors import ConfigurationError, OperationFailure, ServerSelectionTimeoutError

from connectors.errors import AuthenticationFailed, ConnectorError, NotAReplicaSet, SourceUnreachable

AUTH_FAILED_CODES = {18, 13}
REPLICA_SET_FIX = "start mongod with --replSet and run rs.initiate(), even for a single member"
PROBE_TIMEOUT_MS = 2000


def describe_hosts(options: Mapping[str, Any]) -> str:
    """Where a client connects, without credentials: safe for logs and error messages."""
    from pymongo.uri_parser import parse_uri

    host = options.get("host")
    if isinstance(host, str):
        try:
            return ",".join(f"{h}:{p}" for h, p in parse_uri(host)["nodelist"])
        except Exception:
            return "<unparsable connection string>"
    return ",".join(host or ["localhost:27017"])


def not_a_replica_set(where: str) -> NotAReplicaSet:
    return NotAReplicaSet(
        f"MongoDB at {where} is a standalone server, not a replica set member; change streams need a replica set "
        f"({REPLICA_SET_FIX})"
    )


def _probe_settings(options: Mapping[str, Any]) -> tuple[list[str], str | None, dict[str, Any]]:
    """Seed hosts, the replica set name asked for, and client options (TLS, credentials...) for talking to one
    seed directly."""
    from pymongo.uri_parser import parse_uri

    kwargs = {k: v for k, v in options.items() if v is not None}
    host = kwargs.pop("host", None)
    if isinstance(host, str):
        parsed = parse_uri(host)
        for name, value in parsed["options"].items():
            kwargs.setdefault(name, value)
        if parsed.get("username"):
            kwargs.setdefault("username", parsed["username"])
            kwargs.setdefault("password", parsed.get("password"))
        seeds = [f"{h}:{p}" for h, p in parsed["nodelist"]]
    else:
        seeds = list(host or ["localhost:27017"])
    wanted = None
    for name in [k for k in kwargs if k.lower() in {"replicaset", "directconnection"}]:
        value = kwargs.pop(name)
        if name.lower() == "replicaset":
            wanted = value
    kwargs.update(directConnection=True, serverSelectionTimeoutMS=PROBE_TIMEOUT_MS, connectTimeoutMS=PROBE_TIMEOUT_MS)
    return seeds, wanted, kwargs


def diagnose_unselectable(options: Mapping[str, Any]) -> ConnectorError | None:
    """Why no member of the requested replica set could be selected when a seed does answer: it is a standalone
    server, a mongos, or a member of another replica set. None when no replica set is asked for or no seed
    answers (then the hosts are simply unreachable)."""
    try:
        seeds, wanted, kwargs = _probe_settings(options)
    except Exception:
        return None
    if not wanted:
        return None
    for seed in seeds:
        try:
            with pymongo.MongoClient(host=[seed], **kwargs) as probe:
                hello = probe.admin.command("hello")
        except Exception:  # noqa: S112 - an unreachable seed is what the caller reports already
            continue
        if hello.get("msg") == "isdbgrid":
            return ConnectorError(f"MongoDB at {seed} is a mongos router, not a member of replica set {wanted!r}; "
                                  "remove the replicaSet option from the connection string to capture a sharded "
                                  "cluster")
        if "setName" not in hello:
            return NotAReplicaSet(
                f"MongoDB at {seed} is a standalone server, not a member of replica set {wanted!r}; change streams "
                f"need a replica set ({REPLICA_SET_FIX})"
            )
        if hello["setName"] != wanted:
            return ConnectorError(f"MongoDB at {seed} belongs to replica set {hello['setName']!r}, not {wanted!r}; "
                                  "fix the replicaSet option of the connection string")
    return None


def open_client(options: Mapping[str, Any], listeners: Sequence[object] = ()) -> pymongo.MongoClient:
    kwargs = {k: v for k, v in options.items() if v is not None}
    kwargs.setdefault("tz_aware", False)
    # MongoDB stores any 64-bit date; those outside datetime's years 1-9999 decode as DatetimeMS instead of
    # failing the whole batch (InvalidBSON), in the change stream and the snapshot alike.
    kwargs.setdefault("datetime_conversion", DatetimeConversion.DATETIME_AUTO)
    try:
        return pymongo.MongoClient(event_listeners=list(listeners), **kwargs)
    except ConfigurationError as error:
        raise ConnectorError(f"invalid MongoDB connection settings for {describe_hosts(options)}: {error}") from None


def check_connection(client: pymongo.MongoClient, options: Mapping[str, Any]) -> dict:
    """Ping the deployment and return its `hello` reply, translating failures into clear errors."""
    where = describe_hosts(options)
    try:
        client.admin.command("ping")
        return client.admin.command("hello")
    except ServerSelectionTimeoutError:
        diagnosis = diagnose_unselectable(options)
        if diagnosis is not None:
            raise diagnosis from None
        raise SourceUnreachable(
            f"cannot reach MongoDB at {where} within {options.get('serverSelectionTimeoutMS')} ms; "
            "check the hosts, ports, network and that the replica set is running"
        ) from None
    except OperationFailure as error:
        if error.code in AUTH_FAILED_CODES:
            raise AuthenticationFailed(
                f"MongoDB rejected the credentials of user {options.get('username')!r} (authSource "
                f"{options.get('authSource')!r}) at {where}; check mongodb.user, mongodb.password "
                "and mongodb.authsource"
            ) from None
        raise ConnectorError(f"MongoDB at {where} refused the connection check: {error.details}") from None
