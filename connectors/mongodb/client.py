"""Opening a pymongo client from a connector's client options, with errors a user can act on."""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pymongo
from bson.codec_options import DatetimeConversion
from pymongo.errors import ConfigurationError, OperationFailure, PyMongoError, ServerSelectionTimeoutError

from connectors import AuthenticationFailed, ConnectorError, SourceUnreachable
from connectors.mongodb.config_values import MAX_SEEDS
from connectors.mongodb.errors import NotAReplicaSet

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
            raise AuthenticationFailed(_auth_failure(options, where)) from None
        raise ConnectorError(f"MongoDB at {where} refused the connection check: {error.details}") from None


def _auth_failure(options: Mapping[str, Any], where: str) -> str:
    user = options.get("username")
    if not user:
        return (f"MongoDB at {where} requires authentication and no user name was given; put the user in the "
                "connection string (mongodb://USER:PASSWORD@host…) or set mongodb.user and mongodb.password")
    return (f"MongoDB rejected the credentials of user {user!r} (authSource {options.get('authSource') or 'admin'!r}) "
            f"at {where}; check the user name, mongodb.password and mongodb.authsource")


def connection_problem(options: Mapping[str, Any], timeout_ms: int = 5000) -> str | None:
    """Why a connector with these client options could not capture changes, found within about `timeout_ms`: a host
    name that does not resolve, a port nobody listens on, no answer (timeout), rejected credentials, a standalone
    server, a mongos or another replica set. None when the deployment answers as a replica set (or a sharded
    cluster). For checking a configuration before it is saved; the pipeline itself uses check_connection.

    Each seed is first tried at the socket level (a DNS failure or a refused port is known at once, not after a
    server selection timeout); only when one accepts connections is MongoDB asked, with the time left."""
    deadline = time.monotonic() + timeout_ms / 1000
    where = describe_hosts(options)
    try:
        seeds, _, _ = _probe_settings(options)
    except Exception as error:  # noqa: BLE001 - e.g. an SRV name that does not resolve
        return f"Unable to connect to MongoDB at {where}: {error}"
    if len(seeds) > MAX_SEEDS:
        return (f"the connection string names {len(seeds)} hosts; a replica set has at most {MAX_SEEDS} members, so "
                f"give at most {MAX_SEEDS} seed hosts (a few are enough: the others are discovered)")
    reasons = [_socket_problem(seed, deadline, len(seeds)) for seed in seeds]
    if all(reasons):
        return f"Unable to connect to MongoDB: {'; '.join(reasons)}"
    left_ms = max(500, int((deadline - time.monotonic()) * 1000) - PROBE_TIMEOUT_MS)
    bounded = {**options, "serverSelectionTimeoutMS": left_ms,
               "connectTimeoutMS": min(int(options.get("connectTimeoutMS") or left_ms), left_ms),
               "socketTimeoutMS": left_ms}
    try:
        client = open_client(bounded)
    except ConnectorError as error:
        return str(error)
    try:
        hello = check_connection(client, bounded)
    except SourceUnreachable:
        answering = [seed for seed, reason in zip(seeds, reasons, strict=True) if reason is None]
        return (f"Unable to connect to MongoDB: {', '.join(answering)} accepted a connection but did not answer as "
                f"MongoDB within {timeout_ms / 1000:g} s (timeout; TLS settings, a proxy, or another service on "
                "that port?)")
    except ConnectorError as error:
        return str(error)
    except PyMongoError as error:
        return f"MongoDB at {where} failed the connection check: {error}"
    finally:
        client.close()
    if hello.get("msg") != "isdbgrid" and "setName" not in hello:
        return str(not_a_replica_set(where))
    return None


def _socket_problem(seed: str, deadline: float, seeds: int) -> str | None:
    """None when `seed` (host:port) accepts a TCP connection; else why not: DNS, refused, timeout."""
    host, _, port = seed.rpartition(":")
    host = host.strip("[]")
    wait = max(0.2, (deadline - time.monotonic()) / 2 / max(1, seeds))
    try:
        addresses = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError):
        return f"{host} does not resolve (DNS): check the host name"
    try:
        family, kind, proto, _, address = addresses[0]
        with socket.socket(family, kind, proto) as probe:
            probe.settimeout(wait)
            probe.connect(address)
    except ConnectionRefusedError:
        return f"{seed} refused the connection: nothing listens on port {port}"
    except TimeoutError:
        return f"{seed} did not answer within {wait:.1f} s (timeout): check the address, firewall and network"
    except OSError as error:
        return f"{seed} cannot be reached: {error.strerror or error}"
    return None
