"""Debezium PostgreSQL event schemas/values and the offset position rule; the last test builds a whole event from a
change read from the real server (Debezium's documented `customers` example table)."""

from __future__ import annotations

import json
import time

import pytest

from connectors.events.json_converter import envelope as to_json
from connectors.events.json_converter import schema_json
from connectors.events.schema import Field
from connectors.postgres import envelope as e
from connectors.postgres import pgoutput as p
from connectors.postgres.catalog import table_columns
from connectors.postgres.position import OffsetError, Position, offset_key_json
from connectors.postgres.replication import ReplicationStream
from connectors.postgres.rows import RowColumn, RowMapper
from connectors.postgres.types import TypeSettings


def test_source_schema_fields_in_debezium_order():
    schema = json.loads(schema_json(e.source_schema()))
    assert [f["field"] for f in schema["fields"]] == [
        "version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us", "ts_ns",
        "schema", "table", "txId", "lsn", "xmin", "origin", "origin_lsn",
    ]
    assert (schema["name"], schema["version"]) == ("io.debezium.connector.postgresql.Source", 1)
    snapshot = schema["fields"][4]
    assert snapshot == {
        "type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
        "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
        "default": "false", "field": "snapshot",
    }
    assert [f["optional"] for f in schema["fields"]] == [False] * 4 + [True, False, True, True, True] + [False] * 2 + [
        True
    ] * 5


def test_sequence_is_a_json_array_of_decimal_strings():
    assert e.sequence_text(24023119, 24023128) == '["24023119","24023128"]'
    assert e.sequence_text(None, 5) == '[null,"5"]'


def test_key_and_envelope_schemas():
    from connectors.events import schema as s

    key = e.key_schema("srv", "public", "customers", [Field("id", s.int32(optional=True))])
    assert schema_json(key) == (
        '{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],'
        '"optional":false,"name":"srv.public.customers.Key"}'
    )
    row = s.struct([("id", s.int32())], name="ignored")
    envelope = json.loads(schema_json(e.envelope_schema("srv", "public", "customers", row)))
    assert [f["field"] for f in envelope["fields"]] == [
        "before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"
    ]
    assert (envelope["name"], envelope["version"]) == ("srv.public.customers.Envelope", 2)
    assert envelope["fields"][0]["name"] == "srv.public.customers.Value" and envelope["fields"][0]["optional"]
    assert envelope["fields"][4] == {"type": "string", "optional": False, "field": "op"}
    assert envelope["fields"][3]["name"] == "event.block"


def test_position_covers_replayed_changes_including_a_split_transaction():
    # the first Kafka batch ended in the middle of the transaction committed at 500, after its change at 420
    split = Position(lsn_commit=500, lsn_proc=420, tx_id=7)
    assert split.covers(400, 999)  # an earlier transaction
    assert split.covers(500, 410) and split.covers(500, 420)  # its changes already emitted
    assert not split.covers(500, 430)  # the rest of it
    assert not split.covers(600, 100)  # a later transaction
    assert not split.covers_transaction(500)
    done = Position(lsn_commit=500, lsn_proc=530, completed=True)
    assert done.covers(500, 10_000) and done.covers_transaction(500) and not done.covers_transaction(600)


def test_offset_round_trip_and_debezium_offsets():
    position = Position(lsn_commit=500, lsn_proc=420, tx_id=7, ts_usec=1_700_000_000_000_000)
    stored = json.loads(json.dumps(position.offset()))
    assert stored == {"lsn_proc": 420, "lsn_commit": 500, "lsn": 420, "txId": 7, "ts_usec": 1_700_000_000_000_000,
                      "transaction_completed": False}
    assert Position.from_offset(stored) == position
    debezium = {"lsn_proc": 24023128, "lsn_commit": 24023119, "lsn": 24023128, "txId": 555, "ts_usec": 1}
    assert Position.from_offset(debezium) == Position(24023119, 24023128, 555, 1, False)
    assert Position.from_offset({"lsn": 10}) == Position(10, 10)
    with pytest.raises(OffsetError, match="needs lsn"):
        Position.from_offset({"resume_token": "x"})
    assert offset_key_json("inventory-connector", "srv") == '["inventory-connector",{"server":"srv"}]'


def test_a_change_from_the_server_as_a_debezium_event(pg_db):
    pg_db.execute(
        "CREATE TABLE customers (id SERIAL PRIMARY KEY, first_name VARCHAR(255) NOT NULL, "
        "last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL UNIQUE)"
    )
    pg_db.execute("CREATE PUBLICATION pub FOR TABLE customers")
    stream = ReplicationStream(pg_db.dsn, pg_db.name + "_e", ["pub"])
    try:
        stream.start(stream.create_slot(export_snapshot=False).consistent_point)
        pg_db.execute("INSERT INTO customers (first_name, last_name, email) VALUES ('Anne', 'Kretchmar', "
                      "'annek@noanswer.org')")
        wals, deadline = [], time.monotonic() + 30
        while not any(isinstance(w.message, p.Commit) for w in wals) and time.monotonic() < deadline:
            wals += stream.read(timeout=0.5)
    finally:
        stream.close()
    begin = next(w.message for w in wals if isinstance(w.message, p.Begin))
    relation = next(w.message for w in wals if isinstance(w.message, p.Relation))
    insert_wal = next(w for w in wals if isinstance(w.message, p.Insert))
    insert = insert_wal.message
    conn = pg_db.connect()
    with conn.cursor() as cur:
        columns = table_columns(cur, relation.relation_id)
    conn.close()
    rows = RowMapper("row", [RowColumn(c.name, c.type, not c.not_null) for c in columns], TypeSettings())
    value_schema = e.envelope_schema("PostgreSQL_server", relation.namespace, relation.name, rows.schema)
    source = e.SourceInfo(
        version="3.0.0.Final", name="PostgreSQL_server", db=pg_db.name, schema="public", table="customers",
        commit_ts_us=begin.commit_ts_us, tx_id=begin.xid, lsn=insert_wal.data_start, lsn_commit=begin.final_lsn,
        previous_commit=begin.final_lsn - 64,
    )
    event = json.loads(to_json(value_schema, e.envelope_value("c", None, rows.value(insert.new), source, 1)))
    # the row schema exactly as in Debezium's documented create event
    assert event["schema"]["fields"][1] == {
        "type": "struct",
        "fields": [
            {"type": "int32", "optional": False, "field": "id"},
            {"type": "string", "optional": False, "field": "first_name"},
            {"type": "string", "optional": False, "field": "last_name"},
            {"type": "string", "optional": False, "field": "email"},
        ],
        "optional": True, "name": "PostgreSQL_server.public.customers.Value", "field": "after",
    }
    payload = event["payload"]
    assert payload["after"] == {"id": 1, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
    assert payload["before"] is None and payload["op"] == "c" and payload["transaction"] is None
    assert payload["source"]["connector"] == "postgresql" and payload["source"]["txId"] == begin.xid
    assert payload["source"]["ts_ms"] == begin.commit_ts_us // 1000
    # the end LSN of the transaction streamed before, then the change's own
    assert payload["source"]["sequence"] == f'["{begin.final_lsn - 64}","{insert_wal.data_start}"]'
    assert 0 < insert_wal.data_start < begin.final_lsn  # the change's own WAL position, before its commit
