"""The transformer stage of a pipeline: ChangeRecord in, Kafka messages out. Pure and synchronous.

For each record: drop it if the namespace lists or ``skipped.operations`` exclude it; apply the field
rules of its collection; track transactions (``provide.transaction.metadata``); build the change
event, its tombstone and any transaction boundaries, in the order they must be produced.

The pipeline also calls `idle()` when the stream has caught up (it closes an open transaction,
whose END would otherwise wait for the next change), `heartbeat()` when ``heartbeat.interval.ms``
elapses without a captured change, and stores `transaction_state()` in each offset record.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

from connectors.core.transactions import TransactionTracker
from connectors.mongodb import envelopes
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.events import EventBuilder, KafkaMessage
from connectors.mongodb.field_rules import DocumentTransform, FieldRules
from connectors.mongodb.filters import EventFilter
from connectors.mongodb.rawjson import decoded
from connectors.mongodb.records import ChangeRecord


class Transformer:
    def __init__(
        self,
        config: ConnectorConfig,
        replica_set: str,
        *,
        clock: Callable[[], float] = time.time,
        transaction_state: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.replica_set = replica_set
        self.filter = EventFilter.from_config(config)
        self.field_rules = FieldRules.from_config(config)
        self.events = EventBuilder(config, replica_set, clock=clock)
        self.transactions = TransactionTracker(transaction_state) if config.provide_transaction_metadata else None

    def accepts(self, record: ChangeRecord) -> bool:
        return self.filter.accepts(record)

    def transform(self, record: ChangeRecord) -> list[KafkaMessage]:
        """The messages for one record, in produce order; empty when the record is filtered out."""
        if not self.filter.accepts(record):
            return []
        rules = self.field_rules.for_namespace(record.namespace)
        shaped = apply_field_rules(record, rules)
        ts_ms = self.events.now_ms()
        messages: list[KafkaMessage] = []
        block = None
        if self.transactions is not None and not record.is_snapshot:
            data_collection = self.events.data_collection(record)
            event_time = envelopes.event_ms(record, self.events.context)
            event_time = ts_ms if event_time is None else event_time
            boundaries, block = self.transactions.on_event(shaped.transaction_id, data_collection, event_time)
            messages.extend(self.events.transaction_message(boundary) for boundary in boundaries)
        document_filter = rules.document(record.document_key)
        messages.extend(self.events.change_messages(shaped, block, document_filter=document_filter, ts_ms=ts_ms))
        return messages

    def snapshot_row(self, record: ChangeRecord) -> tuple[bytes, str | None] | None:
        """The key and `after` text of a snapshot read's change event, without building the event (what Verify
        compares); None when the record is filtered out."""
        if not self.filter.accepts(record):
            return None
        shaped = apply_field_rules(record, self.field_rules.for_namespace(record.namespace))
        return self.events.key(shaped), envelopes.document_text(shaped.full_document, self.events.context)

    def idle(self) -> list[KafkaMessage]:
        """The END of an open transaction, if any: the stream has caught up, so the transaction is complete."""
        if self.transactions is None:
            return []
        boundary = self.transactions.end(self.events.now_ms())
        return [self.events.transaction_message(boundary)] if boundary is not None else []

    def heartbeat(self) -> list[KafkaMessage]:
        """A heartbeat record (after closing any open transaction)."""
        return [*self.idle(), self.events.heartbeat_message()]

    def transaction_state(self) -> dict[str, Any] | None:
        return self.transactions.state() if self.transactions is not None else None


def apply_field_rules(record: ChangeRecord, rules: DocumentTransform) -> ChangeRecord:
    if rules.is_identity:
        return record
    return dataclasses.replace(
        record,
        full_document=rules.document(decoded(record.full_document)),
        full_document_before_change=rules.document(decoded(record.full_document_before_change)),
        update_description=rules.update_description(record.update_description),
    )
