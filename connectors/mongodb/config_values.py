"""Parsing of MongoDB-specific configuration values: namespaces, queries and pipelines in Extended JSON, host lists
and connection strings (checked with pymongo's parser, without any network or DNS access)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from bson import json_util
from pymongo import uri_parser
from pymongo.errors import ConfigurationError, InvalidURI

from connectors.config.types import ACCEPTED_CONNECTOR_CLASSES, DEBEZIUM_CONNECTOR_CLASS
from connectors.config.values import parse_secret, parse_str, split_list
from connectors.secrets import MASK, SECRET_URI_OPTIONS, Secret, split_userinfo, userinfo_is_malformed

MAX_SEEDS = 50  # members of a replica set, at most


def parse_connection_string_secret(raw: Any) -> Secret:
    secret = parse_secret(raw)
    parse_connection_string(secret.reveal())
    return secret


def parse_namespace(raw: Any) -> str:
    return check_namespace(parse_str(raw))


def parse_namespace_list(raw: Any) -> tuple[str, ...]:
    return tuple(check_namespace(item) for item in split_list(raw))


def parse_json_query(raw: Any) -> str:
    """A MongoDB query as Extended JSON text (a JSON object is accepted and written as text)."""
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        query = json_util.loads(text)
    except (ValueError, TypeError) as error:
        raise ValueError(f'is not valid JSON ({error}); write a MongoDB query such as {{"status": "A"}}') from None
    if not isinstance(query, dict):
        raise ValueError(f"expected a JSON object (a MongoDB query), got {type(query).__name__}")
    return text


def parse_cursor_pipeline(raw: Any) -> str:
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        stages = json_util.loads(text)
    except (ValueError, TypeError) as error:
        raise ValueError(f"is not valid JSON ({error}); expected a JSON array of stages") from None
    if not isinstance(stages, list) or not all(
        isinstance(stage, dict) and len(stage) == 1 and next(iter(stage)).startswith("$") for stage in stages
    ):
        raise ValueError('expected a JSON array of stages such as [{"$match": {"operationType": "insert"}}]')
    return text


def parse_connector_class(raw: Any) -> str:
    text = parse_str(raw)
    if text not in ACCEPTED_CONNECTOR_CLASSES:
        raise ValueError(f"this platform runs the MongoDB connector only; use {DEBEZIUM_CONNECTOR_CLASS}")
    return text


def check_namespace(value: str) -> str:
    db, sep, collection = value.partition(".")
    if not sep or not db or not collection:
        raise ValueError(f"expected <database>.<collection>, got {value!r}")
    return value


@dataclass(frozen=True)
class HostList:
    """``mongodb.hosts``: ``[<replica set>/]host[:port],host[:port],…`` (Debezium 1.x form)."""

    replica_set: str | None
    hosts: tuple[tuple[str, int], ...]

    def seed_list(self) -> str:
        return ",".join(f"[{host}]:{port}" if ":" in host else f"{host}:{port}" for host, port in self.hosts)

    def render(self) -> str:
        prefix = f"{self.replica_set}/" if self.replica_set else ""
        return prefix + self.seed_list()


def parse_hosts(value: Any) -> HostList:
    text = parse_str(value)
    replica_set, slash, host_text = text.rpartition("/")
    if not slash:
        replica_set, host_text = "", text
    if slash and not replica_set:
        raise ValueError("the replica set name before '/' is empty; write rs0/host1:27017,host2:27017")
    if not host_text:
        raise ValueError("no host given; write host1:27017,host2:27017 or rs0/host1:27017")
    try:
        hosts = uri_parser.split_hosts(host_text)
    except (ValueError, InvalidURI, ConfigurationError) as error:
        raise ValueError(f"cannot parse hosts {host_text!r}: {error}") from None
    return HostList(replica_set or None, tuple((host, int(port)) for host, port in hosts))


@dataclass(frozen=True)
class ParsedConnectionString:
    hosts: tuple[tuple[str, int | None], ...]
    username: str | None
    has_password: bool
    options: dict[str, Any]
    srv: bool


def parse_connection_string(value: str) -> ParsedConnectionString:
    """Validate a MongoDB URI with pymongo's parser, without any network or DNS access."""
    uri = value.strip()
    srv = uri.startswith("mongodb+srv://")
    if srv:
        # parse_uri would resolve the SRV record (I/O); check the same grammar on a plain URI instead.
        uri = "mongodb://" + uri[len("mongodb+srv://") :]
    try:
        parsed = uri_parser.parse_uri(uri, validate=True, warn=False)
    except (ValueError, InvalidURI, ConfigurationError) as error:
        parts = split_userinfo(value)
        if parts is not None and parts[1] is not None and userinfo_is_malformed(parts[1]):
            # The parser's message would quote a piece of the password it took for a host or a port.
            message = ("the user name or password holds a character that must be escaped (percent-encoded): "
                       "@ : / ? # [ ] or %; escape them with urllib.parse.quote_plus")
        else:
            message = scrub_secrets(_first_line(error), value)
        raise ValueError(f"{message}; expected mongodb://[user:password@]host[:port][,…][/?options]") from None
    nodes = tuple(parsed["nodelist"])
    if srv and (len(nodes) != 1 or _has_explicit_port(uri)):
        raise ValueError("a mongodb+srv:// URI names exactly one host and no port")
    return ParsedConnectionString(
        hosts=nodes,
        username=parsed.get("username"),
        has_password=parsed.get("password") is not None,
        options=dict(parsed.get("options") or {}),
        srv=srv,
    )


def scrub_secrets(message: str, uri: str) -> str:
    """The message with the URI's password and secret option values masked, should a parser quote them."""
    secrets = []
    parts = split_userinfo(uri)
    userinfo = parts[1] if parts is not None else None
    if userinfo is not None and ":" in userinfo:
        secrets.append(userinfo.split(":", 1)[1])
    query = uri.partition("?")[2]
    for pair in re.split(r"[&;]", query):
        name, _, option_value = pair.partition("=")
        if unquote(name).lower() in SECRET_URI_OPTIONS and option_value:
            secrets.append(option_value)
    for secret in secrets:
        for form in {secret, unquote(secret)}:
            if form:
                message = message.replace(form, MASK)
    return message


def _has_explicit_port(uri: str) -> bool:
    authority = uri[len("mongodb://") :].split("/", 1)[0].split("?", 1)[0]
    host = authority.rpartition("@")[2]
    return ":" in host.rpartition("]")[2]


def _first_line(error: Exception) -> str:
    return str(error).split("\n")[0]
