"""The pipeline's batch path for PostgreSQL (`PgEventBuilder.build_changes`, `position_after_changes`) gives what
`build` and `position_after` give change by change, and the WAL reader's compiled path the changes its Python path
makes: WAL changes of a random workload read from a real slot (inserts,
updates with and without a key change, deletes, truncates, a schema change mid-stream, tables keyed, unkeyed and with
REPLICA IDENTITY FULL, transactions of one to forty changes), under configurations that take the streamed fast path
and those that go through `build`."""

from __future__ import annotations

import random
import threading

import pytest
from psycopg2 import sql

from connectors.core.metrics import StreamingMetrics
from connectors.core.stream import Backoff
from connectors.postgres import events, stream
from connectors.postgres.events import PgEventBuilder
from connectors.postgres.pgoutput import Commit, Relation
from connectors.postgres.replication import ReplicationStream
from connectors.postgres.source import connect_sql, position_after, position_after_changes
from connectors.postgres.stream import Acknowledger, WalChange, WalReader
from tests.built_together import assert_built_together_as_alone
from tests.postgres.test_source import pg_config

pytestmark = [pytest.mark.integration]

CONFIGS = {
    "default": {},
    "schemas": {"key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"},
    "no-tombstones": {"tombstones.on.delete": "false"},
    "skip-updates-and-inserts": {"skipped.operations": "u,c"},
    "transactions": {"provide.transaction.metadata": "true"},
    "some-tables": {"table.exclude.list": "public.unkeyed"},
}


class Collected:
    """What a WalReader queues, kept in a list (the reader's ChangeQueue)."""

    max_bytes = 0  # no byte bound

    def __init__(self) -> None:
        self.items: list = []
        self.commits = 0
        self.changed = threading.Condition()

    def put_many(self, items: list, timeout: float | None = None, item_bytes: int = 0) -> int:
        with self.changed:
            self.items.extend(items)
            self.commits += sum(1 for item in items if type(item) is WalChange and type(item.message) is Commit)
            self.changed.notify_all()
        return len(items)


def _workload(pg_db, rng: random.Random) -> int:
    """Random transactions on three tables; returns how many committed."""
    conn = pg_db.connect(autocommit=False)
    keys = {"keyed": [], "whole": []}
    next_key = 1
    transactions = 0
    try:
        with conn.cursor() as cur:
            for number in range(120):
                if number in (20, 60, 100):  # a Relation message between two inserts into the table
                    for step in ("insert", "alter", "insert"):
                        if step == "alter":
                            cur.execute(f"ALTER TABLE keyed ADD COLUMN extra{number} int DEFAULT 7")
                            continue
                        cur.execute("INSERT INTO keyed (id, label) VALUES (%s, 'around a schema change')",
                                    (next_key,))
                        keys["keyed"].append(next_key)
                        next_key += 1
                for _ in range(rng.randint(1, 40)):
                    table = rng.choice(["keyed", "whole", "unkeyed"])
                    name = sql.Identifier(table)
                    action = rng.random()
                    if table == "unkeyed":
                        cur.execute("INSERT INTO unkeyed VALUES (%s, %s)", (rng.randrange(100), f"u{next_key}"))
                    elif action < 0.5 or not keys[table]:
                        cur.execute(sql.SQL("INSERT INTO {} (id, label, big) VALUES (%s, %s, %s)").format(name),
                                    (next_key, f"label {next_key}", "x" * rng.choice([0, 10, 9000])))
                        keys[table].append(next_key)
                        next_key += 1
                    elif action < 0.75:
                        cur.execute(sql.SQL("UPDATE {} SET label = %s WHERE id = %s").format(name),
                                    (f"changed {rng.random()}", rng.choice(keys[table])))
                    elif action < 0.85:
                        old = rng.choice(keys[table])
                        cur.execute(sql.SQL("UPDATE {} SET id = %s WHERE id = %s").format(name), (next_key, old))
                        keys[table][keys[table].index(old)] = next_key
                        next_key += 1
                    else:
                        old = rng.choice(keys[table])
                        cur.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(name), (old,))
                        keys[table].remove(old)
                if number in (30, 90):
                    cur.execute("TRUNCATE whole")
                    keys["whole"].clear()
                conn.commit()
                transactions += 1
    finally:
        conn.close()
    return transactions


def _read_slot(pg_db, transactions: int) -> list:
    """The WalChanges a WalReader queues from the start of the slot (never acknowledged) to its last transaction."""
    collected = Collected()
    stop = threading.Event()
    reader = WalReader(lambda: ReplicationStream(pg_db.dsn, pg_db.name, ["together"]), None, collected,
                       Acknowledger(), StreamingMetrics("together", pg_db.name), Backoff(), stop, 0.1)
    reader.start()
    try:
        with collected.changed:
            assert collected.changed.wait_for(lambda: collected.commits >= transactions, timeout=120), \
                f"{collected.commits} of {transactions} transactions read"
    finally:
        stop.set()
        reader.join(30)
    return [item for item in collected.items if type(item) is WalChange]


def test_changes_built_together_give_what_each_built_alone_gives(pg_db, monkeypatch):
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    pg_db.execute("CREATE TABLE keyed (id int PRIMARY KEY, label text, amount numeric(10,2) NOT NULL DEFAULT 1.5, "
                  "big text)")
    pg_db.execute("CREATE TABLE whole (id int PRIMARY KEY, label text, big text)")
    pg_db.execute("ALTER TABLE whole REPLICA IDENTITY FULL")
    pg_db.execute("CREATE TABLE unkeyed (n int, label text)")
    pg_db.execute("CREATE PUBLICATION together FOR TABLE keyed, whole, unkeyed")
    with ReplicationStream(pg_db.dsn, pg_db.name, ["together"]) as made:
        made.create_slot(export_snapshot=False)
    transactions = _workload(pg_db, rng)

    changes = _read_slot(pg_db, transactions)
    assert len(changes) > 1000
    # the compiled reader's changes (stream.compiled_row_change) are those the Python reader makes
    monkeypatch.setattr(stream, "compiled_row_change", None)
    assert _read_slot(pg_db, transactions) == changes
    monkeypatch.undo()

    monkeypatch.setattr(events, "now_ns", lambda: 1_700_000_000_123_456_789)
    for name, extra in CONFIGS.items():
        config = pg_config(pg_db, "together", **extra)
        together, alone = (PgEventBuilder(config, lambda: connect_sql(pg_db.dsn)) for _ in range(2))
        try:
            assert_built_together_as_alone(together, alone, changes, position_after, position_after_changes, rng,
                                           (name, seed), ends_run=lambda change: type(change.message) is Relation)
        finally:
            together.close()
            alone.close()
