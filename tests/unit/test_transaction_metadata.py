"""BEGIN/END records of the JsonConverter sources (PostgreSQL, MySQL/MariaDB): the BEGIN waits in `take()` for the
event that opened the transaction, `end()` closes it with its counts, the state resumes after a restart, and the
records are the ones MongoDB's connector writes (same Connect schemas, same payloads)."""

from __future__ import annotations

import json

from connectors.core.transactions import BEGIN, END, TransactionBoundary
from connectors.events.transaction_metadata import TransactionMessages
from connectors.mongodb import connect_schemas


def decoded(messages):
    return [(m.topic, json.loads(m.key), json.loads(m.value)) for m in messages]


def test_begin_before_the_first_event_end_with_counts_and_nothing_for_an_empty_transaction():
    tx = TransactionMessages("p.transaction", False, False)
    assert tx.end(5) == []  # no captured event: neither BEGIN nor END
    assert tx.block("7:100", "public.a", 10) == {"id": "7:100", "total_order": 1, "data_collection_order": 1}
    [(topic, key, begin)] = decoded(tx.take())
    assert topic == "p.transaction" and key == {"id": "7:100"}
    assert begin == {"status": "BEGIN", "id": "7:100", "event_count": None, "data_collections": None, "ts_ms": 10}
    assert tx.take() == []
    assert tx.block("7:100", "public.b", 10)["total_order"] == 2
    assert tx.block("7:100", "public.a", 10) == {"id": "7:100", "total_order": 3, "data_collection_order": 2}
    [(_, _, end)] = decoded(tx.end(11))
    assert end == {"status": "END", "id": "7:100", "event_count": 3, "ts_ms": 11,
                   "data_collections": [{"data_collection": "public.a", "event_count": 2},
                                        {"data_collection": "public.b", "event_count": 1}]}
    assert tx.state() is None


def test_the_state_in_the_offset_resumes_the_open_transaction():
    first = TransactionMessages("p.transaction", False, False)
    first.block("0-1-9", "db.t", 1)
    first.take()
    first.block("0-1-9", "db.t", 1)
    resumed = TransactionMessages("p.transaction", False, False, json.loads(json.dumps(first.state())))
    assert resumed.block("0-1-9", "db.t", 1) == {"id": "0-1-9", "total_order": 3, "data_collection_order": 3}
    assert resumed.take() == []  # no second BEGIN
    [(_, _, end)] = decoded(resumed.end(2))
    assert end["event_count"] == 3


def test_records_with_schemas_are_mongodbs():
    tx = TransactionMessages("p.transaction", True, True)
    for boundary in (TransactionBoundary(BEGIN, "x", 1), TransactionBoundary(END, "x", 2, 1, (("d.c", 1),))):
        message = tx.message(boundary)
        key, value = json.loads(message.key), json.loads(message.value)
        assert key == {"schema": connect_schemas.transaction_key_schema(), "payload": {"id": "x"}}
        assert value == {"schema": connect_schemas.transaction_value_schema(), "payload": boundary.payload()}
