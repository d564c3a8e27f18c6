"""The compiled rows decoder (connectors/mysql/_binrows, compiled_rows.py) gives the binlog reader the same row changes
as python-mysql-replication's own decoding: random rows of every type it decodes (integers of each width at their
limits, signed and unsigned, floats, decimals of every digit grouping, YEAR, DATE, DATETIME, TIMESTAMP and TIME of every
fraction width, negative times, CHAR, VARCHAR, TINYTEXT to LONGTEXT, binary strings and blobs, MariaDB's UUID, INET4
and INET6 (BINARY(16) and BINARY(4) in the table map), in utf8mb4, latin1, utf16 and ascii, ENUMs of one and two
bytes, SETs of one, three and eight bytes, empty SETs, BIT(1), BIT(10), BIT(64), NULLs) inserted, updated and
deleted many rows a statement, read from the real server both ways; zero dates, whose events it leaves to the library;
and a table with a type it does not decode."""

from __future__ import annotations

import random
import uuid

import pytest

from connectors.mysql import compiled_rows
from connectors.mysql.binlog import BinlogPosition, RowChange
from connectors.mysql.connection import connect
from tests.compiled_modules import require_built
from tests.mariadb.binlog_reading import binlog_status, read_to_end

pytestmark = [pytest.mark.integration]

COLUMNS = {
    "ti": ("TINYINT", lambda rng: rng.randint(-128, 127)),
    "tiu": ("TINYINT UNSIGNED", lambda rng: rng.randint(0, 255)),
    "si": ("SMALLINT", lambda rng: rng.randint(-32768, 32767)),
    "siu": ("SMALLINT UNSIGNED", lambda rng: rng.randint(0, 65535)),
    "mi": ("MEDIUMINT", lambda rng: rng.randint(-8388608, 8388607)),
    "miu": ("MEDIUMINT UNSIGNED", lambda rng: rng.randint(0, 16777215)),
    "i": ("INT", lambda rng: rng.randint(-2**31, 2**31 - 1)),
    "iu": ("INT UNSIGNED", lambda rng: rng.randint(0, 2**32 - 1)),
    "bi": ("BIGINT", lambda rng: rng.randint(-2**63, 2**63 - 1)),
    "biu": ("BIGINT UNSIGNED", lambda rng: rng.randint(0, 2**64 - 1)),
    "fl": ("FLOAT", lambda rng: rng.choice([0.0, -1.5, 3.4e38, 1.17549435e-38, rng.uniform(-1e6, 1e6)])),
    "db": ("DOUBLE", lambda rng: rng.choice([0.0, -2.5, 1.7976931348623157e308, 5e-324, rng.uniform(-1e12, 1e12)])),
    "y": ("YEAR", lambda rng: rng.choice([1901, 2155, 2024, 0])),
    "ch": ("CHAR(5)", lambda rng: rng.choice(["", "a", "héllo", "😀x"])),
    "vc": ("VARCHAR(20)", lambda rng: _text(rng, 20)),
    "vw": ("VARCHAR(400)", lambda rng: _text(rng, 400)),
    "l1": ("VARCHAR(30) CHARACTER SET latin1", lambda rng: rng.choice(["", "café", "naïve ÿ", "plain"])),
    "u16": ("VARCHAR(8) CHARACTER SET utf16", lambda rng: rng.choice(["", "ab", "é😀"])),
    "a7": ("VARCHAR(8) CHARACTER SET ascii", lambda rng: rng.choice(["", "ascii"])),
    "tt": ("TINYTEXT", lambda rng: _text(rng, 60)),
    "tx": ("TEXT", lambda rng: _text(rng, 3000)),
    "mt": ("MEDIUMTEXT", lambda rng: _text(rng, 70000)),
    "lt": ("LONGTEXT", lambda rng: _text(rng, 100)),
    "bn": ("BINARY(4)", lambda rng: rng.randbytes(rng.randint(0, 4))),
    "uu": ("UUID", lambda rng: rng.choice(["123e4567-e89b-12d3-a456-426655440000",
                                           str(uuid.UUID(int=rng.getrandbits(128), version=4))])),
    "i4": ("INET4", lambda rng: rng.choice(["0.0.0.0", "10.0.0.0", "255.255.255.255", "192.168.1.10"])),
    "i6": ("INET6", lambda rng: rng.choice(["::", "::1", "2001:db8::ff00:42:8329", "fe80::"])),
    "vb": ("VARBINARY(300)", lambda rng: rng.randbytes(rng.randint(0, 300))),
    "bl": ("BLOB", lambda rng: rng.randbytes(rng.randint(0, 2000))),
    "d1": ("DECIMAL(10,3)", lambda rng: _decimal(rng, 7, 3)),
    "d2": ("DECIMAL(65,30)", lambda rng: _decimal(rng, 35, 30)),
    "d3": ("DECIMAL(5,5)", lambda rng: _decimal(rng, 0, 5)),
    "d4": ("DECIMAL(18,0)", lambda rng: _decimal(rng, 18, 0)),
    "d5": ("DECIMAL(12,4) UNSIGNED", lambda rng: _decimal(rng, 8, 4).lstrip("-")),
    "da": ("DATE", lambda rng: rng.choice(["1000-01-01", "9999-12-31", "2024-02-29", _date(rng)])),
    "t0": ("DATETIME", lambda rng: f"{_date(rng)} {_time(rng, 0)}"),
    "t3": ("DATETIME(3)", lambda rng: f"{_date(rng)} {_time(rng, 3)}"),
    "t6": ("DATETIME(6)", lambda rng: rng.choice(["1000-01-01 00:00:00", "9999-12-31 23:59:59.999999",
                                                   f"{_date(rng)} {_time(rng, 6)}"])),
    "s0": ("TIMESTAMP NULL", lambda rng: f"{rng.randint(1971, 2037)}-{_date(rng)[5:]} {_time(rng, 0)}"),
    "s5": ("TIMESTAMP(5) NULL", lambda rng: f"{rng.randint(1971, 2037)}-{_date(rng)[5:]} {_time(rng, 5)}"),
    "h0": ("TIME", lambda rng: _duration(rng, 0)),
    "h1": ("TIME(1)", lambda rng: _duration(rng, 1)),
    "h2": ("TIME(2)", lambda rng: _duration(rng, 2)),
    "h4": ("TIME(4)", lambda rng: _duration(rng, 4)),
    "e1": ("ENUM('a', 'bé', '')", lambda rng: rng.choice(["a", "bé", ""])),
    "e2": (f"ENUM({', '.join(repr(f'v{n}') for n in range(300))})", lambda rng: f"v{rng.randrange(300)}"),
    "s1": ("SET('x', 'y', 'z')", lambda rng: rng.choice(["", "x", "x,z", "z,y,x"])),
    "s3": (f"SET({', '.join(repr(f'm{n}') for n in range(20))})",
           lambda rng: ",".join(f"m{n}" for n in range(20) if rng.random() < 0.3)),
    "s8": (f"SET({', '.join(repr(f'w{n}') for n in range(64))})",
           lambda rng: ",".join(f"w{n}" for n in range(64) if rng.random() < 0.3)),
    "b1": ("BIT(1)", lambda rng: rng.randint(0, 1)),
    "b10": ("BIT(10)", lambda rng: rng.randint(0, 1023)),
    "b64": ("BIT(64)", lambda rng: rng.choice([0, 1, 2**63, 2**64 - 1, rng.randrange(2**64)])),
    "h6": ("TIME(6)", lambda rng: rng.choice(["-838:59:59.000000", "838:59:59.000000", "-00:00:00.000001",
                                               _duration(rng, 6)])),
}


def _decimal(rng: random.Random, integral: int, scale: int) -> str:
    whole = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, integral))) if integral else ""
    fraction = "".join(rng.choice("0123456789") for _ in range(scale))
    return f"{rng.choice(['', '-'])}{whole or '0'}{'.' + fraction if scale else ''}"


def _date(rng: random.Random) -> str:
    return f"{rng.randint(1000, 9999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _time(rng: random.Random, fsp: int) -> str:
    fraction = "." + "".join(rng.choice("0123456789") for _ in range(fsp)) if fsp else ""
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}{fraction}"


def _duration(rng: random.Random, fsp: int) -> str:
    fraction = "." + "".join(rng.choice("0123456789") for _ in range(fsp)) if fsp else ""
    return f"{rng.choice(['', '-'])}{rng.randint(0, 838)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}{fraction}"


def _text(rng: random.Random, longest: int) -> str:
    alphabet = "abcXYZ 019é€😀\"\\\n"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, min(longest // 2, 40) if longest < 1000 else
                                                                  rng.choice([10, longest // 4]))))


def _row(rng: random.Random, key: int) -> tuple:
    return (key, *(None if rng.random() < 0.15 else make(rng) for _, make in COLUMNS.values()))


def test_the_compiled_decoder_gives_the_librarys_row_changes(mariadb, mariadb_db, monkeypatch):
    require_built(compiled_rows.compiled, "connectors/mysql/_binrows")
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    columns = ", ".join(f"{name} {kind}" for name, (kind, _) in COLUMNS.items())
    mariadb.execute(f"CREATE TABLE typed (id INT PRIMARY KEY, {columns})",
                    "CREATE TABLE listed (id INT PRIMARY KEY, kind POINT, label VARCHAR(10))",
                    database=mariadb_db)
    start = binlog_status(mariadb)
    connection = connect(mariadb.admin.with_database(mariadb_db), autocommit=False)
    marks = ", ".join(["%s"] * (len(COLUMNS) + 1))
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION sql_mode = ''")  # YEAR 0 and out-of-range floats as the server stores them
            for batch in range(12):
                cursor.executemany(f"INSERT INTO typed VALUES ({marks})",  # noqa: S608 - the test's own columns
                                   [_row(rng, batch * 100 + n) for n in range(rng.randint(1, 40))])
                cursor.execute("INSERT INTO listed VALUES (%s, POINT(1, 2), 'x')", (batch,))
                if batch % 5 == 2:  # zero dates: the library decodes the event (and its reasons for None)
                    cursor.execute("UPDATE typed SET da = '0000-00-00', t3 = '0000-00-00 00:00:00' WHERE id % 7 = 1")
                name = rng.choice(list(COLUMNS))
                value = COLUMNS[name][1](rng)
                cursor.execute(f"UPDATE typed SET {name} = %s WHERE id %% 3 = %s", (value, batch % 3))  # noqa: S608
                cursor.execute("UPDATE listed SET label = 'y' WHERE id = %s", (batch,))
                if batch % 4 == 3:
                    cursor.execute("DELETE FROM typed WHERE id %% 5 = %s", (batch % 5,))
                connection.commit()
    finally:
        connection.close()

    position = BinlogPosition(gtids=start.gtids)
    compiled = read_to_end(mariadb.cdc, 6203, position, mariadb_db)
    typed = [c for c in compiled if type(c) is RowChange and c.schema.table == "typed"]
    assert {c.op for c in typed} == {"c", "u", "d"} and len(typed) > 200
    assert compiled_rows.layout(typed[0].schema) is not None  # this table's rows were the compiled module's
    listed = next(c for c in compiled if type(c) is RowChange and c.schema.table == "listed")
    assert compiled_rows.layout(listed.schema) is None  # geometry: the library's
    monkeypatch.setattr(compiled_rows, "compiled", None)
    by_library = read_to_end(mariadb.cdc, 6204, position, mariadb_db)
    assert len(compiled) == len(by_library), seed
    for ours, theirs in zip(compiled, by_library, strict=True):
        if type(ours) is RowChange:
            for image in ("before", "after"):
                mine, library = getattr(ours, image) or {}, getattr(theirs, image) or {}
                assert {k: (v, library.get(k)) for k, v in mine.items() if v != library.get(k)} == {}, (seed, image)
        assert ours == theirs, (seed, ours, theirs)
