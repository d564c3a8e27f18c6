"""The Spark templates read a PostgreSQL connector's topics as they read MongoDB's: events of a real connector (a
snapshot, then inserts, updates and a delete streamed) give the right latest state, per-op counts and SQL views."""

from __future__ import annotations

import json

import pytest

from tests.postgres.test_source import Running, events, pg_config
from tests.spark.conftest import run_job, spark  # noqa: F401 - fixtures

pytestmark = [pytest.mark.integration]


@pytest.fixture
def topic(pg_db, stack, unique_name):
    name = "pgs" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE orders (id int PRIMARY KEY, qty int NOT NULL, note text)")
    pg_db.execute("INSERT INTO orders SELECT g, g, 'snapshot' FROM generate_series(1, 5) g")
    running = Running(pg_config(pg_db, name), stack.kafka_bootstrap)
    topic = f"{name}.public.orders"
    try:
        events(stack.kafka_bootstrap, topic, 5)
        pg_db.execute("UPDATE orders SET qty = 10, note = 'streamed' WHERE id = 1")
        pg_db.execute("DELETE FROM orders WHERE id = 2")
        pg_db.execute("INSERT INTO orders VALUES (6, 6, NULL)")
        events(stack.kafka_bootstrap, topic, 5 + 4)  # u, d, its tombstone, c
    finally:
        running.stop()
    return topic


def test_latest_state_stats_and_sql_over_postgres_events(run_job, topic, pg_db, stack, tmp_path):  # noqa: F811
    base = {"bootstrap_servers": stack.kafka_bootstrap, "topics": [topic]}
    code, lines = run_job("latest_state", {**base, "output_path": str(tmp_path / "state")})
    assert code == 0, lines[-1]
    preview = lines[-1]["preview"]
    rows = [dict(zip(preview["columns"], row, strict=True)) for row in preview["rows"]]
    state = {json.loads(row["id"]): json.loads(row["document"]) for row in rows}
    assert state == {1: {"id": 1, "qty": 10, "note": "streamed"}, 3: {"id": 3, "qty": 3, "note": "snapshot"},
                     4: {"id": 4, "qty": 4, "note": "snapshot"}, 5: {"id": 5, "qty": 5, "note": "snapshot"},
                     6: {"id": 6, "qty": 6, "note": None}}

    code, lines = run_job("stats", {**base, "window": "1 hour", "output_path": str(tmp_path / "stats")})
    assert code == 0, lines[-1]
    assert lines[-1]["totals"] == {"r": 5, "u": 1, "d": 1, "c": 1}

    view = topic.replace(".", "_")
    code, lines = run_job("sql", {**base, "output_path": str(tmp_path / "sql"),
                                  "sql": f"SELECT db, collection, count(*) AS n FROM {view}_latest GROUP BY 1, 2"})  # noqa: S608
    assert code == 0, lines[-1]
    assert lines[-1]["preview"]["rows"] == [[pg_db.name, "public.orders", 5]], lines[-1]["preview"]
