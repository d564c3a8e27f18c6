"""The compiled reader of a SELECT's rows (connectors/mysql/text_rows.py, csrc/textrows.c) gives the same rows as
pymysql's `fetchall()`, and a snapshot chunk read with it the same event bytes as one read without it: random rows
of every column type test_compiled_rows.py covers (integers at their limits, floats, decimals, YEAR, dates, times,
text in four character sets, binary strings and blobs, MariaDB's UUID, INET4 and INET6 (the chunk's events leave the
INET columns out), values long enough for 2- and 3-byte length prefixes), plus
ENUM, SET, BIT, JSON, geometry and zero dates (pymysql's converters, called from the compiled reader), NULLs; a
result set without rows; and an error the server raises in the middle of the rows."""

from __future__ import annotations

import random

import pymysql
import pytest

from connectors.core.snapshot.chunks import chunks_of
from connectors.mysql import envelope, snapshot_reader, text_rows
from connectors.mysql.connection import connect
from connectors.mysql.snapshot_reader import MySqlSnapshotReader
from connectors.mysql.source import MySqlEventBuilder
from connectors.sources import engine_config
from tests.compiled_modules import require_built
from tests.mariadb.test_compiled_rows import COLUMNS
from tests.mariadb.test_source import properties

pytestmark = [pytest.mark.integration]

MORE = {
    "en": ("ENUM('a', 'bé', '')", lambda rng: rng.choice(["a", "bé", ""])),
    "st": ("SET('x', 'y', 'z')", lambda rng: rng.choice(["", "x", "x,z", "x,y,z"])),
    "bt": ("BIT(10)", lambda rng: rng.randint(0, 1023)),
    "js": ("JSON", lambda rng: rng.choice(['{"a": 1}', '[1, "é", null]', '"x"'])),
    "zd": ("DATE", lambda rng: rng.choice(["0000-00-00", "2020-00-00", "2024-01-02"])),
    "zt": ("DATETIME(2)", lambda rng: rng.choice(["0000-00-00 00:00:00", "2024-01-02 03:04:05.06"])),
    "pt": ("POINT", lambda rng: None),  # filled by ST_GeomFromText below
    "big": ("MEDIUMBLOB", lambda rng: rng.randbytes(rng.choice([0, 250, 251, 65535, 65536, 70000]))),
}
TYPES = {**COLUMNS, **MORE}


def _fill(mariadb, database: str, rng: random.Random, rows: int) -> None:
    columns = ", ".join(f"{name} {kind}" for name, (kind, _) in TYPES.items())
    mariadb.execute(f"CREATE TABLE typed (id INT PRIMARY KEY, {columns})", database=database)
    connection = connect(mariadb.admin.with_database(database), autocommit=False)
    marks = ", ".join(["%s"] * (len(TYPES) + 1))
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION sql_mode = ''")  # zero dates, YEAR 0, out-of-range floats as stored
            for first in range(0, rows, 50):
                cursor.executemany(f"INSERT INTO typed VALUES ({marks})",  # noqa: S608 - the test's own columns
                                   [(key, *(None if rng.random() < 0.15 else make(rng) for make in
                                            (m for _, m in TYPES.values())))
                                    for key in range(first, min(rows, first + 50))])
            cursor.execute("UPDATE typed SET pt = ST_GeomFromText(CONCAT('POINT(', id, ' 1.5)')) WHERE id % 3 > 0")
        connection.commit()
    finally:
        connection.close()


def _both(connection, sql: str, monkeypatch) -> tuple[list, list]:
    compiled = text_rows.select(connection, sql)
    with monkeypatch.context() as patched:
        patched.setattr(text_rows, "read_text_rows", None)
        plain = text_rows.select(connection, sql)
    return compiled, plain


def test_the_compiled_reader_gives_pymysqls_rows(mariadb, mariadb_db, monkeypatch):
    require_built(text_rows.read_text_rows, "connectors/mysql/_binrows")
    seed = random.SystemRandom().randrange(2**32)
    _fill(mariadb, mariadb_db, random.Random(seed), 300)
    connection = connect(mariadb.admin.with_database(mariadb_db))
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION time_zone = '+00:00'")
        calls = []
        reader = text_rows.read_text_rows
        monkeypatch.setattr(text_rows, "read_text_rows", lambda *args: calls.append(args) or reader(*args))
        compiled, plain = _both(connection, "SELECT * FROM typed ORDER BY id", monkeypatch)
        assert len(calls) == 1 and len(compiled) == 300
        assert set(calls[0][2]) == {text_rows.INTEGER, text_rows.UTF8, text_rows.BYTES, text_rows.CALL,
                                    text_rows.DATE, text_rows.DATETIME, text_rows.DECIMAL, text_rows.FLOAT}
        for mine, pymysqls in zip(compiled, plain, strict=True):
            assert [(i, a, b) for i, (a, b) in enumerate(zip(mine, pymysqls, strict=True))
                    if a != b or type(a) is not type(b)] == [], seed
        assert _both(connection, "SELECT * FROM typed WHERE id < 0", monkeypatch) == ([], [])
        # the connection is in step afterwards: the next statements read as usual
        with connection.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM typed")
            assert cursor.fetchone() == (300,)
        # an error after some rows have been sent: pymysql's exception, and a connection still usable
        with pytest.raises(pymysql.err.MySQLError):
            text_rows.select(connection, "SELECT *, IF(id = 250, (SELECT 1 UNION SELECT 2), 0) FROM typed ORDER BY id")
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            assert cursor.fetchone() == (1,)
    finally:
        connection.close()


def test_a_snapshot_chunk_has_the_same_bytes_either_way(mariadb, mariadb_db, monkeypatch):
    require_built(text_rows.read_text_rows, "connectors/mysql/_binrows")
    seed = random.SystemRandom().randrange(2**32)
    _fill(mariadb, mariadb_db, random.Random(seed), 120)
    # INET4 and INET6 have no mapping: left out, as a user must
    _, config = engine_config(properties(mariadb, mariadb_db, **{
        "column.exclude.list": f"{mariadb_db}.typed.i4,{mariadb_db}.typed.i6"}))
    monkeypatch.setattr(snapshot_reader.time, "time_ns", lambda: 1_700_000_000_123_456_789)  # the events' ts_ms
    reader = MySqlSnapshotReader(config)
    try:
        reader.capture_start()
        plan = reader.plan(f"{mariadb_db}.typed", 50)
        chunks = chunks_of(f"{mariadb_db}.typed", plan.bounds, 0)
        builder = MySqlEventBuilder(config)
        compiled = [reader.read_chunk(builder, chunk, 1, None, False, None) for chunk in chunks]
        monkeypatch.setattr(text_rows, "read_text_rows", None)
        plain = [reader.read_chunk(builder, chunk, 1, None, False, None) for chunk in chunks]
        for name in ("write_row", "write_event", "write_key"):  # the compiled writers off: the pure-Python way
            monkeypatch.setattr(envelope, name, None)
        python = [reader.read_chunk(MySqlEventBuilder(config), chunk, 1, None, False, None) for chunk in chunks]
    finally:
        reader.close()
    assert sum(count for _, count in compiled) == 120
    for (mine, _), (theirs, _), (pythons, _) in zip(compiled, plain, python, strict=True):
        assert [(m.key, m.value) for m in mine] == [(t.key, t.value) for t in theirs], seed
        assert [(m.key, m.value) for m in mine] == [(p.key, p.value) for p in pythons], seed
