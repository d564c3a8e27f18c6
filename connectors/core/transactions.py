"""Transaction metadata (``provide.transaction.metadata``), as Debezium's TransactionMonitor does it.

A source hands the tracker each captured change event with its transaction's id (None outside one). The
tracker turns that into BEGIN and END boundaries and the ``transaction`` block of each change event
(``id``, ``total_order``, ``data_collection_order``): BEGIN comes before the transaction's first captured
event; END when an event of another transaction or outside any arrives, or when the source says the
transaction is over (`end`: MongoDB's idle stream, a PostgreSQL Commit, a binlog XID/COMMIT).

Its state is small and JSON-ready, so the pipeline stores it in the offset record: after a crash the
resumed stream continues the open transaction instead of beginning it twice, and its END counts every
event, also those committed to Kafka before the crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connectors.core import java_hash_map

BEGIN = "BEGIN"
END = "END"


@dataclass(frozen=True)
class TransactionBoundary:
    status: str  # BEGIN or END
    id: str
    ts_ms: int
    event_count: int | None = None
    data_collections: tuple[tuple[str, int], ...] | None = None  # (data collection, event count), Debezium's order

    def payload(self) -> dict[str, Any]:
        collections = None
        if self.data_collections is not None:
            collections = [{"data_collection": name, "event_count": count} for name, count in self.data_collections]
        return {
            "status": self.status,
            "id": self.id,
            "event_count": self.event_count,
            "data_collections": collections,
            "ts_ms": self.ts_ms,
        }


@dataclass
class _OpenTransaction:
    id: str
    total: int = 0
    per_collection: dict[str, int] = field(default_factory=dict)


class TransactionTracker:
    def __init__(self, state: Mapping[str, Any] | None = None) -> None:
        self._open: _OpenTransaction | None = None
        self._capacity = java_hash_map.DEFAULT_CAPACITY  # of Debezium's per-collection HashMap, which clear() keeps
        if state:
            self._open = _OpenTransaction(state["id"], int(state["total"]), dict(state["per_collection"]))

    @property
    def open_transaction_id(self) -> str | None:
        return self._open.id if self._open else None

    def state(self) -> dict[str, Any] | None:
        """JSON-ready state for the offset record; None when no transaction is open."""
        if self._open is None:
            return None
        return {"id": self._open.id, "total": self._open.total, "per_collection": dict(self._open.per_collection)}

    def on_event(
        self, transaction_id: str | None, data_collection: str, ts_ms: int
    ) -> tuple[list[TransactionBoundary], dict[str, Any] | None]:
        """Boundaries to emit before this event, and the event's ``transaction`` block (None outside one)."""
        boundaries: list[TransactionBoundary] = []
        if self._open is not None and self._open.id != transaction_id:
            boundaries.append(self._end(ts_ms))
        if transaction_id is None:
            return boundaries, None
        if self._open is None:
            self._open = _OpenTransaction(transaction_id)
            boundaries.append(TransactionBoundary(BEGIN, transaction_id, ts_ms))
        self._open.total += 1
        order = self._open.per_collection.get(data_collection, 0) + 1
        self._open.per_collection[data_collection] = order
        block = {"id": transaction_id, "total_order": self._open.total, "data_collection_order": order}
        return boundaries, block

    def end(self, ts_ms: int) -> TransactionBoundary | None:
        """Close the open transaction (its end, idle stream, heartbeat); None if none is open."""
        return self._end(ts_ms) if self._open is not None else None

    def _end(self, ts_ms: int) -> TransactionBoundary:
        assert self._open is not None
        counts = self._open.per_collection
        self._capacity = java_hash_map.capacity_for(len(counts), self._capacity)
        ended = TransactionBoundary(
            END,
            self._open.id,
            ts_ms,
            event_count=self._open.total,
            # in Debezium's order: its TransactionContext counts them in a HashMap
            data_collections=tuple((name, counts[name])
                                   for name in java_hash_map.iteration_order(counts, self._capacity)),
        )
        self._open = None
        return ended
