"""Transaction metadata as Kafka messages for the sources whose events go through Kafka Connect's JsonConverter
(PostgreSQL, MySQL/MariaDB): BEGIN and END records on `<topic.prefix>.<topic.transaction>`, keyed `{"id": ...}`
(Debezium's `TransactionMetadataKey` / `TransactionMetadataValue`), and the `transaction` block of change events.

These sources see where a transaction ends (a Commit message, an XID event), so a builder calls `block()` for each
captured change event it builds, produces `take()` (the BEGIN, when that event was the transaction's first captured
one) before it, and calls `end()` at the commit. A transaction with no captured event gets neither BEGIN nor END.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectors.core.transactions import TransactionBoundary, TransactionTracker
from connectors.events import schema as s
from connectors.events.json_converter import envelope
from connectors.kafka.sink import OutMessage

KEY_SCHEMA = s.struct([("id", s.string())], name="io.debezium.connector.common.TransactionMetadataKey", version=1)
_PER_COLLECTION = s.struct([("data_collection", s.string()), ("event_count", s.int64())], name="event.collection",
                           optional=True, version=1)
VALUE_SCHEMA = s.struct(
    [("status", s.string()), ("id", s.string()), ("event_count", s.int64(optional=True)),
     ("data_collections", s.array(_PER_COLLECTION, optional=True)), ("ts_ms", s.int64())],
    name="io.debezium.connector.common.TransactionMetadataValue",
    version=1,
)


class TransactionMessages:
    """One builder's transaction metadata; `state()` goes into each offset record, and back in after a restart."""

    def __init__(self, topic: str, key_schemas: bool, value_schemas: bool, state: Mapping[str, Any] | None = None):
        self.topic = topic
        self.key_schemas = key_schemas
        self.value_schemas = value_schemas
        self.tracker = TransactionTracker(state)
        self._begun: list[OutMessage] = []

    def block(self, transaction_id: str, data_collection: str, ts_ms: int) -> dict[str, Any] | None:
        """The `transaction` block of the next change event of `data_collection`; a BEGIN (and the END of another
        transaction still open) waits in `take()`."""
        boundaries, block = self.tracker.on_event(transaction_id, data_collection, ts_ms)
        self._begun.extend(self.message(boundary) for boundary in boundaries)
        return block

    def take(self) -> list[OutMessage]:
        """The boundaries `block()` produced since the last call: they go before the events built with it."""
        begun, self._begun = self._begun, []
        return begun

    def end(self, ts_ms: int) -> list[OutMessage]:
        """The END of the open transaction (none when it had no captured event)."""
        boundary = self.tracker.end(ts_ms)
        return [*self.take(), self.message(boundary)] if boundary is not None else self.take()

    def state(self) -> dict[str, Any] | None:
        return self.tracker.state()

    def message(self, boundary: TransactionBoundary) -> OutMessage:
        key = envelope(KEY_SCHEMA, {"id": boundary.id}, self.key_schemas)
        value = envelope(VALUE_SCHEMA, boundary.payload(), self.value_schemas)
        return OutMessage(self.topic, key.encode(), value.encode())
