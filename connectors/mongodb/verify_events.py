"""How Verify reads a record of a MongoDB connector's topic (connectors/core/verify_topics.py, docs/verify.md).

Of a change event Verify needs its op, its `after` text and where it was captured: the source block's ts_ms, ord and
snapshot (what `MongoView.covers` reads). The compiled module's `verify_event` reads just those from the record's
JSON without building the rest of the event; what it leaves to Python, and every record when it is not built,
`python_event` reads, which decodes the whole record (verify_events.read_event: a record that is not a change event
is refused there). Both give the same Event; `verify_key` answers for a key already in canonical JSON, as key_text
does (tests/unit/test_verify_rows.py).
"""

from __future__ import annotations

from connectors.core.verify_events import Event, UnreadableEvent, key_text
from connectors.core.verify_events import read_event as read_any_event
from connectors.mongodb.rawjson import compiled

PLACING_FIELDS = ("ts_ms", "ord", "snapshot")  # of the source block


def python_event(value: bytes) -> Event:
    event = read_any_event(value)
    source = event.source
    if not isinstance(source, dict):
        raise UnreadableEvent(f"a change event's source block is not an object: {source!r}")
    return Event(event.op, event.after, {name: source[name] for name in PLACING_FIELDS if name in source})


def read_key(key: bytes | None) -> str | None:
    """The record key as canonical JSON (key_text); the compiled module answers for a key that already is."""
    if key is not None and compiled is not None:
        text = compiled.verify_key(key)
        if text is not None:
            return text
    return key_text(key)


def read_event(value: bytes | None) -> Event:
    if value is None:
        return read_any_event(None)
    if compiled is not None:
        event = compiled.verify_event(value, Event)
        if event is not None:
            return event
    return python_event(value)
