"""Every type on the real MariaDB, written by SQL, read back through the binlog reader and mapped as Debezium
documents it (MySQL connector data type mappings, default modes unless a test says otherwise)."""

from __future__ import annotations

import base64

import pytest

from connectors.mysql.binlog import BinlogPosition, BinlogReader, RowChange
from connectors.mysql.connection import connect
from connectors.mysql.status import show_binlog_status
from connectors.mysql.types import TypeOptions, json_columns, mapping

pytestmark = pytest.mark.integration

COLUMNS = """
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED, bo BOOLEAN,
  de DECIMAL(10,3), fl FLOAT, db DOUBLE, b1 BIT(1), b12 BIT(12),
  ch CHAR(3), vc VARCHAR(20), tx TEXT, bn BINARY(4), vb VARBINARY(10), bl BLOB,
  d DATE, dn DATE NOT NULL DEFAULT '2000-01-01', t0 TIME, t6 TIME(6), dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6),
  dtz DATETIME NOT NULL DEFAULT '2000-01-01 00:00:00', ts0 TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL,
  tsz TIMESTAMP NOT NULL DEFAULT '2000-01-01 00:00:00', y YEAR, en ENUM('x','y'), st SET('a','b','c'), js JSON
"""

ROW = {
    "id": 1, "ti": -128, "tiu": 255, "si": -32768, "siu": 65535, "mi": -8388608, "miu": 16777215,
    "i": -2147483648, "iu": 4294967295, "bi": -9223372036854775808, "biu": 18446744073709551615, "bo": 1,
    "de": "-1234567.891", "fl": 1.1, "db": 2.5e-300, "b1": "b'1'", "b12": "b'100000000011'",
    "ch": "é", "vc": "héllo 😀", "tx": "text", "bn": "ab", "vb": "x\x00y", "bl": "blob",
    "d": "2024-02-29", "dn": "0000-00-00", "t0": "-00:00:01", "t6": "-838:59:59.000001",
    "dt0": "1969-12-31 23:59:59", "dt3": "2020-01-02 03:04:05.120", "dt6": "2020-01-02 03:04:05.000001",
    "dtz": "0000-00-00 00:00:00", "ts0": "2020-01-02 03:04:05", "ts3": "2020-01-02 03:04:05.100",
    "tsz": "0000-00-00 00:00:00", "y": 2155, "en": "y", "st": "c,a", "js": '{"b": [1, 2.5], "a": null}',
}
LITERAL = {"b1", "b12"}  # written as SQL literals, not strings

# name -> (connect type, logical name, parameters, JSON payload value)
EXPECTED = {
    "id": ("int32", None, {}, 1),
    "ti": ("int16", None, {}, -128),
    "tiu": ("int16", None, {}, 255),
    "si": ("int16", None, {}, -32768),
    "siu": ("int32", None, {}, 65535),
    "mi": ("int32", None, {}, -8388608),
    "miu": ("int32", None, {}, 16777215),
    "i": ("int32", None, {}, -2147483648),
    "iu": ("int64", None, {}, 4294967295),
    "bi": ("int64", None, {}, -9223372036854775808),
    "biu": ("int64", None, {}, -1),  # bigint.unsigned.handling.mode=long wraps as Java's long
    "bo": ("int16", None, {}, 1),
    "de": ("bytes", "org.apache.kafka.connect.data.Decimal", {"scale": "3", "connect.decimal.precision": "10"},
           base64.b64encode((-1234567891).to_bytes(4, "big", signed=True)).decode()),
    "fl": ("float32", None, {}, 1.1),
    "db": ("float64", None, {}, 2.5e-300),
    "b1": ("boolean", None, {}, True),
    "b12": ("bytes", "io.debezium.data.Bits", {"length": "12"}, base64.b64encode(bytes([0x03, 0x08])).decode()),
    "ch": ("string", None, {}, "é"),
    "vc": ("string", None, {}, "héllo 😀"),
    "tx": ("string", None, {}, "text"),
    "bn": ("bytes", None, {}, base64.b64encode(b"ab\x00\x00").decode()),
    "vb": ("bytes", None, {}, base64.b64encode(b"x\x00y").decode()),
    "bl": ("bytes", None, {}, base64.b64encode(b"blob").decode()),
    "d": ("int32", "io.debezium.time.Date", {}, 19782),
    "dn": ("int32", "io.debezium.time.Date", {}, 0),  # zero date in a NOT NULL column: the epoch
    "t0": ("int64", "io.debezium.time.MicroTime", {}, -1_000_000),
    "t6": ("int64", "io.debezium.time.MicroTime", {}, -((838 * 3600 + 59 * 60 + 59) * 1_000_000 + 1)),
    "dt0": ("int64", "io.debezium.time.Timestamp", {}, -1000),
    "dt3": ("int64", "io.debezium.time.Timestamp", {}, 1577934245120),
    "dt6": ("int64", "io.debezium.time.MicroTimestamp", {}, 1577934245000001),
    "dtz": ("int64", "io.debezium.time.Timestamp", {}, 0),
    "ts0": ("string", "io.debezium.time.ZonedTimestamp", {}, "2020-01-02T03:04:05Z"),
    "ts3": ("string", "io.debezium.time.ZonedTimestamp", {}, "2020-01-02T03:04:05.100Z"),
    "tsz": ("string", "io.debezium.time.ZonedTimestamp", {}, "1970-01-01T00:00:00Z"),
    "y": ("int32", "io.debezium.time.Year", {}, 2155),
    "en": ("string", "io.debezium.data.Enum", {"allowed": "x,y"}, "y"),
    "st": ("string", "io.debezium.data.EnumSet", {"allowed": "a,b,c"}, "a,c"),
    "js": ("string", "io.debezium.data.Json", {}, '{"b": [1, 2.5], "a": null}'),
}


def read_rows(mariadb, database, start, options=TypeOptions()):
    reader = BinlogReader(mariadb.cdc, server_id=6101, start=start, only_schemas=[database], blocking=False)
    connection = connect(mariadb.admin)
    try:
        declared = json_columns(connection, database, "all_types")
    finally:
        connection.close()
    rows = []
    for change in reader:
        if isinstance(change, RowChange):
            maps = {c.name: mapping(c, options, declared_json=c.name in declared) for c in change.schema.columns}
            rows.append({name: (m.schema, m.json_value(change.after[name])) for name, m in maps.items()})
    return rows


@pytest.fixture
def written(mariadb, mariadb_db):
    mariadb.execute(f"CREATE TABLE all_types ({COLUMNS})", database=mariadb_db)
    connection = connect(mariadb.admin.with_database(mariadb_db))
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
            start = show_binlog_status(cursor)
            names = list(ROW)
            values = ", ".join(str(ROW[n]) if n in LITERAL else "%s" for n in names)
            cursor.execute(f"INSERT INTO all_types ({', '.join(names)}) VALUES ({values})",  # noqa: S608
                           [ROW[n] for n in names if n not in LITERAL])
            cursor.execute("INSERT INTO all_types (id) VALUES (2)")
    finally:
        connection.close()
    return BinlogPosition(gtids=start.gtids)


def test_every_type_as_debezium_maps_it(mariadb, mariadb_db, written):
    full, nulls = read_rows(mariadb, mariadb_db, written)
    assert set(full) == set(EXPECTED)
    for name, (type_, logical, parameters, value) in EXPECTED.items():
        schema, actual = full[name]
        assert (schema.type, schema.name, schema.parameters, actual) == (type_, logical, parameters, value), name
        if logical:
            assert schema.version == 1
        assert schema.optional is (name not in ("id", "dn", "dtz", "tsz"))
    # the second row: NULL everywhere a column allows it, the defaults elsewhere
    assert {n for n, (_, v) in nulls.items() if v is not None} == {"id", "dn", "dtz", "tsz"}


def test_other_modes(mariadb, mariadb_db, written):
    options = TypeOptions(decimal_handling_mode="string", bigint_unsigned_handling_mode="precise",
                          binary_handling_mode="hex", time_precision_mode="connect")
    full, _ = read_rows(mariadb, mariadb_db, written, options)
    assert full["de"][1] == "-1234567.891" and full["de"][0].type == "string"
    assert full["biu"][0].name == "org.apache.kafka.connect.data.Decimal"
    assert full["biu"][0].parameters == {"scale": "0", "connect.decimal.precision": "20"}
    assert base64.b64decode(full["biu"][1]) == (18446744073709551615).to_bytes(9, "big", signed=True)
    assert full["bn"] == (full["bn"][0], "61620000") and full["bn"][0].type == "string"
    assert (full["t0"][0].name, full["t0"][0].type, full["t0"][1]) == ("org.apache.kafka.connect.data.Time", "int32",
                                                                      -1000)
    assert (full["dt6"][0].name, full["dt6"][1]) == ("org.apache.kafka.connect.data.Timestamp", 1577934245000)
    assert full["d"][0].name == "org.apache.kafka.connect.data.Date"
    double, _ = read_rows(mariadb, mariadb_db, written, TypeOptions(decimal_handling_mode="double"))
    assert double["de"][0].type == "float64" and double["de"][1] == -1234567.891
