"""Debezium MySQL / MariaDB change events from a table map: the connector class names the source block, key and
tombstone, column filters, masks and truncation, message.key.columns, schemas on and off."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from pymysqlreplication.constants import FIELD_TYPE

from connectors import ConnectorError
from connectors.mysql.binlog import ColumnInfo, TableSchema
from connectors.mysql.config import MySqlConfig
from connectors.mysql.envelope import SourceInfo, TableEvents

BASE = {"name": "m1", "database.hostname": "db", "database.user": "cdc", "database.server.id": "5400",
        "topic.prefix": "srv"}
TABLE = TableSchema("shop", "users", (
    ColumnInfo("id", FIELD_TYPE.LONG, False, primary=True),
    ColumnInfo("email", FIELD_TYPE.VARCHAR, True, charset="utf8mb4"),
    ColumnInfo("secret", FIELD_TYPE.VARCHAR, True, charset="utf8mb4"),
    ColumnInfo("team", FIELD_TYPE.LONG, False),
))
ROW = {"id": 7, "email": "someone@example.com", "secret": "hunter2", "team": 3}
SOURCE = SourceInfo("shop", "users", 1_700_000_000_000, 1, "mariadb-bin.000001", 400, 0, "false", "0-1-9", 12)


def events(**props) -> TableEvents:
    """The table's events with schemas on, unless `props` turn them off."""
    return TableEvents(MySqlConfig.from_properties({**BASE, "schemas.enable": "true", **props}), TABLE)


def test_mariadb_and_mysql_classes_name_their_source():
    for connector_class, connector in (("io.debezium.connector.mariadb.MariaDbConnector", "mariadb"),
                                       ("io.debezium.connector.mysql.MySqlConnector", "mysql")):
        message = events(**{"connector.class": connector_class}).messages("c", None, ROW, SOURCE)[0]
        value = json.loads(message.value)
        assert value["schema"]["fields"][2]["name"] == f"io.debezium.connector.{connector}.Source"
        assert value["payload"]["source"]["connector"] == connector
        assert message.topic == "srv.shop.users"
        assert json.loads(message.key) == {
            "schema": {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}],
                       "optional": False, "name": "srv.shop.users.Key"},
            "payload": {"id": 7}}


def test_envelope_fields_in_debeziums_order():
    order = ["before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
    built = events()
    value = json.loads(built.messages("c", None, ROW, SOURCE)[0].value)
    assert [f["field"] for f in value["schema"]["fields"]] == order and list(value["payload"]) == order
    parts = built.streamed_parts("c", SOURCE, 1_700_000_000_000_000_000)
    streamed = json.loads(f"{parts[0]}null{parts[1]}{{}}{parts[2]}0{parts[3]}")
    assert list(streamed["payload"]) == order


def test_delete_tombstone_and_schemas_off():
    delete, tombstone = events(**{"value.converter.schemas.enable": "false",
                                  "key.converter.schemas.enable": "false"}).messages("d", ROW, None, SOURCE)
    assert json.loads(delete.key) == {"id": 7} and tombstone.key == delete.key and tombstone.value is None
    payload = json.loads(delete.value)
    assert payload["op"] == "d" and payload["after"] is None and payload["before"]["email"] == "someone@example.com"
    assert payload["source"]["gtid"] == "0-1-9" and payload["source"]["thread"] == 12
    assert payload["source"]["ts_us"] == 1_700_000_000_000_000
    assert len(events(**{"tombstones.on.delete": "false"}).messages("d", ROW, None, SOURCE)) == 1


def test_columns_masks_truncation_and_key_columns():
    built = events(**{"column.exclude.list": r"shop\.users\.team", "column.mask.with.4.chars": r"shop\.users\.secret",
                      "column.truncate.to.4.chars": r"shop\.users\.email", "message.key.columns": r"shop\.users:email",
                      "value.converter.schemas.enable": "false", "key.converter.schemas.enable": "false"})
    message = built.messages("c", None, ROW, SOURCE)[0]
    assert json.loads(message.value)["after"] == {"id": 7, "email": "some", "secret": "****"}
    assert json.loads(message.key) == {"email": "some"}


def test_transaction_block_is_written_as_json_converter_writes_it():
    from connectors.events import json_converter

    built = events()
    block = {"id": "0-1-9", "total_order": 3, "data_collection_order": 2}
    row = built.row(ROW)
    fast = built.encode_value("u", row, row, SOURCE, 123456789, block)
    assert fast == json_converter.value_json(built.value_schema, built.value("u", row, row, SOURCE, 123456789, block))
    assert json.loads(built.messages("c", None, ROW, SOURCE, block)[0].value)["payload"]["transaction"] == block


def test_column_rules_are_case_insensitive_and_key_columns_are_checked():
    """The rules shared with PostgreSQL (connectors/core/columns.py): whole-name case-insensitive regexes."""
    built = events(**{"column.exclude.list": r"SHOP\.users\.TEAM", "message.key.columns": r"shop\.USERS:Email,ID",
                      "value.converter.schemas.enable": "false", "key.converter.schemas.enable": "false"})
    message = built.messages("c", None, ROW, SOURCE)[0]
    assert json.loads(message.value)["after"] == {"id": 7, "email": "someone@example.com", "secret": "hunter2"}
    assert json.loads(message.key) == {"email": "someone@example.com", "id": 7}
    with pytest.raises(ConnectorError, match="message.key.columns names nickname for shop.users"):
        events(**{"message.key.columns": r"shop\.users:nickname"})
    with pytest.raises(ConnectorError, match="primary key of shop.users has id"):
        events(**{"column.exclude.list": r"shop\.users\.id"})


def test_masked_hashed_and_truncated_columns_mark_their_schemas():
    """Debezium's column mappers' parameters, for the rule whose value change is applied: `masked` (a mask or hash),
    `truncateLength` when a value can be cut (VARCHAR(n) longer than N, TEXT, ENUM), after the type's own (an enum's
    `allowed`); the key schema's fields are the row's."""
    table = TableSchema("shop", "users", (
        ColumnInfo("id", FIELD_TYPE.VARCHAR, False, charset="utf8mb4", collation="utf8mb4_general_ci", max_length=40,
                   primary=True),
        ColumnInfo("code", FIELD_TYPE.VARCHAR, True, charset="utf8mb4", collation="utf8mb4_general_ci", max_length=12),
        ColumnInfo("bio", FIELD_TYPE.BLOB, True, charset="utf8mb4", collation="utf8mb4_general_ci", length_size=2),
        ColumnInfo("mood", FIELD_TYPE.ENUM, True, enum_values=("happy", "sad")),
        ColumnInfo("pin", FIELD_TYPE.STRING, True, charset="latin1", collation="latin1_swedish_ci", max_length=8),
        ColumnInfo("team", FIELD_TYPE.LONG, True),
    ))
    config = MySqlConfig.from_properties({**BASE, "schemas.enable": "true",
                                          "column.truncate.to.3.chars": r"shop\.users\..*",
                                          "column.mask.hash.SHA-256.with.salt.s": r"shop\.users\.(id|team)",
                                          "column.mask.with.2.chars": r"shop\.users\.pin"})
    built = TableEvents(config, table)
    params = {f.name: f.schema.params for f in built.row_schema.fields}
    assert params == {"id": {"masked": "true"}, "code": {}, "bio": {"truncateLength": "3"},
                      "mood": {"allowed": "happy,sad", "truncateLength": "3"}, "pin": {"masked": "true"},
                      "team": {}}
    row = {"id": "alice", "code": "abc", "bio": "a long text", "mood": "happy", "pin": "1234", "team": 3}
    message = built.messages("c", None, row, SOURCE)[0]
    key, value = json.loads(message.key), json.loads(message.value)
    assert key["schema"]["fields"] == [{"type": "string", "optional": False, "parameters": {"masked": "true"},
                                        "field": "id"}]
    assert len(key["payload"]["id"]) == 10  # the hash, cut to VARCHAR(10)
    after = {f["field"]: f for f in value["schema"]["fields"][1]["fields"]}
    assert list(after["mood"]["parameters"].items()) == [("allowed", "happy,sad"), ("truncateLength", "3")]
    assert after["pin"] == {"type": "string", "optional": True, "parameters": {"masked": "true"}, "field": "pin"}
    assert value["payload"]["after"] == {"id": key["payload"]["id"], "code": "abc", "bio": "a l", "mood": "hap",
                                         "pin": "**", "team": 3}



def test_streamed_parts_of_one_event_after_another_are_each_events_own():
    """The parts a TableEvents keeps from the previous rows event are used only while what they hold is the same: each
    event's value is what `messages` writes for it, and its parts those of a TableEvents that saw no other event."""
    sources = [SOURCE, replace(SOURCE, pos=900), replace(SOURCE, gtid="0-1-10"),
               replace(SOURCE, ts_ms=1_700_000_001_000), replace(SOURCE, thread=None),
               replace(SOURCE, query="INSERT INTO users VALUES (7)"),
               replace(SOURCE, server_id=2), replace(SOURCE, file="mariadb-bin.000002"),
               replace(SOURCE, snapshot="true"), replace(SOURCE, database="shop2"), replace(SOURCE, table="users2")]
    for props in ({}, {"value.converter.schemas.enable": "false"}):
        built = events(**props)
        for source in sources + sources[::-1]:
            for op, now_ns in (("c", 1_700_000_000_000_000_000), ("d", 1_700_000_000_000_000_000),
                               ("d", 1_700_000_000_000_000_001)):
                parts = built.streamed_parts(op, source, now_ns)
                assert parts == events(**props).streamed_parts(op, source, now_ns)
                before, after = (None, ROW) if op == "c" else (ROW, None)
                expected = built.messages(op, before, after, replace(source, row=3), now_ns=now_ns)[0].value
                assert built.streamed_value(parts, before, after, 3) == expected
