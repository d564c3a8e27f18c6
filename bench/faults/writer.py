"""The writer, in its own process: inserts rows whose key is a sequence number, one acknowledged write at a time.

    python -m bench.faults writer --source mongodb|postgres|mariadb DATABASE ACKS [--rate N]

The connection string comes from the environment (BENCH_FAULTS_TARGET), so no password is on a command line. An
insert whose outcome is unknown (the server went away) is retried until it is acknowledged: a duplicate-key error
on a retry means the first attempt was applied. Each acknowledged seq is appended to ACKS as "seq monotonic-time".
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from pathlib import Path

TARGET_VARIABLE = "BENCH_FAULTS_TARGET"
WRITE_RATE = 150  # acknowledged inserts per second


class Unavailable(Exception):
    """The insert may or may not have been applied; try the same seq again."""


class MongoInserter:
    def __init__(self, uri: str, database: str):
        import pymongo

        self.collection = pymongo.MongoClient(uri, serverSelectionTimeoutMS=30_000)[database].events

    def insert(self, seq: int) -> None:
        from pymongo.errors import DuplicateKeyError, PyMongoError

        try:
            self.collection.insert_one({"_id": seq, "seq": seq})
        except DuplicateKeyError:
            pass  # the driver's retry found the first attempt applied
        except PyMongoError as error:
            raise Unavailable(error) from error


class PostgresInserter:
    """Autocommit INSERTs into events (id = seq); reconnects after the server went away."""

    def __init__(self, dsn: str, database: str):
        self.dsn, self.connection = dsn, None

    def insert(self, seq: int) -> None:
        import psycopg

        try:
            if self.connection is None:
                self.connection = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
            self.connection.execute("INSERT INTO events (id, seq) VALUES (%s, %s)", (seq, seq))
        except psycopg.errors.UniqueViolation:
            pass  # an earlier attempt whose answer was lost had been applied
        except psycopg.Error as error:
            self._drop()
            raise Unavailable(error) from error

    def _drop(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            finally:
                self.connection = None


class MariaDbInserter:
    """Autocommit INSERTs into events (id = seq); reconnects after the server went away."""

    DUPLICATE_KEY = 1062

    def __init__(self, dsn: str, database: str):
        from connectors.mysql.connection import ConnectionSettings

        self.settings = ConnectionSettings.from_dsn(dsn).with_database(database)
        self.connection = None

    def insert(self, seq: int) -> None:
        import pymysql

        try:
            if self.connection is None:
                self.connection = pymysql.connect(**self.settings.pymysql_kwargs(), autocommit=True)
            with self.connection.cursor() as cursor:
                cursor.execute("INSERT INTO events (id, seq) VALUES (%s, %s)", (seq, seq))
        except pymysql.err.IntegrityError as error:
            if error.args[0] != self.DUPLICATE_KEY:
                raise
            # an earlier attempt whose answer was lost had been applied
        except pymysql.err.MySQLError as error:
            if self.connection is not None:
                try:
                    self.connection.close()
                except pymysql.err.MySQLError:
                    pass  # already closed by the error
                self.connection = None
            raise Unavailable(error) from error


INSERTERS = {"mongodb": MongoInserter, "postgres": PostgresInserter, "mariadb": MariaDbInserter}


def read_acks(path: Path) -> dict[int, float]:
    acks = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            acks[int(parts[0])] = float(parts[1])
    return acks


def writer_main(argv: list[str]) -> int:
    """Inserts seq = 0, 1, 2… at a steady rate; appends "seq monotonic-time" per acknowledged write."""
    parser = argparse.ArgumentParser(prog="python -m bench.faults writer")
    parser.add_argument("--source", choices=sorted(INSERTERS), default="mongodb")
    parser.add_argument("database")
    parser.add_argument("acks")
    parser.add_argument("--rate", type=float, default=WRITE_RATE)
    args = parser.parse_args(argv)
    target = os.environ.get(TARGET_VARIABLE)
    if not target:
        parser.error(f"{TARGET_VARIABLE} must hold the connection string of the database to write to")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    inserter = INSERTERS[args.source](target, args.database)
    seq = 0
    next_at = time.monotonic()
    with open(args.acks, "a") as acks:
        while not stop.is_set():
            while True:
                try:
                    inserter.insert(seq)
                    break
                except Unavailable:
                    if stop.wait(0.05):
                        return 0  # this write's outcome is unknown: it is not counted as acknowledged
            acks.write(f"{seq} {time.monotonic():.6f}\n")
            acks.flush()
            seq += 1
            next_at += 1 / args.rate
            delay = next_at - time.monotonic()
            if delay > 0:
                stop.wait(delay)
            else:
                next_at = time.monotonic()
    return 0
