"""Parsing of single configuration values.

Values arrive either as Debezium writes them (strings: ``"true"``, ``"1000"``, ``"a,b"``) or as
JSON natives (``true``, ``1000``, ``["a", "b"]``); both are accepted. Each parser returns the
typed value or raises `ValueError` with a message that says what is expected; the caller adds the
property name.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any
from urllib.parse import unquote

from bson import json_util
from pymongo import uri_parser
from pymongo.errors import ConfigurationError, InvalidURI

from connectors.config_types import (
    ACCEPTED_CONNECTOR_CLASSES,
    DEBEZIUM_CONNECTOR_CLASS,
    ENVELOPE_FIELDS,
    SKIPPABLE_OPERATIONS,
    SOURCE_FIELDS,
)
from connectors.secrets import MASK, SECRET_URI_OPTIONS, Secret, split_userinfo, userinfo_is_malformed

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_IDENTIFIER = re.compile(r"^[A-Za-z0-9._-]+$")
_FIELD_PATH_SEGMENT = re.compile(r"^[^.:,]+$")


def parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"expected true or false, got {value!r}")


def parse_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
        return int(value)
    raise ValueError(f"expected an integer, got {value!r}")


def parse_str(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    raise ValueError(f"expected a string, got {type(value).__name__} {value!r}")


def int_at_least(minimum: int) -> Callable[[Any], int]:
    def parse(raw: Any) -> int:
        number = parse_int(raw)
        if number < minimum:
            raise ValueError(f"must be at least {minimum}, got {number}")
        return number

    return parse


def parse_broker_count(raw: Any) -> int:
    """Partitions or replication factor: -1 lets the broker decide."""
    number = parse_int(raw)
    if number == 0 or number < -1:
        raise ValueError(f"must be -1 (the broker's default) or at least 1, got {number}")
    return number


def enum_parser(enum_type: type[Enum]) -> Callable[[Any], Any]:
    return lambda raw: parse_enum(enum_type, raw)


def parse_enum(enum_type: type[Enum], value: Any) -> Enum:
    text = parse_str(value).lower()
    for member in enum_type:
        if member.value == text:
            return member
    allowed = ", ".join(member.value for member in enum_type)
    raise ValueError(f"expected one of {allowed}; got {value!r}")


def split_list(value: Any) -> tuple[str, ...]:
    """A comma-separated list (or a JSON list) of non-empty, trimmed items.

    Commas inside brackets and escaped commas (``\\,``) do not split, so regular expressions such
    as ``inventory\\.c{1,3}`` survive.
    """
    if isinstance(value, list | tuple):
        items = [parse_str(item) for item in value]
    else:
        text = parse_str(value)
        if not text:
            return ()
        items = [item.strip() for item in _split_top_level_commas(text)]
    if any(not item for item in items):
        raise ValueError("the list has an empty item; remove the stray comma")
    return tuple(items)


def join_list(items: Iterable[str]) -> str:
    return ",".join(items)


def _split_top_level_commas(text: str) -> list[str]:
    items, current, closers, escaped = [], [], [], False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
            continue
        if char == "\\":
            current.append(char)
            escaped = True
            continue
        if char in _OPENERS:
            closers.append(_OPENERS[char])
        elif closers and char == closers[-1]:
            closers.pop()
        elif char == "," and not closers:
            items.append("".join(current))
            current = []
            continue
        current.append(char)
    items.append("".join(current))
    return items


def render_list(items: Iterable[str]) -> str:
    return join_list(items)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Debezium matches names case-insensitively against the whole name."""
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as error:
        raise ValueError(f"\"{pattern}\" is not a valid regular expression ({error})") from None  # as typed


def parse_regex_list(raw: Any) -> tuple[str, ...]:
    patterns = split_list(raw)
    for pattern in patterns:
        compile_pattern(pattern)
    return patterns


def parse_identifier(raw: Any) -> str:
    text = parse_str(raw)
    if not text:
        raise ValueError("must not be empty")
    return check_identifier(text)


def parse_topic(raw: Any) -> str:
    return check_topic_name(parse_str(raw))


def parse_secret(raw: Any) -> Secret:
    if isinstance(raw, Secret):
        return raw
    if not isinstance(raw, str):
        raise ValueError(f"expected a string, got {type(raw).__name__}")
    return Secret(raw.strip())


def parse_connection_string_secret(raw: Any) -> Secret:
    secret = parse_secret(raw)
    parse_connection_string(secret.reveal())
    return secret


def check_field_path(path: str, *, allow_wildcard_leaf: bool = True) -> str:
    segments = path.split(".")
    if len(segments) < 3 or not all(_FIELD_PATH_SEGMENT.fullmatch(segment) for segment in segments):
        raise ValueError(f"{path!r} is not of the form <database>.<collection>.<field>[.<nested field>…]")
    if not allow_wildcard_leaf and segments[-1] == "*":
        raise ValueError(f"{path!r}: the renamed field must be named, not '*'")
    return path


def parse_field_list(raw: Any) -> tuple[str, ...]:
    return tuple(check_field_path(path) for path in split_list(raw))


def parse_field_renames(raw: Any) -> tuple[str, ...]:
    renames = split_list(raw)
    for rename in renames:
        old, colon, new = rename.partition(":")
        if not colon or not new or "." in new or "*" in new or ":" in new:
            raise ValueError(
                f"{rename!r} is not of the form <database>.<collection>.<field>[.<nested>…]:<new name> "
                "(the new name is a single field name)"
            )
        check_field_path(old, allow_wildcard_leaf=False)
    return renames


def parse_skipped_operations(raw: Any) -> tuple[str, ...]:
    items = [item.lower() for item in split_list(raw)]
    if "none" in items:
        if len(items) > 1:
            raise ValueError("'none' cannot be combined with other operations")
        return ()
    unknown = [item for item in items if item not in SKIPPABLE_OPERATIONS]
    if unknown:
        raise ValueError(f"unknown operation(s) {', '.join(unknown)}; use c, u, d, t or none")
    return tuple(sorted(set(items), key=SKIPPABLE_OPERATIONS.index))


def render_skipped_operations(items: tuple[str, ...]) -> str:
    return join_list(items) if items else "none"


def parse_added_fields(raw: Any) -> tuple[str, ...]:
    """``flattened.add.fields``: ``op``, ``ts_ms``, a source field, or ``source.<source field>``."""
    names = split_list(raw)
    allowed = {*ENVELOPE_FIELDS, *SOURCE_FIELDS, *(f"source.{name}" for name in SOURCE_FIELDS)}
    unknown = [name for name in names if name not in allowed]
    if unknown:
        raise ValueError(
            f"unknown field(s) {', '.join(unknown)}; use op, ts_ms or a source field (db, collection, source.ts_ms…)"
        )
    return names


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


def parse_timestamp_ms(raw: Any) -> int:
    """Milliseconds since the epoch, given as a number or as ISO-8601 text (UTC unless an offset is given)."""
    if isinstance(raw, str) and not re.fullmatch(r"\s*\d+\s*", raw):
        try:
            moment = datetime.datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"expected milliseconds since the epoch or an ISO-8601 time such as 2024-05-01T12:00:00Z, got {raw!r}"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.UTC)
        return int(moment.timestamp() * 1000)
    number = parse_int(raw)
    if number < 0:
        raise ValueError(f"must not be negative, got {number}")
    return number


def parse_connector_class(raw: Any) -> str:
    text = parse_str(raw)
    if text not in ACCEPTED_CONNECTOR_CLASSES:
        raise ValueError(f"this platform runs the MongoDB connector only; use {DEBEZIUM_CONNECTOR_CLASS}")
    return text


def check_topic_name(name: str) -> str:
    if not _TOPIC_NAME.fullmatch(name) or name in {".", ".."}:
        raise ValueError(f"{name!r} is not a valid Kafka topic name: use 1-249 characters among A-Z a-z 0-9 . _ -")
    return name


def check_identifier(name: str) -> str:
    if not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"{name!r} may only contain the characters A-Z a-z 0-9 . _ -")
    return name


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
