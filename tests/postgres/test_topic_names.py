"""Tables whose names hold characters Kafka refuses in topic names, through the whole connector into the real
Kafka: as Debezium's topic naming, each such character becomes `_` in the topic and in the schemas' names (which
follow the topic's), while `source.table` keeps the table's own name."""

from __future__ import annotations

import pytest

from tests.postgres.test_source import Running, payloads, pg_config
from tests.type_check import records_at_least

pytestmark = [pytest.mark.integration]


def test_a_table_name_kafka_refuses_in_a_topic_is_sanitised(pg_db, stack, unique_name):
    bootstrap = stack.kafka_bootstrap
    name = "pg" + unique_name.replace("-", "")[-12:]
    pg_db.execute('CREATE TABLE "order$items" (id int PRIMARY KEY); CREATE TABLE "line items" (id int PRIMARY KEY)')
    pg_db.execute('INSERT INTO "order$items" VALUES (1); INSERT INTO "line items" VALUES (2)')
    running = Running(pg_config(pg_db, name, **{"schemas.enable": "true"}), bootstrap)
    try:
        snapshot = {table: records_at_least(running, bootstrap, f"{name}.public.{topic}", 1)
                    for table, topic in (("order$items", "order_items"), ("line items", "line_items"))}
        pg_db.execute('INSERT INTO "order$items" VALUES (3)')
        streamed = records_at_least(running, bootstrap, f"{name}.public.order_items", 2)
    finally:
        running.stop()
    for table, records in (*snapshot.items(), ("order$items", streamed)):
        topic = f"{name}.public.{table.replace('$', '_').replace(' ', '_')}"
        for value in payloads(records):
            assert value["schema"]["name"] == f"{topic}.Envelope"
            assert value["schema"]["fields"][0]["name"] == f"{topic}.Value"
            assert value["payload"]["source"]["table"] == table
