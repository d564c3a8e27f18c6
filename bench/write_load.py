"""A write workload for Verify's no-false-alarm checks (bench/verify_under_load.py and the Verify tests): inserts,
updates, deletes and (on relational sources) primary-key updates of random keys of a table `hot (id, v, note)`,
from several threads, each on its own connection, paced to a target rate in all, until stopped.

A write the server refuses because of another thread's (a primary-key update onto a key that now exists, a
deadlock) is not counted and the thread goes on: the workload's only job is to keep the source changing.
"""

from __future__ import annotations

import multiprocessing
import random
import sys
import threading
import time
from collections.abc import Callable

Writer = Callable[[str, int, int], bool]  # one write: op, key, another key (for "rekey"); False if refused

RELATIONAL_OPS = ("insert", "update", "update", "delete", "rekey")
DOCUMENT_OPS = ("insert", "update", "update", "delete")  # a document's _id cannot change


class Workload:
    def __init__(self, open_writer: Callable[[], Writer], keys: int, per_second: int = 2000, threads: int = 4,
                 ops: tuple[str, ...] = RELATIONAL_OPS):
        """`open_writer()` is called once per thread (its own connection)."""
        self.open_writer = open_writer
        self.keys = keys
        self.per_second = per_second
        self.per_thread = per_second / threads
        self.ops = ops
        self.counts = [0] * threads
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(threads)]
        self.started = 0.0
        self.seconds = 0.0

    def __enter__(self) -> Workload:
        self.started = time.monotonic()
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)
        self.seconds = time.monotonic() - self.started
        if self.errors and exc[0] is None:
            raise self.errors[0]

    @property
    def writes(self) -> int:
        return sum(self.counts)

    @property
    def rate(self) -> float:
        seconds = self.seconds or (time.monotonic() - self.started)
        return self.writes / seconds if seconds else 0.0

    def _run(self, number: int) -> None:
        rng = random.Random(number)
        try:
            write = self.open_writer()
            began = time.monotonic()
            while not self.stop.is_set():
                if write(rng.choice(self.ops), rng.randrange(self.keys), rng.randrange(self.keys)):
                    self.counts[number] += 1
                ahead = self.counts[number] / self.per_thread - (time.monotonic() - began)
                if ahead > 0:
                    time.sleep(ahead)
        except BaseException as error:  # noqa: BLE001 - raised by __exit__
            self.errors.append(error)


def postgres_writer(dsn: str) -> Callable[[], Writer]:
    """Autocommit writes to `hot`, each its own transaction (`synchronous_commit = off`: a busy server's rate on a
    small machine)."""
    import psycopg2
    import psycopg2.errors

    statements = {
        "insert": "INSERT INTO hot VALUES (%(k)s, 1, 'i') ON CONFLICT (id) DO UPDATE SET v = hot.v + 1",
        "update": "UPDATE hot SET v = v + 1, note = md5(random()::text) WHERE id = %(k)s",
        "delete": "DELETE FROM hot WHERE id = %(k)s",
        "rekey": "UPDATE hot SET id = %(to)s, v = v + 1 WHERE id = %(k)s",
    }

    def open_writer() -> Writer:
        conn = psycopg2.connect(dsn)
        conn.autocommit = True
        cursor = conn.cursor()
        cursor.execute("SET synchronous_commit = off")

        def write(op: str, key: int, to: int) -> bool:
            try:
                cursor.execute(statements[op], {"k": key, "to": to})
            except (psycopg2.errors.UniqueViolation, psycopg2.errors.DeadlockDetected):
                return False
            return True

        return write

    return open_writer


def mariadb_writer(settings, batch: int = 10) -> Callable[[], Writer]:
    """Writes to `hot` (the database `settings`, a connectors.mysql ConnectionSettings, names) in transactions of
    `batch` writes (each commit waits for a flush of the log). A deadlock rolls back the thread's transaction; a
    duplicate key refuses only its statement."""
    import pymysql

    from connectors.mysql.connection import connect

    statements = {
        "insert": "INSERT INTO hot VALUES (%s, 1, 'i') ON DUPLICATE KEY UPDATE v = v + 1",
        "update": "UPDATE hot SET v = v + 1, note = MD5(RAND()) WHERE id = %s",
        "delete": "DELETE FROM hot WHERE id = %s",
        "rekey": "UPDATE hot SET id = %s, v = v + 1 WHERE id = %s",
    }
    deadlock, lock_wait, duplicate = 1213, 1205, 1062

    def open_writer() -> Writer:
        connection = connect(settings)
        cursor = connection.cursor()
        done = [0]

        def write(op: str, key: int, to: int) -> bool:
            try:
                cursor.execute(statements[op], (to, key) if op == "rekey" else (key,))
                done[0] += 1
                if done[0] % batch == 0:
                    connection.commit()
            except pymysql.err.MySQLError as error:
                code = error.args[0] if error.args else None
                if code == duplicate:
                    return False
                if code in (deadlock, lock_wait):
                    connection.rollback()
                    return False
                raise
            return True

        return write

    return open_writer


def mongo_writer(uri: str, database: str, collection: str = "hot", batch: int = 1) -> Callable[[], Writer]:
    """Single-document writes to `hot` (`_id` is the key: an upsert inserts, `$inc`/`$set` updates), each its own
    request, or with `batch` > 1 sent `batch` at a time in one ordered `bulk_write` (each still its own write, oplog
    entry and change event; a thread's last partial batch is counted but not sent)."""
    from pymongo import DeleteOne, MongoClient, UpdateOne

    operations = {
        "insert": lambda key: UpdateOne({"_id": key}, {"$inc": {"v": 1}}, upsert=True),
        "update": lambda key: UpdateOne({"_id": key}, {"$inc": {"v": 1}, "$set": {"note": str(key)}}),
        "delete": lambda key: DeleteOne({"_id": key}),
    }

    def open_writer() -> Writer:
        hot = MongoClient(uri)[database][collection]
        pending: list = []

        def write(op: str, key: int, to: int) -> bool:
            pending.append(operations[op](key))
            if len(pending) >= batch:
                hot.bulk_write(pending, ordered=True)
                pending.clear()
            return True

        return write

    return open_writer


def _write_in_process(factory, args: tuple, keys: int, per_second: float, threads: int, ops: tuple[str, ...],
                      count, began, stop) -> None:
    load = Workload(factory(*args), keys, per_second=per_second, threads=threads, ops=ops)
    try:
        with load:
            began.value = time.time()
            while not stop.wait(0.2):
                count.value = load.writes
    except BaseException as error:  # noqa: BLE001 - the parent reads the count; the cause goes to stderr
        print(f"write workload process failed: {error!r}", file=sys.stderr)
    count.value = load.writes


class ProcessWorkload:
    """A Workload in `processes` processes of their own (spawned: nothing shared with the connector and Verify in
    the calling process, not even the GIL), `per_second` in all. `factory(*args)` is what `postgres_writer` and its
    siblings are: it must be importable and its arguments picklable."""

    def __init__(self, factory: Callable, args: tuple, keys: int, per_second: int = 2000, processes: int = 2,
                 threads: int = 8, ops: tuple[str, ...] = RELATIONAL_OPS):
        context = multiprocessing.get_context("spawn")
        self.per_second = per_second
        self.stop = context.Event()
        self.counts = [context.Value("q", 0) for _ in range(processes)]
        self.began = [context.Value("d", 0.0) for _ in range(processes)]  # time.time() of the first write
        self.processes = [context.Process(target=_write_in_process, daemon=True,
                                          args=(factory, args, keys, per_second / processes, threads, ops, count,
                                                began, self.stop))
                          for count, began in zip(self.counts, self.began, strict=True)]
        self.started = 0.0
        self.seconds = 0.0

    def __enter__(self) -> ProcessWorkload:
        self.started = time.monotonic()
        for process in self.processes:
            process.start()
        return self

    def __exit__(self, *exc) -> None:
        ended = time.time()
        self.stop.set()
        for process in self.processes:
            process.join(30)
        began = [value.value for value in self.began if value.value]
        self.seconds = ended - min(began) if began else 0.0  # from the first write: a process takes time to start

    def wait_writing(self, timeout: float = 120) -> bool:
        """Whether every process has begun writing within `timeout` seconds (spawning one takes seconds)."""
        deadline = time.monotonic() + timeout
        while not all(value.value for value in self.began):
            if time.monotonic() > deadline or not any(process.is_alive() for process in self.processes):
                return False
            time.sleep(0.1)
        return True

    @property
    def writes(self) -> int:
        return sum(count.value for count in self.counts)

    @property
    def rate(self) -> float:
        seconds = self.seconds or (time.monotonic() - self.started)
        return self.writes / seconds if seconds else 0.0
