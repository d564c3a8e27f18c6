"""The latest state of every key of one topic at a source position, read `read_committed` (docs/verify.md).

The topic is read to the end it has once the connector's committed offset covers the position (so every event
at or before it is there); each event whose source block is at or before the position (`covers`) replaces its
key's state, later ones only mark the key as changed since. A truncate event at or before the position empties
every state read before it. Fields an update left out (`placeholder`: PostgreSQL's unavailable TOASTed values)
keep the key's previous value, as a consumer rebuilding the row does.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from connectors import ConnectorError
from connectors.core.verify_events import Event, UnreadableEvent, held_state, key_text, loads, read_event
from connectors.kafka.client_log import with_client_logger
from connectors.kafka.errors import describe
from connectors.kafka.reading import EndNotReached, end_offsets, read_to_end

log = logging.getLogger(__name__)


@dataclass
class TopicState:
    """key (canonical JSON) -> the row's state at the position (`held_state`; deleted keys are absent); `later`: the
    keys with events after the position; `records`: how many records were read."""

    rows: dict[str, str] = field(default_factory=dict)
    later: set[str] = field(default_factory=set)
    records: int = 0


def fill_unavailable(after: dict | str, previous: str | None, placeholder: str | None) -> dict | str:
    if placeholder is None or previous is None or not isinstance(after, dict) or placeholder not in after.values():
        return after
    known = loads(previous)
    return {name: known.get(name, value) if value == placeholder else value for name, value in after.items()}


class TopicReader:
    def __init__(self, bootstrap_servers: str, timeout: float = 120.0, client_config: dict | None = None):
        self.bootstrap_servers = bootstrap_servers
        self.timeout = timeout
        self.client_config = dict(client_config or {})

    def _admin(self) -> AdminClient:
        return AdminClient(with_client_logger({**self.client_config, "bootstrap.servers": self.bootstrap_servers}))

    def _consumer(self) -> Consumer:
        return Consumer(with_client_logger({
            **self.client_config,
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": f"cdc-verify-{uuid.uuid4().hex}",  # assigned, never subscribed; nothing is committed
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 50,
        }))

    def read(self, topic: str, covers: Callable[[dict], bool], placeholder: str | None = None,
             read: Callable[[bytes | None], Event] = read_event,
             read_key: Callable[[bytes | None], str | None] = key_text) -> TopicState:
        state = TopicState()
        consumer = self._consumer()
        try:
            metadata = consumer.list_topics(topic, timeout=self.timeout)
            found = metadata.topics.get(topic)
            if found is None or (found.error is not None
                                 and found.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
                return state  # nothing was ever captured from this table
            partitions = sorted(found.partitions)
            ends = end_offsets(self._admin(), topic, partitions, self.timeout)

            def apply(message) -> None:
                state.records += 1
                try:
                    event = read(message.value())
                    key = read_key(message.key())
                except (ValueError, UnreadableEvent) as error:
                    raise ConnectorError(f"topic {topic!r} holds a record Verify cannot read at partition "
                                         f"{message.partition()} offset {message.offset()}: {error}") from None
                fold(state, key, event, covers, placeholder)

            def on_error(error: KafkaError) -> None:
                if error.fatal() or not error.retriable():
                    raise ConnectorError(f"reading topic {topic!r} failed: {describe(error)}")

            read_to_end(consumer, topic, ends, apply, self.timeout, on_error)
        except EndNotReached as short:
            raise ConnectorError(f"could not read topic {topic!r} to its end within {self.timeout:.0f}s (partitions "
                                 f"{short.pending}); a producer's open transaction may hold it, try again") from None
        except KafkaException as error:
            raise ConnectorError(f"reading topic {topic!r} failed: {describe(error.args[0])}") from None
        finally:
            consumer.close()
        return state


def fold(state: TopicState, key: str | None, event: Event, covers: Callable[[dict], bool],
         placeholder: str | None) -> None:
    """Applies one record to the state (records of a key come in the order they were written)."""
    if event.op == "t":
        if covers(event.source):
            state.rows.clear()
        return
    if key is None:
        return  # a keyless record (a table without a primary key): nothing to compare by
    if event.op is None:  # a tombstone follows its delete event, which said where it was
        if key not in state.later:
            state.rows.pop(key, None)
        return
    if not covers(event.source):
        state.later.add(key)
        return
    if event.after is None:
        state.rows.pop(key, None)
    elif placeholder is None:
        state.rows[key] = held_state(event.after)
    else:
        state.rows[key] = held_state(fill_unavailable(event.after, state.rows.get(key), placeholder))
