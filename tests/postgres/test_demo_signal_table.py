"""The demo's PostgreSQL connector can take ad-hoc snapshots: its schema has Debezium's signal table and the
connector names it (on a database of the test's own, never the demo's)."""

from __future__ import annotations

from connectors.postgres import preflight
from connectors.postgres.config import PostgresConfig
from devstack import demo_sql


def test_demo_connector_has_a_usable_signal_table(pg_db):
    demo_sql.prepare_postgres(pg_db.dsn)
    demo_sql.prepare_postgres(pg_db.dsn)  # a second demo start leaves it as it is
    config = PostgresConfig.from_properties(demo_sql.postgres_properties("demo-pg", dsn=pg_db.dsn))
    assert config.signal_data_collection == "shop.dbz_signal"
    assert preflight.problems(config) == []
