"""Deletes through the whole connector into the real Kafka, as Debezium's PostgreSQL connector writes them: a
delete on a table without a primary key (REPLICA IDENTITY FULL) is followed by a tombstone whose key is null too."""

from __future__ import annotations

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
