"""The campaign's writer, in its own process: inserts, updates, deletes and multi-statement (multi-document)
transactions over several tables (collections), each write carrying a unique sequence number in its row's `seq`
column (its document's `seq` field).

    python -m bench.faults workload --source mongodb|postgres|mariadb DATABASE LOG [--rate N]

The connection string comes from the environment (BENCH_FAULTS_TARGET). Each committed transaction is appended to
LOG as one JSON line: {"txn": n, "at": monotonic time, "ops": [[table, key, op, seq], ...]} with op "c", "u" or "d".
Keys are never reused, so a key has at most one insert and one delete. Each transaction also inserts its number into
`applied` (a table the connector does not capture): when a commit's outcome is unknown (the server went away), the
writer reconnects and looks there, then logs the transaction or runs it again. On MongoDB a single write is an
ordinary (not a transaction's) write, as users mostly write, and several writes are one multi-document transaction;
an unknown outcome is looked up in the first write's document (keys are never reused and the writer is the only
one, so the document shows whether it was applied). The log is also the writer's state:
a writer started on an existing LOG goes on from where it ended (seeding writes the first lines).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import threading
import time
from pathlib import Path

TARGET_VARIABLE = "BENCH_FAULTS_TARGET"  # the connection string, kept off the command line
TABLES = ("w0", "w1", "w2")
WORKLOAD_RATE = 60  # transactions per second
RESOLVE_S = 90  # how long an unknown outcome is looked into, even after SIGTERM
PAD = "p" * 40
# the statements per table (names are the constants above, never input); %s placeholders for both drivers
STATEMENTS = {(table, op): text for table in TABLES for op, text in (
    ("c", f"INSERT INTO {table} (id, seq, pad) VALUES (%s, %s, %s)"),  # noqa: S608
    ("u", f"UPDATE {table} SET seq = %s WHERE id = %s"),  # noqa: S608
    ("d", f"DELETE FROM {table} WHERE id = %s"),  # noqa: S608
    ("rows", f"SELECT id, seq FROM {table}"),  # noqa: S608
)}


def _arguments(key: int, op: str, seq: int) -> tuple:
    return {"c": (key, seq, PAD), "u": (seq, key), "d": (key,)}[op]


class Unavailable(Exception):
    """The server could not be reached; the transaction may or may not have been committed."""


def read_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a kill: its transaction is looked up again
    return out


class State:
    """Live keys per table and the next key, seq and transaction number, as the log leaves them."""

    def __init__(self, log: list[dict]):
        self.alive: dict[str, list[int]] = {t: [] for t in TABLES}
        self.next_key = dict.fromkeys(TABLES, 0)
        self.seq = 0
        self.txn = 0
        for entry in log:
            self.apply(entry["ops"])
            self.txn = max(self.txn, entry["txn"] + 1)

    def apply(self, ops: list) -> None:
        for table, key, op, seq in ops:
            if op == "c":
                self.alive[table].append(key)
                self.next_key[table] = max(self.next_key[table], key + 1)
            elif op == "d":
                self.alive[table].remove(key)
            self.seq = max(self.seq, seq + 1)

    def plan(self, rng: random.Random) -> list:
        """One transaction: 1 write (60 %) or 2-4 over several tables; each write a fresh seq."""
        alive = {t: list(keys) for t, keys in self.alive.items()}
        next_key = dict(self.next_key)
        seq = self.seq
        ops = []
        for _ in range(1 if rng.random() < 0.6 else rng.randint(2, 4)):
            table = rng.choice(TABLES)
            roll = rng.random()
            if len(alive[table]) < 20 or roll < 0.4:
                key = next_key[table]
                next_key[table] += 1
                alive[table].append(key)
                ops.append([table, key, "c", seq])
            elif roll < 0.8:
                ops.append([table, rng.choice(alive[table]), "u", seq])
            else:
                key = alive[table].pop(rng.randrange(len(alive[table])))
                ops.append([table, key, "d", seq])
            seq += 1
        return ops


class PostgresTarget:
    def __init__(self, dsn: str, database: str):
        self.dsn, self.connection = dsn, None

    def _connect(self):
        import psycopg

        if self.connection is None:
            self.connection = psycopg.connect(self.dsn, connect_timeout=5)
        return self.connection

    def create_tables(self) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for table in TABLES:
                conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, seq bigint NOT NULL, pad text)")
            conn.execute("CREATE TABLE applied (txn bigint PRIMARY KEY)")

    def run(self, txn: int, ops: list) -> None:
        import psycopg

        try:
            conn = self._connect()
            with conn.transaction():
                for table, key, op, seq in ops:
                    conn.execute(STATEMENTS[table, op], _arguments(key, op, seq))
                conn.execute("INSERT INTO applied VALUES (%s)", (txn,))
        except psycopg.Error as error:
            self._drop()
            raise Unavailable(error) from error

    def applied(self, txn: int) -> bool:
        import psycopg

        try:
            conn = self._connect()
            with conn.transaction():
                return conn.execute("SELECT 1 FROM applied WHERE txn = %s", (txn,)).fetchone() is not None
        except psycopg.Error as error:
            self._drop()
            raise Unavailable(error) from error

    def rows(self) -> dict[tuple[str, int], int]:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            return {(t, key): seq for t in TABLES for key, seq in conn.execute(STATEMENTS[t, "rows"])}

    def _drop(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            finally:
                self.connection = None


class MariaDbTarget:
    def __init__(self, dsn: str, database: str):
        from connectors.mysql.connection import ConnectionSettings

        self.settings = ConnectionSettings.from_dsn(dsn).with_database(database)
        self.connection = None

    def _connect(self):
        import pymysql

        if self.connection is None:
            self.connection = pymysql.connect(**self.settings.pymysql_kwargs(), autocommit=False)
        return self.connection

    def create_tables(self) -> None:
        conn = self._connect()
        with conn.cursor() as cursor:
            for table in TABLES:
                cursor.execute(f"CREATE TABLE {table} (id BIGINT PRIMARY KEY, seq BIGINT NOT NULL, pad VARCHAR(64))")
            cursor.execute("CREATE TABLE applied (txn BIGINT PRIMARY KEY)")
        self._drop()

    def run(self, txn: int, ops: list) -> None:
        import pymysql

        try:
            conn = self._connect()
            conn.begin()
            with conn.cursor() as cursor:
                for table, key, op, seq in ops:
                    cursor.execute(STATEMENTS[table, op], _arguments(key, op, seq))
                cursor.execute("INSERT INTO applied VALUES (%s)", (txn,))
            conn.commit()
        except pymysql.err.MySQLError as error:
            self._drop()
            raise Unavailable(error) from error

    def applied(self, txn: int) -> bool:
        import pymysql

        try:
            conn = self._connect()
            conn.begin()
            with conn.cursor() as cursor:
                cursor.execute("SELECT 1 FROM applied WHERE txn = %s", (txn,))
                found = cursor.fetchone() is not None
            conn.commit()
            return found
        except pymysql.err.MySQLError as error:
            self._drop()
            raise Unavailable(error) from error

    def rows(self) -> dict[tuple[str, int], int]:
        conn = self._connect()
        out = {}
        conn.begin()
        with conn.cursor() as cursor:
            for table in TABLES:
                cursor.execute(STATEMENTS[table, "rows"])
                out.update({(table, key): seq for key, seq in cursor.fetchall()})
        conn.commit()
        self._drop()
        return out

    def _drop(self) -> None:
        import pymysql

        if self.connection is not None:
            try:
                self.connection.close()
            except pymysql.err.MySQLError:
                pass  # already closed by the error
            self.connection = None


class MongoTarget:
    """Collections w0, w1, w2 of documents {_id: key, seq, pad}."""

    def __init__(self, uri: str, database: str):
        import pymongo

        self.client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10_000, socketTimeoutMS=20_000)
        self.database = self.client[database]

    def create_tables(self) -> None:
        for table in TABLES:
            self.database.create_collection(table)

    def run(self, txn: int, ops: list) -> None:
        from pymongo.errors import PyMongoError

        self.last_ops = ops
        try:
            if len(ops) == 1:
                self._write(ops[0], None)
                return
            with self.client.start_session() as session, session.start_transaction():
                if len({(table, kind) for table, _, kind, _ in ops}) == 1 and ops[0][2] == "c":  # seeding
                    self.database[ops[0][0]].insert_many([{"_id": key, "seq": seq, "pad": PAD}
                                                          for _, key, _, seq in ops], session=session)
                    return
                for op in ops:
                    self._write(op, session)
        except PyMongoError as error:  # a duplicate key too: a retry of an insert whose answer was lost
            raise Unavailable(error) from error

    def _write(self, op: list, session) -> None:
        table, key, kind, seq = op
        collection = self.database[table]
        if kind == "c":
            collection.insert_one({"_id": key, "seq": seq, "pad": PAD}, session=session)
        elif kind == "u":
            collection.update_one({"_id": key}, {"$set": {"seq": seq}}, session=session)
        else:
            collection.delete_one({"_id": key}, session=session)

    def applied(self, txn: int) -> bool:
        """Whether the last attempted transaction (`run`'s ops) took effect: its first write shows it (all or none
        of a transaction's writes apply)."""
        from pymongo.errors import PyMongoError

        table, key, kind, seq = self.last_ops[0]
        try:
            document = self.database[table].find_one({"_id": key})
        except PyMongoError as error:
            raise Unavailable(error) from error
        if kind == "d":
            return document is None
        return document is not None and document["seq"] == seq

    def rows(self) -> dict[tuple[str, int], int]:
        return {(t, doc["_id"]): doc["seq"] for t in TABLES for doc in self.database[t].find({}, {"seq": 1})}


TARGETS = {"mongodb": MongoTarget, "postgres": PostgresTarget, "mariadb": MariaDbTarget}


class Workload:
    """Plans, runs and logs transactions; one instance per process."""

    def __init__(self, target, log_path: Path, rng: random.Random | None = None):
        self.target, self.log_path = target, Path(log_path)
        self.rng = rng or random.Random()
        self.state = State(read_log(self.log_path))

    def seed(self, rows_per_table: int) -> None:
        """Rows that exist before the connector starts (its snapshot reads them while the writer changes them)."""
        for table in TABLES:
            for start in range(0, rows_per_table, 500):
                ops = [[table, self.state.next_key[table] + i, "c", self.state.seq + i]
                       for i in range(min(500, rows_per_table - start))]
                self.commit(ops, threading.Event())

    def step(self, stop: threading.Event) -> bool:
        return self.commit(self.state.plan(self.rng), stop)

    def commit(self, ops: list, stop: threading.Event) -> bool:
        """Runs the transaction until its outcome is known; False when it is still unknown after RESOLVE_S past a
        stop (it is then not logged)."""
        txn = self.state.txn
        stopped_at = None
        while True:
            try:
                self.target.run(txn, ops)
                break
            except Unavailable:
                if self._resolved(txn):
                    break
                if stop.is_set():
                    stopped_at = stopped_at or time.monotonic()
                    if time.monotonic() - stopped_at > RESOLVE_S:
                        return False
                time.sleep(0.05)
        with open(self.log_path, "a") as log:
            log.write(json.dumps({"txn": txn, "at": round(time.monotonic(), 6), "ops": ops}) + "\n")
        self.state.apply(ops)
        self.state.txn = txn + 1
        return True

    def _resolved(self, txn: int) -> bool:
        """Whether an attempt whose answer was lost had committed (looked up once the server answers)."""
        try:
            return self.target.applied(txn)
        except Unavailable:
            return False


def workload_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults workload")
    parser.add_argument("--source", choices=sorted(TARGETS), required=True)
    parser.add_argument("database")
    parser.add_argument("log", type=Path)
    parser.add_argument("--rate", type=float, default=WORKLOAD_RATE, help="transactions per second")
    args = parser.parse_args(argv)
    target = os.environ.get(TARGET_VARIABLE)
    if not target:
        parser.error(f"{TARGET_VARIABLE} must hold the connection string of the database to write to")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    workload = Workload(TARGETS[args.source](target, args.database), args.log)
    next_at = time.monotonic()
    while not stop.is_set():
        if not workload.step(stop):
            return 0
        next_at += 1 / args.rate
        delay = next_at - time.monotonic()
        if delay > 0:
            stop.wait(delay)
        else:
            next_at = time.monotonic()
    return 0
