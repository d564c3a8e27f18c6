"""How Verify reads one Kafka message of a table's topic: its key and the row state it leaves (docs/verify.md).

Both sides of a comparison go through here: the source's rows are built by the connector's own code into what a
snapshot writes (so types, masks, excluded columns and renamed fields are applied alike): the snapshot's messages,
read back like the topic's records (`rows_of_messages`), or straight the key and `after` JSON the snapshot's event
carries. A row state is the event's `after` as canonical JSON (keys sorted), or None for a deleted row (a delete
event or a tombstone).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

import orjson

DELETED = None

# A source row as its snapshot event holds it: its key as canonical JSON (`key_text`; None: no key), and the state
# its `after` leaves (`held_state`)
SourceRow = tuple[str | None, str]


class UnreadableEvent(ValueError):
    """A record that is not a Debezium change event Verify can compare (e.g. a flattened format)."""


def canonical(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # an integer beyond 64 bits
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def loads(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:  # e.g. an integer beyond 64 bits, which json reads
        return json.loads(data)


def key_text(key: bytes | None) -> str | None:
    """The record key as canonical JSON (a JsonConverter `{"schema", "payload"}` wrapping is removed)."""
    if key is None:
        return None
    decoded = loads(key)
    if isinstance(decoded, dict) and set(decoded) == {"schema", "payload"}:
        decoded = decoded["payload"]
    return canonical(decoded)


class Event(NamedTuple):
    """One record read back: `op` (c, u, d, r, t; None for a tombstone), the row after it (a dict; MongoDB's
    document as its Extended JSON text, a str; None when deleted), and its source block (where it was captured).
    A named tuple: one is built per record, and a frozen dataclass costs several times more to build."""

    op: str | None
    after: dict | str | None
    source: dict


def read_event(value: bytes | None) -> Event:
    if value is None:
        return Event(None, DELETED, {})
    decoded = loads(value)
    if isinstance(decoded, dict) and "payload" in decoded and "schema" in decoded:
        decoded = decoded["payload"]
    if not isinstance(decoded, dict) or "op" not in decoded or "source" not in decoded:
        raise UnreadableEvent("a record is not a Debezium change event (op, source, after): Verify compares the "
                              "Debezium envelope formats only")
    op = decoded["op"]
    return Event(op, DELETED if op == "d" else decoded.get("after"), decoded.get("source") or {})


def rows_of_messages(messages: Iterable, topic: str) -> list[SourceRow]:
    """The (key, state) of each snapshot message (connectors.kafka.sink.OutMessage) of `topic` that has a row."""
    rows = []
    for message in messages:
        if message.topic == topic and message.value is not None:
            after = read_event(message.value).after
            if after is not None:
                rows.append((key_text(message.key), held_state(after)))
    return rows


def row_state(after: Any) -> str:
    """A row's state: its `after` (a dict, or its JSON text) as canonical JSON."""
    return canonical(loads(after) if isinstance(after, (bytes, str)) else after)


def held_state(after: dict | str) -> str:
    """The state a topic's event leaves: MongoDB's document text as the event holds it (the source side writes the
    same text with the same code: `same_row` compares them as they are), any other `after` as canonical JSON."""
    return after if isinstance(after, str) else canonical(after)


def same_row(source: str, topic: str) -> bool:
    """Whether two row states hold the same row: the same text, or the same canonical JSON (a text in another
    field order or spacing; decoded only when the texts differ)."""
    return source == topic or row_state(source) == row_state(topic)


def field_diff(source: dict | None, topic: dict | None) -> dict:
    """{field: [source value, topic value]} for every top-level field that differs."""
    source, topic = source or {}, topic or {}
    return {name: [source.get(name), topic.get(name)] for name in sorted({*source, *topic})
            if canonical(source.get(name)) != canonical(topic.get(name))}
