"""Deletes through the whole connector into the real Kafka, as Debezium's PostgreSQL connector writes them: a
delete on a table without a primary key (REPLICA IDENTITY FULL) is followed by a tombstone whose key is null too."""

from __future__ import annotations

import json

import pytest

from tests.postgres.test_source import Running, payloads, pg_config
from tests.type_check import records_at_least

pytestmark = [pytest.mark.integration]


def test_a_delete_on_a_keyless_table_is_followed_by_a_tombstone_with_a_null_key(pg_db, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    topic = f"{name}.public.log"
    pg_db.execute("CREATE TABLE log (line text, at int); ALTER TABLE log REPLICA IDENTITY FULL")
    pg_db.execute("INSERT INTO log VALUES ('a', 1)")
    running = Running(pg_config(pg_db, name), bootstrap)
    try:
        records_at_least(running, bootstrap, topic, 1)  # the snapshot's: the delete can only be streamed
        pg_db.execute("DELETE FROM log")
        records = records_at_least(running, bootstrap, topic, 3)
    finally:
        running.stop()
    assert [r.key for r in records] == [None, None, None]
    values = payloads(records)
    assert [v and v["op"] for v in values] == ["r", "d", None]
    assert values[1]["before"] == {"line": "a", "at": 1}


def test_a_key_only_before_fills_not_null_columns_with_debeziums_fallbacks(pg_db, stack, unique_name):
    """REPLICA IDENTITY DEFAULT: a delete's old row holds the key only; a NOT NULL column outside it gets the value
    Debezium's converters fall back to (JdbcValueConverters.convertValue): "", 0, a numeric's 0 in the column's
    decimal form, the point (0,0), an empty array, the epoch in UTC for timestamptz. (Before, a NOT NULL numeric,
    point or array failed the pipeline, a numeric(p, s) was written as empty bytes, a timestamptz as "".)"""
    import base64
    import struct

    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    topic = f"{name}.public.kept"
    pg_db.execute("CREATE TABLE kept (id int PRIMARY KEY, t text NOT NULL, i int NOT NULL, n numeric NOT NULL, "
                  "d numeric(6,2) NOT NULL, p point NOT NULL, a int[] NOT NULL, z timestamptz NOT NULL, o text)")
    pg_db.execute("INSERT INTO kept VALUES (1, 'x', 5, 1.5, 2.25, '(1,2)', '{1}', now(), 'y')")
    running = Running(pg_config(pg_db, name), bootstrap)
    try:
        records_at_least(running, bootstrap, topic, 1)  # the snapshot's row: the delete can only be streamed
        pg_db.execute("DELETE FROM kept")
        records = records_at_least(running, bootstrap, topic, 3)
    finally:
        running.stop()
    zero = base64.b64encode(b"\x00").decode()
    origin = {"x": 0.0, "y": 0.0, "wkb": base64.b64encode(struct.pack("<BIdd", 1, 1, 0.0, 0.0)).decode(), "srid": None}
    assert payloads(records)[1]["before"] == {"id": 1, "t": "", "i": 0, "n": {"scale": 0, "value": zero}, "d": zero,
                                              "p": origin, "a": [], "z": "1970-01-01T00:00:00Z", "o": None}


def test_column_defaults_are_in_the_schema_and_fill_a_key_only_before(pg_db, stack, unique_name):
    """Debezium puts a column's DEFAULT in its field schema (PostgresDefaultValueConverter: a literal, a function's
    placeholder: nextval → 0, now() → the epoch), JsonConverter writes it for a null (replace.null.with.default),
    and so a key-only `before` carries the defaults where the row has nothing."""
    import base64

    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    topic = f"{name}.public.dflt"
    pg_db.execute("CREATE TABLE dflt (id serial PRIMARY KEY, t text NOT NULL DEFAULT 'dflt', n int NOT NULL DEFAULT 7,"
                  " c timestamptz NOT NULL DEFAULT now(), nd numeric(6,2) NOT NULL DEFAULT 1.5, o text DEFAULT 'opt',"
                  " plain text NOT NULL)")
    pg_db.execute("INSERT INTO dflt (t, n, nd, o, plain) VALUES ('x', 1, 2, NULL, 'p')")
    running = Running(pg_config(pg_db, name, **{"schemas.enable": "true"}), bootstrap)
    try:
        records_at_least(running, bootstrap, topic, 1)  # the snapshot's row: the delete can only be streamed
        pg_db.execute("DELETE FROM dflt")
        records = records_at_least(running, bootstrap, topic, 3)
    finally:
        running.stop()
    values = payloads(records)
    fields = {f["field"]: f for f in values[0]["schema"]["fields"][1]["fields"]}
    epoch = "1970-01-01T00:00:00.000000Z"
    assert {name: field.get("default") for name, field in fields.items()} == {
        "id": 0, "t": "dflt", "n": 7, "c": epoch, "nd": base64.b64encode(b"\x00\x96").decode(), "o": "opt",
        "plain": None}
    key_fields = {f["field"]: f for f in json.loads(records[0].key)["schema"]["fields"]}
    assert key_fields["id"]["default"] == 0
    assert values[0]["payload"]["after"]["o"] == "opt"  # a null: JsonConverter writes the default
    assert values[1]["payload"]["before"] == {"id": 1, "t": "dflt", "n": 7, "c": epoch,
                                              "nd": base64.b64encode(b"\x00\x96").decode(), "o": "opt", "plain": ""}
