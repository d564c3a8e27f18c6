"""The MariaDB side of bench.compat: a private database, the workload, both connectors' properties, the masks.

The workload covers every type of docs/mariadb.md's type table with values, extremes and NULLs (but INET4 and INET6,
on which Debezium's DDL parser fails), read once by the initial snapshot and once streamed; then updates, deletes,
primary-key changes, a keyless table, TRUNCATE, DDL (a column added with a default, one changed, one dropped, a table
renamed, one created mid-stream), column defaults of many types (they appear in the Connect schemas), multi-statement
transactions and the schema change topic. Debezium's MariaDB connector keeps its schema history in a file of the run.
Each DDL statement waits for our connector's record of it: ours describes a table as information_schema shows it
when the record is built, where Debezium's parser replays the statements (docs/mariadb.md, differences from Debezium).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import uuid
from pathlib import Path

from bench.compat.compare import Intentional, Mask, mask_members, mask_snapshot_source, member
from bench.compat.debezium import wait_for
from bench.compat.dump import read_topic, topics_with_prefix
from connectors.mysql.config import MySqlConfig
from connectors.mysql.connection import ConnectionSettings, connect
from connectors.runner import ConnectorRunner
from devstack import settings
from devstack import stack as devstack

CONNECTOR_ARTIFACT = "debezium-connector-mariadb"
# the newest release of Debezium's MariaDB connector on Maven Central (3.6.x is not published there)
DEBEZIUM_MARIADB_VERSION = "3.5.0.Final"
END_TABLE = "compat_end"

ALL_TYPES = """CREATE TABLE all_types (
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED, bo BOOLEAN,
  de DECIMAL(10,3), dw DECIMAL(65,30), nu NUMERIC(5), fl FLOAT, db DOUBLE, re REAL, b1 BIT(1), b12 BIT(12),
  ch CHAR(3), vc VARCHAR(20), tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
  bn BINARY(4), vb VARBINARY(10), tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  d DATE, dn DATE NOT NULL DEFAULT '2000-01-01', t0 TIME, t6 TIME(6), dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6),
  dtz DATETIME NOT NULL DEFAULT '2000-01-01 00:00:00', ts0 TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL,
  ts6 TIMESTAMP(6) NULL, tsz TIMESTAMP NOT NULL DEFAULT '2000-01-01 00:00:00', y YEAR,
  en ENUM('x','y'), st SET('a','b','c'), js JSON,
  u16 VARCHAR(5) CHARACTER SET utf16, l1 VARCHAR(5) CHARACTER SET latin1,
  g GEOMETRY, pt POINT, ls LINESTRING, pg POLYGON
)"""

FULL_ROW = """INSERT INTO all_types VALUES (
  {id}, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808,
  18446744073709551615, 1, -1234567.891, '12345678901234567890123456789012345.123456789012345678901234567890', 12345,
  1.1, 2.5e-300, -0.5, b'1', b'100000000011',
  'é', 'héllo 😀 "q" \\\\ </t>', 'tiny', 'line\\nbreak', 'medium', 'long',
  'ab', 'x\\0y', 'tb', 'blob', 'mb', 'lb',
  '2024-02-29', '0000-00-00', '-00:00:01', '-838:59:59.000001', '1969-12-31 23:59:59', '2020-01-02 03:04:05.120',
  '2020-01-02 03:04:05.000001', '0000-00-00 00:00:00', '2020-01-02 03:04:05', '2020-01-02 03:04:05.100',
  '2018-06-20 15:13:16.945104', '0000-00-00 00:00:00', 2155,
  'y', 'c,a', '{"b": [1, 2.5], "a": null}',
  '😀é', '€‚ƒ',
  ST_GeomFromText('POINT(1 2)'), ST_GeomFromText('POINT(-1.5 2.25)', 4326), ST_GeomFromText('LINESTRING(0 0, 1 1)'),
  ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))')
)"""


def full_row(row_id: int) -> str:
    return FULL_ROW.replace("{id}", str(row_id), 1)


def null_row(row_id: int) -> str:
    return f"INSERT INTO all_types (id) VALUES ({row_id})"  # noqa: S608 - an int


EXTREMES = ("INSERT INTO all_types (id, ti, tiu, si, i, iu, bi, biu, de, nu, fl, db, b12, d, t6, dt6, ts0, ts6, y, "
            "js, vc) VALUES ({id}, 127, 0, 32767, 2147483647, 0, 9223372036854775807, 0, 9999999.999, -99999, "
            "-3.4e38, 1.7976931348623157e308, b'0', '1000-01-01', '838:59:59', '9999-12-31 23:59:59.999999', "
            "'1970-01-01 00:00:01', '2038-01-19 03:14:07.999999', 1901, '[]', '')")

DEFAULTS = """CREATE TABLE defaults (
  id BIGINT NOT NULL PRIMARY KEY DEFAULT 7,
  d_int INT NOT NULL DEFAULT 42, d_small SMALLINT DEFAULT -3, d_big BIGINT DEFAULT 9000000000,
  d_uint INT UNSIGNED DEFAULT 4000000000, d_bool BOOLEAN NOT NULL DEFAULT TRUE, d_bit BIT(1) DEFAULT b'1',
  d_bits BIT(10) DEFAULT b'1000000001', d_text VARCHAR(8) DEFAULT 'x''y', d_char CHAR(2) DEFAULT 'ab',
  d_float FLOAT DEFAULT 1.5, d_double DOUBLE DEFAULT -2.25, d_decimal DECIMAL(6,2) DEFAULT 3.14,
  d_date DATE DEFAULT '2020-02-29', d_dt DATETIME(3) DEFAULT '2020-01-01 10:00:00.5',
  d_dt6 DATETIME(6) DEFAULT '2020-01-01 10:00:00.000001', d_ts TIMESTAMP NULL DEFAULT '2020-01-01 10:00:00',
  d_ts6 TIMESTAMP(6) NULL DEFAULT '2020-01-01 10:00:00.123456', d_time TIME DEFAULT '12:34:56',
  d_year YEAR DEFAULT 2020, d_enum ENUM('a','b') DEFAULT 'b', d_set SET('a','b') DEFAULT 'a,b',
  d_now DATETIME DEFAULT CURRENT_TIMESTAMP, d_bin VARBINARY(4) DEFAULT 'ab', d_null INT DEFAULT NULL
)"""

# more DEFAULT clauses, in a table the snapshot reads (Debezium parses SHOW CREATE TABLE) and in one created while
# streaming (Debezium parses the statement): zero dates, CURRENT_TIMESTAMP on each temporal type, short bit literals,
# expressions (no default), TEXT and BLOB defaults, escapes, NULLs written as their defaults. Literals are spelt as
# the server shows them (Debezium's parser keeps a streamed statement's own spelling: docs/mariadb.md)
MORE_DEFAULTS = """CREATE TABLE {table} (
  id INT(11) NOT NULL PRIMARY KEY, d_tiny TINYINT(4) DEFAULT -128, d_medium MEDIUMINT(8) UNSIGNED DEFAULT 16777215,
  d_bits_short BIT(10) DEFAULT b'1', d_bit0 BIT(1) NOT NULL DEFAULT b'0', d_bits_zero BIT(12) DEFAULT b'0',
  d_dec_neg DECIMAL(5,1) DEFAULT -0.5, d_dec_int DECIMAL(10,0) DEFAULT 12, d_fl FLOAT DEFAULT 1.1,
  d_exp DOUBLE DEFAULT 1e300, d_small_exp DOUBLE DEFAULT -0.0025, d_tx TEXT DEFAULT 'tx', d_blob BLOB DEFAULT 'bl',
  d_bn BINARY(3) DEFAULT 'ab\\0', d_zero DATE NOT NULL DEFAULT '0000-00-00', d_zero_null DATE DEFAULT '0000-00-00',
  d_zero_dt DATETIME NOT NULL DEFAULT '0000-00-00 00:00:00',
  d_zero_dt_null DATETIME(3) DEFAULT '0000-00-00 00:00:00.000',
  d_zero_ts TIMESTAMP NOT NULL DEFAULT '0000-00-00 00:00:00',
  d_ts_now TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  d_ts_now_null TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP, d_dt_now6 DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6),
  d_dt_now_nn DATETIME NOT NULL DEFAULT NOW(), d_time_neg TIME(3) DEFAULT '-01:02:03.500',
  d_ts3 TIMESTAMP(3) NULL DEFAULT '2020-01-01 10:00:00.500',
  d_dt_frac DATETIME(6) DEFAULT '2020-01-01 10:00:00.500000', d_expr INT(11) DEFAULT (1 + 1),
  d_str_expr VARCHAR(10) DEFAULT (concat('a', 'b')), d_enum_nn ENUM('p','q') NOT NULL, d_int_nn INT(11) NOT NULL,
  d_tinyint1 TINYINT(1) DEFAULT 0, d_dq VARCHAR(5) DEFAULT "dq", d_esc VARCHAR(10) DEFAULT 'a\\\\b',
  d_empty VARCHAR(5) DEFAULT '', d_set_empty SET('a','b') DEFAULT '', d_latin VARCHAR(5) CHARACTER SET latin1
  DEFAULT 'é', d_year YEAR(4) DEFAULT 1999, d_ubig BIGINT(20) UNSIGNED DEFAULT 5
)"""

# MariaDB's UUID (10.7+), keyed by one, NULLs, a DEFAULT (Debezium's schema has none). INET4 and INET6 are not in the
# workload: Debezium's DDL parser fails on them, on any table of the server (docs/mariadb.md)
UUIDS = """CREATE TABLE uuids (
  id UUID NOT NULL PRIMARY KEY, u UUID, un UUID NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001',
  b16 BINARY(16), note VARCHAR(10)
)"""
# UUIDs whose last bytes are zero: Debezium's stream shifts them (`intentional`); no key is one, so events pair
UUID_ONE = "123e4567-e89b-12d3-a456-426655440001"
UUID_TRAILING = "22222222-3333-4444-8555-666666666666"

SETUP = [
    "SET SESSION sql_mode = ''",
    ALL_TYPES,
    UUIDS,
    DEFAULTS,
    MORE_DEFAULTS.format(table="more_defaults"),
    "CREATE TABLE keyless (a INT, b VARCHAR(10))",
    "CREATE TABLE composite (k1 INT, k2 VARCHAR(5), v VARCHAR(10), PRIMARY KEY (k2, k1))",
    "CREATE TABLE auto_inc (id INT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(10) DEFAULT 'n')",
    f"CREATE TABLE {END_TABLE} (id INT PRIMARY KEY)",
    full_row(1), null_row(2), EXTREMES.replace("{id}", "3", 1),
    "INSERT INTO defaults () VALUES ()",
    "INSERT INTO more_defaults (id, d_int_nn) VALUES (1, 0)",
    "INSERT INTO keyless VALUES (1, 'one'), (1, 'one'), (2, NULL)",
    "INSERT INTO composite VALUES (1, 'a', 'x'), (2, 'a', 'y')",
    "INSERT INTO auto_inc (note) VALUES ('first'), (DEFAULT)",
    f"INSERT INTO uuids VALUES ('{UUID_ONE}', '123E4567-E89B-12D3-A456-426655440000', "  # noqa: S608
    "'ffffffff-ffff-ffff-ffff-ffffffffffff', 'abcdefghijklmnop', 'one')",
    "INSERT INTO uuids (id, note) VALUES ('00000000-0000-0000-0000-0000000000ff', 'nulls')",
]

STREAM_WORKLOAD = [
    "SET SESSION sql_mode = ''",
    full_row(11), null_row(12), EXTREMES.replace("{id}", "13", 1),
    "UPDATE all_types SET tx = 'updated', i = i - 1 WHERE id IN (1, 11)",
    "UPDATE all_types SET bo = NULL, js = NULL, pt = NULL WHERE id = 1",
    "DELETE FROM all_types WHERE id = 2",
    "UPDATE all_types SET id = 21 WHERE id = 12",  # a primary-key change: delete + tombstone + create
    "INSERT INTO defaults (id, d_int) VALUES (8, 1)",
    "UPDATE defaults SET d_text = NULL WHERE id = 7",
    "BEGIN", "INSERT INTO composite VALUES (3, 'b', 'z')", "UPDATE composite SET v = 'w' WHERE k1 = 1",
    "DELETE FROM composite WHERE k1 = 2", "INSERT INTO keyless VALUES (3, 'three')", "COMMIT",
    "UPDATE keyless SET b = 'uno' WHERE a = 1",
    "DELETE FROM keyless WHERE a = 2",
    # INT(11): a width Debezium's parser reads from the statement, ours from information_schema (which has one)
    "ALTER TABLE composite ADD COLUMN added INT(11) NOT NULL DEFAULT 5",
    "INSERT INTO composite (k1, k2, v) VALUES (4, 'c', 'new col')",
    "ALTER TABLE composite MODIFY COLUMN v VARCHAR(30) NOT NULL DEFAULT 'dflt'",
    "ALTER TABLE composite DROP COLUMN v",
    "UPDATE composite SET added = 6 WHERE k1 = 4",
    "ALTER TABLE auto_inc RENAME COLUMN note TO remark",
    "INSERT INTO auto_inc (remark) VALUES ('renamed')",
    "RENAME TABLE auto_inc TO auto_inc2",
    "INSERT INTO auto_inc2 (remark) VALUES ('table renamed')",
    "CREATE TABLE created_later (id BIGINT(20) UNSIGNED AUTO_INCREMENT PRIMARY KEY, note TEXT, n INT(11) DEFAULT 3)",
    "INSERT INTO created_later (note) VALUES ('first'), (NULL)",
    MORE_DEFAULTS.format(table="more_defaults_later"),
    "INSERT INTO more_defaults_later (id, d_int_nn) VALUES (1, 0)",
    "UPDATE more_defaults_later SET d_tx = NULL, d_bits_short = NULL, d_ts3 = NULL WHERE id = 1",
    "INSERT INTO more_defaults (id, d_int_nn, d_zero, d_zero_dt, d_zero_ts) VALUES (2, 1, '0000-00-00', "
    "'0000-00-00 00:00:00', '0000-00-00 00:00:00')",
    "TRUNCATE keyless",
    "BEGIN", "INSERT INTO all_types (id, vc) VALUES (30, 'tx')", "UPDATE all_types SET vc = 'tx2' WHERE id = 30",
    "DELETE FROM all_types WHERE id = 30", "COMMIT",
    "INSERT INTO auto_inc2 (remark) VALUES ('a'), ('b')",  # a DDL's and a truncate's source.row: 1, left over
    "TRUNCATE composite",
    "DROP TABLE created_later",
    "INSERT INTO uuids VALUES ('01234567-89ab-4def-8123-456789abcdef', '00000000-0000-0000-0000-000000000000', "
    "'01234567-89AB-4DEF-8123-456789ABCDEF', 'x', 'two')",
    "INSERT INTO uuids (id, note) VALUES ('11111111-2222-4333-8444-555555555555', 'defaults')",
    f"INSERT INTO uuids VALUES ('{UUID_TRAILING}', 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeee0000', "  # noqa: S608
    "'89abcdef-0123-4567-89ab-cdef01234567', NULL, 'trailing')",
    "UPDATE uuids SET u = '89abcdef-0123-4567-89ab-cdef01234567', note = 'upd' WHERE note = 'nulls'",
    "UPDATE uuids SET u = NULL WHERE note = 'one'",
    "DELETE FROM uuids WHERE note = 'defaults'",
    "UPDATE uuids SET id = '33333333-4444-4555-8666-777777777777' WHERE note = 'two'",  # a UUID key changes
    "ALTER TABLE uuids ADD COLUMN u2 UUID DEFAULT '00000000-0000-0000-0000-000000000002'",
    "INSERT INTO uuids (id, u2) VALUES ('44444444-5555-4666-8777-888888888888', NULL)",
]


def _admin() -> ConnectionSettings:
    return ConnectionSettings.from_dsn(settings.mariadb_dsn())


def execute(statements, database: str | None = None) -> None:
    admin = _admin()
    connection = connect(admin.with_database(database) if database else admin)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION time_zone = '+00:00'")
            for statement in statements:
                cursor.execute(statement)
    finally:
        connection.close()


def _snapshot_masks(payload) -> None:
    mask_snapshot_source(payload, ("ts_ms", "ts_us", "ts_ns"))


MASKS = (
    Mask("payload.ts_ms, ts_us, ts_ns: when the connector wrote the event", lambda p: mask_members(
        p, ("ts_ms", "ts_us", "ts_ns"))),
    Mask("payload.source.ts_ms, ts_us, ts_ns of snapshot events: when each connector read the row",
         _snapshot_masks),
    Mask("payload.source.version: Debezium's MariaDB connector is published up to 3.5.0.Final",
         lambda p: mask_members(member(p, "source"), ("version",))),
)

# differences that stay, each with its reason (docs/mariadb.md lists them too); the CI short form fails on any other
UUID_SHIFTED = ("the binlog holds a UUID less its trailing zero bytes; Debezium 3.5.0's stream pads them back on the "
                "left (123e4567-…-426655440000 becomes 0000123e-…-a45642665544, unlike its snapshot of the same "
                "row); ours pads them on the right, the value the server holds")


def intentional(database: str) -> tuple[Intentional, ...]:
    """The differences kept on purpose in a run whose database (and so topics) is `database`."""
    topic = f"{database}.uuids"
    return (Intentional(topic, "value.before.u", UUID_SHIFTED, key=f'{{"id":"{UUID_ONE}"}}'.encode()),
            Intentional(topic, "value.after.u", UUID_SHIFTED, key=f'{{"id":"{UUID_TRAILING}"}}'.encode()))


class MariadbCompat:
    """One run's database and connectors."""

    name = "mariadb"
    connector_artifact = CONNECTOR_ARTIFACT
    debezium_version = DEBEZIUM_MARIADB_VERSION
    snapshot_events = 14  # the rows SETUP inserts
    masks = MASKS

    def __init__(self) -> None:
        devstack.up(["mariadb"], echo=lambda line: None)
        self.db = f"compat_{uuid.uuid4().hex[:10]}"
        self.prefix = self.db  # topic.prefix, the same for both connectors
        self.intentional = intentional(self.db)
        self.end_topic_suffix = f"{self.db}.{END_TABLE}"
        self._history = Path(tempfile.mkdtemp(prefix="compat-mariadb-history-"))
        self._runner: ConnectorRunner | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._server_id = 50_000 + uuid.uuid4().int % 10_000
        self._bootstrap = ""

    def prepare(self) -> None:
        execute([f"CREATE DATABASE {self.db}"])
        execute(SETUP, self.db)

    def _common(self) -> dict[str, object]:
        admin = _admin()
        user, password = settings.MARIADB_CDC_USER
        return {
            "topic.prefix": self.prefix, "database.hostname": admin.host, "database.port": admin.port,
            "database.user": user, "database.password": password, "database.include.list": self.db,
            "include.schema.changes": "true", "skipped.operations": "none", "snapshot.mode": "initial",
        }

    def debezium_properties(self) -> dict[str, object]:
        return {
            "name": f"{self.prefix}-debezium", "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
            "tasks.max": 1, "database.server.id": self._server_id, **self._common(),
            "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
            "schema.history.internal.file.filename": self._history / "history.dat",
        }

    def start_ours(self, bootstrap: str, schemas_enable: bool) -> None:
        self._bootstrap = bootstrap
        schemas = "true" if schemas_enable else "false"
        config = MySqlConfig.from_properties({
            "name": self.prefix, "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
            **self._common(), "database.server.id": self._server_id + 1,
            "offset.storage.topic": f"compat-offsets-{self.prefix}",
            "key.converter.schemas.enable": schemas, "value.converter.schemas.enable": schemas,
        })
        self._runner = ConnectorRunner(config, bootstrap, self._stop)
        self._thread = threading.Thread(target=self._runner.run, daemon=True, name="compat-ours")
        self._thread.start()

    def check_ours(self) -> None:
        if self._thread is not None and not self._thread.is_alive():
            raise RuntimeError("our connector stopped before the workload's end (its log above says why)")

    def both_started(self) -> bool:
        """Both connectors read the binlog: each has taken its snapshot's position, so every later change is
        streamed to both and is in neither snapshot."""
        admin = _admin()
        connection = connect(admin)
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM information_schema.PROCESSLIST "
                               "WHERE COMMAND LIKE 'Binlog Dump%%' AND USER = %s",
                               (settings.MARIADB_CDC_USER[0],))
                return cursor.fetchone()[0] >= 2
        finally:
            connection.close()

    def run_workload(self) -> None:
        batch: list[str] = []
        for statement in STREAM_WORKLOAD:
            batch.append(statement)
            if statement.split()[0].upper() in ("ALTER", "RENAME", "CREATE"):
                execute(batch, self.db)
                batch = ["SET SESSION sql_mode = ''"]
                wait_for(lambda ddl=statement: ddl in self._our_ddl(), f"our record of {statement!r}", 120,
                         (self.check_ours,))
        execute(batch, self.db)
        execute([f"INSERT INTO {END_TABLE} VALUES (1)"], self.db)  # noqa: S608 - a constant

    def _our_ddl(self) -> set[str]:
        if self.prefix not in topics_with_prefix(self._bootstrap, self.prefix):
            return set()
        out = set()
        for record in read_topic(self._bootstrap, self.prefix):
            value = json.loads(record.value)
            out.add(value.get("payload", value)["ddl"] if "schema" in value else value["ddl"])
        return out

    def stop_ours(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(120)

    def cleanup(self) -> None:
        execute([f"DROP DATABASE IF EXISTS {self.db}"])
        shutil.rmtree(self._history, ignore_errors=True)
