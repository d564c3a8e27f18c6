"""The all-types MariaDB table, a row of every type and the Kafka Connect schema and value Debezium's MySQL connector
documents for each column, shared by the type tests through the binlog reader (test_types_real) and through the whole
connector into Kafka (test_source_types)."""

from __future__ import annotations

import base64

from connectors.mysql.connection import connect

WIDE = "12345678901234567890123456789012345.123456789012345678901234567890"
WIDE_UNSCALED = int(WIDE.replace(".", ""))

COLUMNS = """
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED, bo BOOLEAN,
  de DECIMAL(10,3), dw DECIMAL(65,30), fl FLOAT, db DOUBLE, b1 BIT(1), b12 BIT(12),
  ch CHAR(3), vc VARCHAR(20), tx TEXT, bn BINARY(4), vb VARBINARY(10), bl BLOB,
  d DATE, dn DATE NOT NULL DEFAULT '2000-01-01', t0 TIME, t6 TIME(6), dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6),
  dtz DATETIME NOT NULL DEFAULT '2000-01-01 00:00:00', ts0 TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL,
  tsz TIMESTAMP NOT NULL DEFAULT '2000-01-01 00:00:00', y YEAR, en ENUM('x','y'), st SET('a','b','c'), js JSON,
  dp DATE, dtp DATETIME(2),
  u16 VARCHAR(5) CHARACTER SET utf16, u32 VARCHAR(5) CHARACTER SET utf32, ucs VARCHAR(5) CHARACTER SET ucs2,
  l1 VARCHAR(5) CHARACTER SET latin1
"""

ROW = {
    "id": 1, "ti": -128, "tiu": 255, "si": -32768, "siu": 65535, "mi": -8388608, "miu": 16777215,
    "i": -2147483648, "iu": 4294967295, "bi": -9223372036854775808, "biu": 18446744073709551615, "bo": 1,
    "de": "-1234567.891", "dw": WIDE, "fl": 1.1, "db": 2.5e-300, "b1": "b'1'", "b12": "b'100000000011'",
    "ch": "é", "vc": "héllo 😀", "tx": "text", "bn": "ab", "vb": "x\x00y", "bl": "blob",
    "d": "2024-02-29", "dn": "0000-00-00", "t0": "-00:00:01", "t6": "-838:59:59.000001",
    "dt0": "1969-12-31 23:59:59", "dt3": "2020-01-02 03:04:05.120", "dt6": "2020-01-02 03:04:05.000001",
    "dtz": "0000-00-00 00:00:00", "ts0": "2020-01-02 03:04:05", "ts3": "2020-01-02 03:04:05.100",
    "tsz": "0000-00-00 00:00:00", "y": 2155, "en": "y", "st": "c,a", "js": '{"b": [1, 2.5], "a": null}',
    "dp": "2020-00-00", "dtp": "2020-01-00 10:00:00.50",  # zero parts: allowed without NO_ZERO_IN_DATE
    "u16": "😀é", "u32": "😀é", "ucs": "é€", "l1": "€‚ƒ\x81",  # MySQL's latin1: cp1252, 0x81 a C1 control
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
    # more digits than Python's default decimal context keeps (28)
    "dw": ("bytes", "org.apache.kafka.connect.data.Decimal", {"scale": "30", "connect.decimal.precision": "65"},
           base64.b64encode(WIDE_UNSCALED.to_bytes(WIDE_UNSCALED.bit_length() // 8 + 1, "big")).decode()),
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
    "dn": ("int32", "io.debezium.time.Date", {}, 10957),  # zero date in a NOT NULL column: its default (2000-01-01)
    "t0": ("int64", "io.debezium.time.MicroTime", {}, -1_000_000),
    "t6": ("int64", "io.debezium.time.MicroTime", {}, -((838 * 3600 + 59 * 60 + 59) * 1_000_000 + 1)),
    "dt0": ("int64", "io.debezium.time.Timestamp", {}, -1000),
    "dt3": ("int64", "io.debezium.time.Timestamp", {}, 1577934245120),
    "dt6": ("int64", "io.debezium.time.MicroTimestamp", {}, 1577934245000001),
    "dtz": ("int64", "io.debezium.time.Timestamp", {}, 946684800000),  # as dn
    "ts0": ("string", "io.debezium.time.ZonedTimestamp", {}, "2020-01-02T03:04:05Z"),
    "ts3": ("string", "io.debezium.time.ZonedTimestamp", {}, "2020-01-02T03:04:05.100Z"),
    # TIMESTAMP's zero is the epoch in the binlog, which Debezium keeps (a SELECT reads null: the default)
    "tsz": ("string", "io.debezium.time.ZonedTimestamp", {}, "1970-01-01T00:00:00Z"),
    "y": ("int32", "io.debezium.time.Year", {}, 2155),
    "en": ("string", "io.debezium.data.Enum", {"allowed": "x,y"}, "y"),
    "st": ("string", "io.debezium.data.EnumSet", {"allowed": "a,b,c"}, "a,c"),
    "js": ("string", None, {}, '{"b": [1, 2.5], "a": null}'),  # LONGTEXT to Debezium's MariaDB connector
    # a date with a zero part is a zero date: null where the column allows it
    "dp": ("int32", "io.debezium.time.Date", {}, None),
    "dtp": ("int64", "io.debezium.time.Timestamp", {}, None),
    # other character sets (the binlog holds their bytes; utf16, utf32 and ucs2 are big-endian)
    "u16": ("string", None, {}, "😀é"),
    "u32": ("string", None, {}, "😀é"),
    "ucs": ("string", None, {}, "é€"),
    "l1": ("string", None, {}, "€‚ƒ\x81"),
}
# read by SELECT (snapshots): Debezium writes a TIMESTAMP's fraction from JDBC, without trailing zeros
SELECTED = {"ts3": "2020-01-02T03:04:05.1Z", "tsz": "2000-01-01T00:00:00Z"}
NOT_NULL = {"id", "dn", "dtz", "tsz"}
# the row inserted with only its id: NULL wherever a column allows it, the declared defaults elsewhere (written with
# the session's time_zone +00:00)
DEFAULTS = {"dn": 10957, "dtz": 946684800000, "tsz": "2000-01-01T00:00:00Z"}

# the other modes, as connector properties, and the columns whose schema and value they change
OTHER_MODES = {"decimal.handling.mode": "string", "bigint.unsigned.handling.mode": "precise",
               "binary.handling.mode": "hex", "time.precision.mode": "connect"}
OTHER_MODES_EXPECTED = {
    "biu": ("bytes", "org.apache.kafka.connect.data.Decimal", {"scale": "0", "connect.decimal.precision": "20"},
            base64.b64encode((18446744073709551615).to_bytes(9, "big", signed=True)).decode()),
    "de": ("string", None, {}, "-1234567.891"),
    "dw": ("string", None, {}, WIDE),
    "bn": ("string", None, {}, "61620000"),
    "vb": ("string", None, {}, "780079"),
    "bl": ("string", None, {}, "626c6f62"),
    "d": ("int32", "org.apache.kafka.connect.data.Date", {}, 19782),
    "dn": ("int32", "org.apache.kafka.connect.data.Date", {}, 10957),
    "t0": ("int32", "org.apache.kafka.connect.data.Time", {}, -1000),
    # t6's value (-838:59:59.000001) is not compared: its milliseconds do not fit Time's int32
    "t6": ("int32", "org.apache.kafka.connect.data.Time", {}, None),
    "dt0": ("int64", "org.apache.kafka.connect.data.Timestamp", {}, -1000),
    "dt3": ("int64", "org.apache.kafka.connect.data.Timestamp", {}, 1577934245120),
    "dt6": ("int64", "org.apache.kafka.connect.data.Timestamp", {}, 1577934245000),
    "dtz": ("int64", "org.apache.kafka.connect.data.Timestamp", {}, 946684800000),
    "dp": ("int32", "org.apache.kafka.connect.data.Date", {}, None),
    "dtp": ("int64", "org.apache.kafka.connect.data.Timestamp", {}, None),
}
OUT_OF_RANGE_UNDER_OTHER_MODES = {"t6"}
DOUBLE_EXPECTED = {"de": ("float64", None, {}, -1234567.891), "dw": ("float64", None, {}, float(WIDE))}


def insert_rows(mariadb, database: str, first_id: int) -> None:
    """ROW with id `first_id`, then a row with only its id (`first_id + 1`)."""
    connection = connect(mariadb.admin.with_database(database))
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
            row = {**ROW, "id": first_id}
            names = list(row)
            values = ", ".join(str(row[n]) if n in LITERAL else "%s" for n in names)
            cursor.execute(f"INSERT INTO all_types ({', '.join(names)}) VALUES ({values})",  # noqa: S608
                           [row[n] for n in names if n not in LITERAL])
            cursor.execute("INSERT INTO all_types (id) VALUES (%s)", (first_id + 1,))
    finally:
        connection.close()
