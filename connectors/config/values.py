"""Parsing of single configuration values.

Values arrive either as Debezium writes them (strings: ``"true"``, ``"1000"``, ``"a,b"``) or as
JSON natives (``true``, ``1000``, ``["a", "b"]``); both are accepted. Each parser returns the
typed value or raises `ValueError` with a message that says what is expected; the caller adds the
property name.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

from connectors.config.types import (
    ENVELOPE_FIELDS,
    SKIPPABLE_OPERATIONS,
    SOURCE_FIELDS,
)
from connectors.secrets import Secret

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


MAX_MESSAGE_BYTES_DOC = ("max.message.bytes of created topics, in bytes (-1 = the broker's message.max.bytes, "
                         "1,000,000 unless changed): raise it with producer.override.max.request.size for larger "
                         "events.")
MAX_REQUEST_SIZE_DOC = ("The largest message the producer sends, in bytes (librdkafka's message.max.bytes, 1,000 to "
                        "1,000,000,000); a larger one follows message.too.large.policy.")


def parse_max_message_bytes(raw: Any) -> int:
    """A topic's max.message.bytes: -1 lets the broker decide."""
    number = parse_int(raw)
    if number != -1 and not 1 <= number <= 2**31 - 1:
        raise ValueError(f"must be -1 (the broker's default) or 1 to {2**31 - 1} bytes, got {number}")
    return number


def parse_max_request_size(raw: Any) -> int:
    """The producer's largest message (librdkafka's message.max.bytes accepts 1,000 to 1,000,000,000)."""
    number = parse_int(raw)
    if not 1_000 <= number <= 1_000_000_000:
        raise ValueError(f"must be 1,000 to 1,000,000,000 bytes, got {number}")
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


def check_topic_name(name: str) -> str:
    if not _TOPIC_NAME.fullmatch(name) or name in {".", ".."}:
        raise ValueError(f"{name!r} is not a valid Kafka topic name: use 1-249 characters among A-Z a-z 0-9 . _ -")
    return name


def check_identifier(name: str) -> str:
    if not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"{name!r} may only contain the characters A-Z a-z 0-9 . _ -")
    return name


