"""Transaction boundaries and the transaction block, including resuming from stored state."""

from __future__ import annotations

import json

from connectors.core.transactions import BEGIN, END, TransactionBoundary, TransactionTracker
from connectors.mongodb.records import ChangeRecord, Namespace, Operation


def record(txn: int | None, collection: str = "a") -> ChangeRecord:
    lsid = {"id": "session"} if txn is not None else None
    return ChangeRecord(Operation.CREATE, Namespace("db", collection), {"_id": 1}, lsid=lsid, txn_number=txn)


def tx_of(txn: int | None, collection: str = "a") -> str | None:
    """The transaction id a MongoDB change record gives the tracker."""
    return record(txn, collection).transaction_id


def tx_id(txn: int) -> str:
    return f'{{"id": "session"}}:{txn}'


def test_events_outside_transactions_have_no_block_and_no_boundaries():
    tracker = TransactionTracker()
    assert tracker.on_event(tx_of(None), "rs0.db.a", 1) == ([], None)
    assert tracker.state() is None
    assert tracker.end(2) is None


def test_a_transaction_begins_counts_and_ends():
    tracker = TransactionTracker()
    boundaries, block = tracker.on_event(tx_of(1, "a"), "rs0.db.a", 100)
    assert boundaries == [TransactionBoundary(BEGIN, tx_id(1), 100)]
    assert block == {"id": tx_id(1), "total_order": 1, "data_collection_order": 1}
    boundaries, block = tracker.on_event(tx_of(1, "b"), "rs0.db.b", 100)
    assert boundaries == []
    assert block == {"id": tx_id(1), "total_order": 2, "data_collection_order": 1}
    _, block = tracker.on_event(tx_of(1, "a"), "rs0.db.a", 100)
    assert block == {"id": tx_id(1), "total_order": 3, "data_collection_order": 2}
    assert tracker.open_transaction_id == tx_id(1)

    boundaries, block = tracker.on_event(tx_of(None), "rs0.db.a", 200)
    assert block is None
    assert boundaries == [TransactionBoundary(END, tx_id(1), 200, 3, (("rs0.db.a", 2), ("rs0.db.b", 1)))]
    assert tracker.open_transaction_id is None


def test_a_new_transaction_ends_the_previous_one():
    tracker = TransactionTracker()
    tracker.on_event(tx_of(1), "rs0.db.a", 100)
    boundaries, block = tracker.on_event(tx_of(2), "rs0.db.a", 300)
    assert [(b.status, b.id) for b in boundaries] == [(END, tx_id(1)), (BEGIN, tx_id(2))]
    assert block["total_order"] == 1


def test_idle_end():
    tracker = TransactionTracker()
    tracker.on_event(tx_of(1), "rs0.db.a", 100)
    ended = tracker.end(500)
    assert ended == TransactionBoundary(END, tx_id(1), 500, 1, (("rs0.db.a", 1),))
    assert tracker.end(600) is None


def test_state_survives_a_restart_without_a_second_begin():
    tracker = TransactionTracker()
    tracker.on_event(tx_of(1, "a"), "rs0.db.a", 100)
    tracker.on_event(tx_of(1, "b"), "rs0.db.b", 100)
    state = json.loads(json.dumps(tracker.state()))  # as stored in the offset record

    resumed = TransactionTracker(state)
    boundaries, block = resumed.on_event(tx_of(1, "a"), "rs0.db.a", 100)
    assert boundaries == []
    assert block == {"id": tx_id(1), "total_order": 3, "data_collection_order": 2}
    assert resumed.end(1).event_count == 3


def test_boundary_payloads():
    assert TransactionBoundary(BEGIN, "t", 5).payload() == {
        "status": "BEGIN",
        "id": "t",
        "event_count": None,
        "data_collections": None,
        "ts_ms": 5,
    }
    assert TransactionBoundary(END, "t", 6, 1, (("c", 1),)).payload()["data_collections"] == [
        {"data_collection": "c", "event_count": 1}
    ]
