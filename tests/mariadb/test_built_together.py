"""The pipeline's batch path for MariaDB (`MySqlEventBuilder.build_changes`, `position_after_changes`) gives what
`build` and `position_after` give change by change: binlog changes of a random workload read from the real server
(multi-row inserts, updates and deletes, so rows events of many rows; key changes; DDL between a table's changes;
annotated statements), under configurations that take the streamed fast path and those that go through `build`.
The same changes read as runs (`BinlogReader(runs=True)`, queued as `(run, row)` as the change reader queues them),
written by the compiled run writer, against `build` of each with every compiled writer off (the pure-Python way)."""

from __future__ import annotations

import random
import time
import uuid
from types import SimpleNamespace

import pytest

from connectors.mysql import compiled_rows, envelope, schema_changes
from connectors.mysql import source as mysql_source
from connectors.mysql.binlog import BinlogPosition, RowChange, RowsRun, SchemaStatement, row_change
from connectors.mysql.connection import connect
from connectors.mysql.source import MySqlEventBuilder, ServerSource
from connectors.sources import engine_config
from tests.built_together import assert_built_together_as_alone
from tests.mariadb.binlog_reading import binlog_status, read_to_end
from tests.mariadb.test_source import properties

pytestmark = [pytest.mark.integration]

CONFIGS = {
    "default": {},
    "schemas": {"key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"},
    "no-tombstones": {"tombstones.on.delete": "false"},
    "skip-updates": {"skipped.operations": "u"},
    "transactions": {"provide.transaction.metadata": "true"},
    "queries": {"include.query": "true"},
    "some-tables": {"table.exclude.list": ".*\\.unkeyed"},
}


def _workload(mariadb, database: str, rng: random.Random) -> None:
    connection = connect(mariadb.admin.with_database(database), autocommit=False)
    next_key = 1
    try:
        with connection.cursor() as cursor:
            for number in range(80):
                if number in (20, 50):  # DDL (its own binlog group) between two changes of the table
                    cursor.execute("INSERT INTO keyed (id, label) VALUES (%s, 'before a schema change')",
                                   (next_key,))
                    connection.commit()
                    next_key += 1
                    cursor.execute(f"ALTER TABLE keyed ADD COLUMN extra{number} INT DEFAULT 7")
                for _ in range(rng.randint(1, 8)):
                    action = rng.random()
                    if action < 0.4:
                        count = rng.randint(1, 60)
                        cursor.executemany("INSERT INTO keyed (id, label, body) VALUES (%s, %s, %s)",
                                           [(next_key + i, f"label {next_key + i}", "é" * rng.choice([0, 5, 3000]))
                                            for i in range(count)])
                        next_key += count
                    elif action < 0.6:
                        low = rng.randrange(next_key)
                        cursor.execute("UPDATE keyed SET label = %s WHERE id BETWEEN %s AND %s",
                                       (f"changed {rng.random()}", low, low + rng.randint(0, 40)))
                    elif action < 0.7:
                        cursor.execute("UPDATE keyed SET id = %s WHERE id = %s", (next_key, rng.randrange(next_key)))
                        next_key += 1
                    elif action < 0.8:
                        low = rng.randrange(next_key)
                        cursor.execute("DELETE FROM keyed WHERE id BETWEEN %s AND %s", (low, low + rng.randint(0, 20)))
                    else:
                        cursor.executemany("INSERT INTO unkeyed VALUES (%s, %s)",
                                           [(rng.randrange(100), "u") for _ in range(rng.randint(1, 20))])
                connection.commit()
    finally:
        connection.close()


class _PythonWritten:
    """A builder whose `build` writes with the compiled writers off (envelope's pure-Python loops)."""

    def __init__(self, builder: MySqlEventBuilder):
        self.builder = builder

    def build(self, change):
        saved = {name: getattr(envelope, name) for name in _COMPILED_WRITERS}
        for name in _COMPILED_WRITERS:
            setattr(envelope, name, None)
        try:
            return self.builder.build(change)
        finally:
            for name, writer in saved.items():
                setattr(envelope, name, writer)


_COMPILED_WRITERS = ("write_row", "write_event", "write_key")


def _queued(items: list) -> list:
    """The reader's items as the change reader queues them: each RowsRun as a `(run, row)` per row."""
    queued = []
    for item in items:
        if type(item) is RowsRun:
            queued.extend((item, row) for row in range(item.first, item.count))
        else:
            queued.append(item)
    return queued


def test_changes_built_together_give_what_each_built_alone_gives(mariadb, mariadb_db, monkeypatch):
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    mariadb.execute("CREATE TABLE keyed (id INT PRIMARY KEY, label VARCHAR(80), amount DECIMAL(10,2) DEFAULT 1.5, "
                    "body TEXT, at DATETIME(3) DEFAULT '2024-05-06 07:08:09.123')",
                    "CREATE TABLE unkeyed (n INT, label VARCHAR(10))", database=mariadb_db)
    start = binlog_status(mariadb)
    _workload(mariadb, mariadb_db, rng)
    changes = read_to_end(mariadb.cdc, 6202, BinlogPosition(gtids=start.gtids), mariadb_db)
    assert sum(1 for change in changes if type(change) is SchemaStatement) == 2
    assert len(changes) > 1000
    runs = read_to_end(mariadb.cdc, 6203, BinlogPosition(gtids=start.gtids), mariadb_db, runs=True)
    queued = _queued(runs)
    if compiled_rows.compiled is not None:  # every table's columns are of kinds the module decodes
        assert all(type(item) is not RowChange for item in runs)
        assert sum(1 for item in runs if type(item) is RowsRun and item.op == "u") > 10
    assert [row_change(item) for item in queued] == changes

    fixed = SimpleNamespace(time=lambda: 1_700_000_000.5, time_ns=lambda: 1_700_000_000_123_456_789,
                            monotonic=time.monotonic, sleep=time.sleep)
    for module in (mysql_source, envelope, schema_changes):  # the events' ts_ms
        monkeypatch.setattr(module, "time", fixed)
    for name, extra in CONFIGS.items():
        _, config = engine_config(properties(mariadb, mariadb_db, **extra))
        together, alone = (MySqlEventBuilder(config) for _ in range(2))
        assert_built_together_as_alone(together, alone, changes, ServerSource.position_after,
                                       ServerSource.position_after_changes, rng, (name, seed))
        together, alone = (MySqlEventBuilder(config) for _ in range(2))
        assert_built_together_as_alone(together, _PythonWritten(alone), queued, ServerSource.position_after,
                                       ServerSource.position_after_changes, rng, (name, "runs", seed))


TYPED = {  # the compiled writers' own kinds (WRITE_DOUBLE, WRITE_DECIMAL, WRITE_DATE, WRITE_MICROS, WRITE_MILLIS)
    "db": ("DOUBLE", lambda rng: rng.choice([0.0, -0.0, -2.5, 1e-3, 1e7, 1 / 3, 1.7976931348623157e308, 5e-324,
                                             rng.uniform(-1e12, 1e12)])),
    "fl": ("FLOAT", lambda rng: rng.choice([0.0, -1.5, 3.4e38, 1.17549435e-38, 0.1, rng.uniform(-1e6, 1e6)])),
    "d2": ("DECIMAL(12,2)", lambda rng: rng.choice(["-0.01", "0.00", "-9999999999.99", "9999999999.99",
                                                    f"{rng.uniform(-1e6, 1e6):.2f}"])),
    "d30": ("DECIMAL(65,30)", lambda rng: rng.choice(["-0.000000000000000000000000000001", "0",
                                                      "-" + "9" * 35 + "." + "9" * 30,
                                                      f"{rng.randint(-10**34, 10**34)}.{rng.randrange(10**30):030d}"])),
    "d0": ("DECIMAL(18,0)", lambda rng: rng.choice(["-1", "-128", "128", "255", "-999999999999999999",
                                                    str(rng.randint(-10**17, 10**17))])),
    "da": ("DATE", lambda rng: rng.choice(["1000-01-01", "9999-12-31", "1969-12-31", "1970-01-01", "1900-03-01",
                                           f"{rng.randint(1000, 9999)}-{rng.randint(1, 12):02d}-12"])),
    "t6": ("DATETIME(6)", lambda rng: rng.choice(["1000-01-01 00:00:00", "9999-12-31 23:59:59.999999",
                                                  "1969-12-31 23:59:59.999999", "1960-01-01 00:00:00.000001",
                                                  f"{rng.randint(1000, 9999)}-01-02 03:04:05.{rng.randrange(10**6)}"])),
    "t3": ("DATETIME(3)", lambda rng: rng.choice(["1969-12-31 23:59:59.999", "1969-12-31 23:59:59.001",
                                                  "2024-05-06 07:08:09.123"])),
    "t1": ("DATETIME(1)", lambda rng: rng.choice(["1969-12-31 23:59:59.9", "2024-05-06 07:08:09.5"])),
    "t0": ("DATETIME", lambda rng: rng.choice(["1950-06-07 08:09:10", "2038-01-19 03:14:08"])),
    "s6": ("TIMESTAMP(6) NULL", lambda rng: rng.choice(["1970-01-01 00:00:01", "2038-01-19 03:14:07.999999",
                                                        "1999-12-31 23:59:59.000001"])),
    "s0": ("TIMESTAMP NULL", lambda rng: rng.choice(["1970-01-01 00:00:01", "2024-02-29 12:00:00"])),
    "h6": ("TIME(6)", lambda rng: rng.choice(["-838:59:59.000000", "838:59:59", "-00:00:00.000001", "12:34:56.5"])),
    "h0": ("TIME", lambda rng: rng.choice(["-01:00:00", "00:00:00", "100:00:01"])),
    "y": ("YEAR", lambda rng: rng.choice([1901, 2155, 2024])),
    "en": ("ENUM('a', 'bé', '\"q\"')", lambda rng: rng.choice(["a", "bé", '"q"'])),
    "st": ("SET('x', 'y', 'z')", lambda rng: rng.choice(["", "x", "z,x"])),
    # MariaDB's UUID (BINARY(16) in the table map, information_schema tells it): the column's own writer, by both ways;
    # trailing zero bytes, which the binlog leaves out
    "uu": ("UUID", lambda rng: rng.choice(["00000000-0000-0000-0000-000000000000",
                                           "123e4567-e89b-12d3-a456-426655440000",
                                           "ffffffff-ffff-4fff-bfff-ffffffffff00",
                                           str(uuid.UUID(int=rng.getrandbits(128), version=4))])),
    "b16": ("BINARY(16)", lambda rng: rng.choice([b"", b"ab", rng.randbytes(16)])),
}


def test_typed_columns_written_by_runs_give_the_python_ways_bytes(mariadb, mariadb_db, monkeypatch):
    """The columns the run writer writes itself (doubles, floats, decimals, dates, datetimes, timestamps, times, years,
    ENUMs) at their edges, and SETs, UUIDs, BINARY(16), NULLs among them, inserted, updated (their key too) and
    deleted, in the default, `connect` and schema'd forms."""
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    columns = ", ".join(f"{name} {kind}" for name, (kind, _) in TYPED.items())
    mariadb.execute(f"CREATE TABLE typed (id INT, d_key DECIMAL(65,30), {columns}, PRIMARY KEY (id, d_key))",
                    database=mariadb_db)
    start = binlog_status(mariadb)
    connection = connect(mariadb.admin.with_database(mariadb_db), autocommit=False)
    marks = ", ".join(["%s"] * (len(TYPED) + 2))
    try:
        with connection.cursor() as cursor:
            for batch in range(10):
                cursor.executemany(f"INSERT INTO typed VALUES ({marks})",  # noqa: S608 - the test's own columns
                                   [(batch * 100 + n, TYPED["d30"][1](rng),
                                     *(None if rng.random() < 0.15 else make(rng) for _, make in TYPED.values()))
                                    for n in range(rng.randint(1, 30))])
                name = rng.choice(list(TYPED))
                cursor.execute(f"UPDATE typed SET {name} = %s WHERE id %% 3 = %s",  # noqa: S608
                               (TYPED[name][1](rng), batch % 3))
                cursor.execute("UPDATE typed SET d_key = -d_key WHERE id %% 4 = %s", (batch % 4,))
                cursor.execute("DELETE FROM typed WHERE id %% 5 = %s", (batch % 5,))
                connection.commit()
    finally:
        connection.close()
    changes = read_to_end(mariadb.cdc, 6205, BinlogPosition(gtids=start.gtids), mariadb_db)
    runs = read_to_end(mariadb.cdc, 6206, BinlogPosition(gtids=start.gtids), mariadb_db, runs=True)
    queued = _queued(runs)
    if compiled_rows.compiled is not None:
        assert all(type(item) is not RowChange for item in runs)
    assert [row_change(item) for item in queued] == changes and len(changes) > 100
    fixed = SimpleNamespace(time=lambda: 1_700_000_000.5, time_ns=lambda: 1_700_000_000_123_456_789,
                            monotonic=time.monotonic, sleep=time.sleep)
    for module in (mysql_source, envelope, schema_changes):
        monkeypatch.setattr(module, "time", fixed)
    for name, extra in {"default": {}, "connect": {"time.precision.mode": "connect"},
                        "schemas": CONFIGS["schemas"]}.items():
        _, config = engine_config(properties(mariadb, mariadb_db, **extra))
        together, alone = (MySqlEventBuilder(config) for _ in range(2))
        assert_built_together_as_alone(together, _PythonWritten(alone), queued, ServerSource.position_after,
                                       ServerSource.position_after_changes, rng, (name, "runs", seed))
