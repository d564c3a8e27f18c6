"""The demo's write workload for the `shop` schema in PostgreSQL and MariaDB: new customers and orders, status
updates, cancellations (deletes) and multi-row transactions, at a steady rate on each database.

`python -m devstack.sql_workload --rate 5` runs until interrupted; `--count N` stops after N writes per database;
`--only postgres` or `--only mariadb` writes to one of them.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from decimal import Decimal

import psycopg2
import pymysql

from devstack import demo_sql, settings

PRODUCTS = ["keyboard", "mouse", "monitor", "laptop", "dock", "headset", "webcam", "cable"]
STATUSES = ["paid", "shipped", "delivered"]


class ShopWriter:
    """One database's writes; `execute(sql, params)` runs in the current transaction, `commit()` ends it."""

    def __init__(self, connection):
        self.connection = connection
        self.next_id = self._max_id("orders") + 1
        self.next_customer = self._max_id("customers") + 1

    def _query(self, sql: str, params=()) -> list[tuple]:
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall()) if cursor.description else []

    def _max_id(self, table: str) -> int:
        rows = self._query(f"SELECT COALESCE(MAX(id), 0) FROM shop.{table}")  # noqa: S608 - a fixed table name
        self.connection.commit()
        return int(rows[0][0])

    def one_write(self, rng: random.Random) -> str:
        roll = rng.random()
        try:
            kind = self._write(rng, roll)
            self.connection.commit()
            return kind
        except Exception:
            self.connection.rollback()
            raise

    def _write(self, rng: random.Random, roll: float) -> str:
        open_orders = self._query("SELECT id FROM shop.orders WHERE status <> 'delivered' ORDER BY id DESC LIMIT 20")
        if roll < 0.10 or self.next_customer == 1:
            self._query("INSERT INTO shop.customers (id, name, email) VALUES (%s, %s, %s)",
                        (self.next_customer, f"customer {self.next_customer}",
                         f"customer{self.next_customer}@example.com"))
            self.next_customer += 1
            return "customer"
        if roll < 0.55 or len(open_orders) < 5:
            self._insert_order(rng)
            return "insert"
        victim = rng.choice(open_orders)[0]
        if roll < 0.85:
            self._query("UPDATE shop.orders SET status = %s WHERE id = %s", (rng.choice(STATUSES), victim))
            return "update"
        if roll < 0.93:
            self._query("DELETE FROM shop.orders WHERE id = %s", (victim,))
            return "delete"
        self._insert_order(rng)  # a transaction of three changes
        self._insert_order(rng)
        self._query("UPDATE shop.orders SET status = 'paid' WHERE id = %s", (victim,))
        return "transaction"

    def _insert_order(self, rng: random.Random) -> None:
        quantity = rng.randint(1, 5)
        self._query("INSERT INTO shop.orders (id, customer_id, product, quantity, total, status) "
                    "VALUES (%s, %s, %s, %s, %s, 'new')",
                    (self.next_id, rng.randint(1, max(1, self.next_customer - 1)), rng.choice(PRODUCTS), quantity,
                     Decimal(rng.randint(500, 50_000)) / 100 * quantity))
        self.next_id += 1


def postgres_writer() -> ShopWriter:
    return ShopWriter(psycopg2.connect(demo_sql.postgres_dsn()))


def mariadb_writer() -> ShopWriter:
    from connectors.mysql.connection import ConnectionSettings

    where = ConnectionSettings.from_dsn(settings.mariadb_dsn())
    return ShopWriter(pymysql.connect(**{**where.pymysql_kwargs(), "autocommit": False}))


WRITERS = {"postgres": postgres_writer, "mariadb": mariadb_writer}


def run(targets: list[str], rate: float, count: int | None, seed: int | None = None) -> dict[str, int]:
    rng = random.Random(seed)
    stopping = False

    def _stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    writers: dict[str, ShopWriter] = {}
    done = dict.fromkeys(targets, 0)
    interval = 1.0 / rate if rate > 0 else 0.0
    while not stopping and (count is None or min(done.values()) < count):
        started = time.monotonic()
        for target in targets:
            try:
                if target not in writers:
                    writers[target] = WRITERS[target]()
                writers[target].one_write(rng)
                done[target] += 1
            except (psycopg2.Error, pymysql.err.MySQLError, OSError) as error:  # a restarted server: reconnect
                print(f"{target}: write failed, reconnecting: {error}", file=sys.stderr, flush=True)
                writers.pop(target, None)
                time.sleep(0.5)
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack.sql_workload", description=__doc__)
    parser.add_argument("--rate", type=float, default=5.0, help="writes per second on each database")
    parser.add_argument("--count", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--only", choices=sorted(WRITERS), action="append")
    args = parser.parse_args(argv)
    try:
        done = run(args.only or sorted(WRITERS), args.rate, args.count, args.seed)
    except KeyboardInterrupt:
        return 0
    print(", ".join(f"{target}: {n} writes" for target, n in done.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
