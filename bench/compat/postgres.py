"""The PostgreSQL side of bench.compat: a private database, the workload, both connectors' properties, the masks.

The workload covers every type of docs/postgres.md's type table with values, extremes and NULLs, read once by the
initial snapshot and once streamed; then updates, deletes, primary-key changes, a keyless table (REPLICA IDENTITY
FULL and DEFAULT), TRUNCATE, DDL (a column added with a default, one dropped, a table created mid-stream), column
defaults of many types (they appear in the Connect schemas) and multi-statement transactions. Both connectors read
one publication FOR ALL TABLES, each through its own slot.
"""

from __future__ import annotations

import threading
import uuid

import psycopg2
import psycopg2.extensions

from bench.compat.compare import Intentional, Mask, mask_members, mask_snapshot_source
from connectors.postgres.config import PostgresConfig
from connectors.runner import ConnectorRunner
from devstack import postgres as devstack_postgres
from devstack import stack as devstack

CONNECTOR_ARTIFACT = "debezium-connector-postgres"
PUBLICATION = "compat_pub"
END_TABLE = "compat_end"

SETUP = """
CREATE EXTENSION IF NOT EXISTS hstore;
CREATE EXTENSION IF NOT EXISTS citext;
CREATE EXTENSION IF NOT EXISTS ltree;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN price AS numeric(8,3);
CREATE TABLE all_types (
  id int PRIMARY KEY,
  c_bool boolean, c_int2 smallint, c_int4 integer, c_int8 bigint, c_oid oid, c_float4 real, c_float8 double precision,
  c_numeric numeric, c_numeric_p numeric(10,2), c_numeric_p0 numeric(5), c_money money,
  c_char char(3), c_varchar varchar(10), c_text text, c_name name, c_qchar "char", c_bytea bytea,
  c_date date, c_time time, c_time3 time(3), c_timetz timetz, c_timestamp timestamp, c_timestamp3 timestamp(3),
  c_timestamptz timestamptz, c_timestamptz0 timestamptz(0), c_interval interval,
  c_uuid uuid, c_json json, c_jsonb jsonb, c_xml xml,
  c_inet inet, c_cidr cidr, c_macaddr macaddr, c_macaddr8 macaddr8,
  c_bit1 bit(1), c_bit10 bit(10), c_varbit varbit, c_varbit5 varbit(5),
  c_int4range int4range, c_int8range int8range, c_numrange numrange, c_tsrange tsrange, c_tstzrange tstzrange,
  c_daterange daterange, c_tsvector tsvector,
  c_mood mood, c_price price, c_hstore hstore, c_citext citext, c_ltree ltree,
  c_int_arr int[], c_text_arr text[], c_numeric_arr numeric(6,2)[], c_mood_arr mood[], c_tstz_arr timestamptz[],
  c_date_arr date[], c_bytea_arr bytea[],
  c_point point,
  c_required text NOT NULL
);
CREATE TABLE defaults (
  id bigint PRIMARY KEY DEFAULT 7,
  d_int int NOT NULL DEFAULT 42, d_small smallint DEFAULT -3, d_big bigint DEFAULT 9000000000,
  d_bool boolean NOT NULL DEFAULT true, d_text text DEFAULT 'hello', d_varchar varchar(8) DEFAULT 'x''y',
  d_real real DEFAULT 1.5, d_double double precision DEFAULT -2.25, d_numeric numeric(6,2) DEFAULT 3.14,
  d_date date DEFAULT '2020-02-29', d_ts timestamp DEFAULT '2020-01-01 10:00:00.5',
  d_tstz timestamptz DEFAULT '2020-01-01 10:00:00+02', d_time time DEFAULT '12:34:56',
  d_uuid uuid DEFAULT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', d_mood mood DEFAULT 'ok',
  d_now timestamptz DEFAULT now(), d_seq serial, d_json jsonb DEFAULT '{"a": 1}'
);
CREATE TABLE keyless_full (a int, b text);
ALTER TABLE keyless_full REPLICA IDENTITY FULL;
CREATE TABLE keyless_default (a int, b text);
CREATE TABLE composite (k1 int, k2 text, v text, PRIMARY KEY (k2, k1));
CREATE TABLE compat_end (id int PRIMARY KEY);
"""

FULL_ROW = """
INSERT INTO all_types VALUES (
  {id}, true, -32768, 2147483647, -9223372036854775808, 4294967295, 1.5, 1e-7,
  12345.6700, 1234.5, 42, -1234.56,
  'ab', 'héllo', E'line\\nbreak "q" \\\\ </tag> \\u00e9\\u2028 😀', 'pg_class', 'x', '\\x00ff10',
  '2024-02-29', '13:14:15.123456', '13:14:15.123', '13:14:15.5+02', '2018-06-20 15:13:16.945104',
  '2018-06-20 15:13:16.945', '2018-06-20 15:13:16.945104+02', '2018-06-20 15:13:16+02',
  '1 year 2 months 3 days 4 hours 5 minutes 6.78 seconds',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": [1, 2]}', '{"b":1,"a":2}', '<a>x</a>',
  '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05',
  B'1', B'1000000001', B'101', B'00000',
  '[1,10)', '(1,10]', '[1.5,2.5]', '[2020-01-01 00:00,2020-01-02 00:00)', '[2020-01-01 00:00+00,)',
  '[2020-01-01,2020-02-01)', 'a fat cat',
  'ok', 12.5, '"a"=>"1", "b"=>NULL', 'MiXeD', 'Top.Science',
  '{1,NULL,3}', ARRAY['a b', 'c"d', NULL], '{1.5,2}', '{sad,happy}', '{"2018-06-20 15:13:16.945104+02"}',
  '{2024-02-29}', ARRAY['\\x01ff'::bytea],
  '(1,2)',
  'required'
)
"""

def full_row(row_id: int) -> str:
    return FULL_ROW.replace("{id}", str(row_id), 1)


def null_row(row_id: int) -> str:
    return f"INSERT INTO all_types (id, c_required) VALUES ({row_id}, '')"  # noqa: S608 - an int


SNAPSHOT_DATA = [
    full_row(1), null_row(2),
    "INSERT INTO all_types (id, c_float4, c_float8, c_numeric, c_date, c_timestamptz, c_required) "
    "VALUES (3, 'Infinity', 'NaN', -0.000001, '1970-01-01', '1970-01-01 00:00:00+00', 'extremes')",
    "INSERT INTO defaults DEFAULT VALUES",
    "INSERT INTO keyless_full VALUES (1, 'one'), (1, 'one'), (2, NULL)",
    "INSERT INTO keyless_default VALUES (1, 'one')",
    "INSERT INTO composite VALUES (1, 'a', 'x'), (2, 'a', 'y')",
]

STREAM_WORKLOAD = [
    full_row(11), null_row(12),
    "INSERT INTO all_types (id, c_int2, c_int4, c_int8, c_float4, c_float8, c_numeric, c_numeric_p, c_date,"
    " c_timestamp, c_timestamptz, c_interval, c_required) VALUES (13, 32767, -2147483648, 9223372036854775807,"
    " '-Infinity', 'Infinity', 'NaN', -99999999.99, '0001-01-01', '294276-12-31 23:59:59.999999',"
    " 'infinity', '-178000000 years', 'extremes')",
    "UPDATE all_types SET c_text = 'updated', c_int4 = c_int4 - 1 WHERE id IN (1, 11)",
    "UPDATE all_types SET c_bool = NULL, c_json = NULL WHERE id = 1",
    "DELETE FROM all_types WHERE id = 2",
    "UPDATE all_types SET id = 21 WHERE id = 12",  # a primary-key change: delete + tombstone + create
    "INSERT INTO defaults (id, d_int) VALUES (8, 1)",
    "UPDATE defaults SET d_text = NULL WHERE id = 7",
    "BEGIN; INSERT INTO composite VALUES (3, 'b', 'z'); UPDATE composite SET v = 'w' WHERE k1 = 1;"
    " DELETE FROM composite WHERE k1 = 2; INSERT INTO keyless_full VALUES (3, 'three'); COMMIT",
    "UPDATE keyless_full SET b = 'uno' WHERE a = 1",
    "DELETE FROM keyless_full WHERE a = 2",
    "INSERT INTO keyless_default VALUES (2, 'zwei')",  # no replica identity: PostgreSQL refuses UPDATE, DELETE
    "ALTER TABLE composite ADD COLUMN added int DEFAULT 5 NOT NULL",
    "INSERT INTO composite (k1, k2, v) VALUES (4, 'c', 'after the new column')",
    "ALTER TABLE composite DROP COLUMN v",
    "UPDATE composite SET added = 6 WHERE k1 = 4",
    "CREATE TABLE created_later (id serial PRIMARY KEY, note text DEFAULT 'n')",
    "INSERT INTO created_later (note) VALUES ('first'), (DEFAULT)",
    "TRUNCATE keyless_full",
    "BEGIN; INSERT INTO all_types (id, c_required) VALUES (30, 'tx'); UPDATE all_types SET c_required = 'tx2'"
    " WHERE id = 30; DELETE FROM all_types WHERE id = 30; COMMIT",
    "TRUNCATE composite, created_later",
]


def admin_connect(dbname: str = "postgres"):
    conn = psycopg2.connect(psycopg2.extensions.make_dsn(devstack_postgres.admin_dsn(), dbname=dbname))
    conn.autocommit = True
    return conn


def execute(dbname: str, statements, admin: bool = False) -> None:
    conn = admin_connect(dbname) if admin else psycopg2.connect(devstack_postgres.cdc_dsn(dbname))
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def _snapshot_masks(payload) -> None:
    mask_snapshot_source(payload, ("ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence", "xmin"))


MASKS = (
    Mask("payload.ts_ms, ts_us, ts_ns: when the connector wrote the event", lambda p: mask_members(
        p, ("ts_ms", "ts_us", "ts_ns"))),
    Mask("payload.source.ts_ms, ts_us, ts_ns, txId, lsn, sequence, xmin of snapshot events: each connector takes "
         "its own snapshot (its own transaction, slot and time)", _snapshot_masks),
)


NAME_COLUMN = ("Debezium 3.6.1 writes null for every streamed value of a `name` column (it reads pgoutput's text of "
               "that type as nothing); ours writes the value, as both do in snapshots")
INTENTIONAL = (
    Intentional("public.all_types", "value.after.c_name", NAME_COLUMN),
    Intentional("public.all_types", "value.before.c_name", NAME_COLUMN),
    Intentional("public.all_types", "value.after.c_timestamp",
                "a timestamp after 294247-01-10T04:00:54.775807 is past the int64 microseconds since 1970: Debezium's "
                "value wraps around (a negative number), ours is the int64 maximum", key=b'{"id":13}'),
)


class PostgresCompat:
    """One run's database and connectors."""

    name = "postgres"
    connector_artifact = CONNECTOR_ARTIFACT
    masks = MASKS
    intentional = INTENTIONAL
    end_topic_suffix = f"public.{END_TABLE}"
    snapshot_events = 10  # the rows of SNAPSHOT_DATA

    def __init__(self) -> None:
        devstack.up(["postgres"], echo=lambda line: None)
        self.db = f"compat_{uuid.uuid4().hex[:10]}"
        self.prefix = self.db  # topic.prefix, the same for both connectors
        self._runner: ConnectorRunner | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def prepare(self) -> None:
        """The database with the snapshot's data, owned by the connector's user; a publication of every table."""
        owner = psycopg2.extensions.parse_dsn(devstack_postgres.cdc_dsn()).get("user")
        execute("postgres", [f'CREATE DATABASE "{self.db}" OWNER "{owner}"'], admin=True)
        execute(self.db, [SETUP], admin=True)
        execute(self.db, [f'ALTER TABLE {t} OWNER TO "{owner}"' for t in (
            "all_types", "defaults", "keyless_full", "keyless_default", "composite", "compat_end")], admin=True)
        execute(self.db, [f"CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES", *SNAPSHOT_DATA], admin=True)

    def _common(self) -> dict[str, object]:
        dsn = psycopg2.extensions.parse_dsn(devstack_postgres.cdc_dsn(self.db))
        return {
            "topic.prefix": self.prefix, "database.hostname": dsn["host"], "database.port": dsn["port"],
            "database.user": dsn["user"], "database.password": dsn.get("password", ""),
            "database.dbname": self.db, "publication.name": PUBLICATION, "publication.autocreate.mode": "disabled",
            "skipped.operations": "none",
        }

    def slots(self) -> tuple[str, str]:
        return f"{self.db}_dbz", f"{self.db}_ours"

    def debezium_properties(self) -> dict[str, object]:
        return {
            "name": f"{self.prefix}-debezium", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "tasks.max": 1, "plugin.name": "pgoutput", "slot.name": self.slots()[0], **self._common(),
        }

    def start_ours(self, bootstrap: str, schemas_enable: bool) -> None:
        config = PostgresConfig.from_properties({
            "name": self.prefix, **self._common(), "slot.name": self.slots()[1],
            "offset.storage.topic": f"compat-offsets-{self.prefix}",
            "schemas.enable": "true" if schemas_enable else "false",
        })
        self._runner = ConnectorRunner(config, bootstrap, self._stop)
        self._thread = threading.Thread(target=self._runner.run, daemon=True, name="compat-ours")
        self._thread.start()

    def check_ours(self) -> None:
        if self._thread is not None and not self._thread.is_alive():
            raise RuntimeError("our connector stopped before the workload's end (its log above says why)")

    def both_started(self) -> bool:
        """Both slots exist: from here on every change is streamed to both, none is in either snapshot."""
        conn = admin_connect(self.db)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = ANY(%s)",
                            (list(self.slots()),))
                return cur.fetchone()[0] == 2
        finally:
            conn.close()

    def run_workload(self) -> None:
        execute(self.db, STREAM_WORKLOAD, admin=True)
        end = f"INSERT INTO {END_TABLE} VALUES (1)"  # noqa: S608 - a constant
        execute(self.db, [end], admin=True)

    def stop_ours(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(120)

    def cleanup(self) -> None:
        """The database and both slots."""
        conn = admin_connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                            "WHERE slot_name = ANY(%s) AND active_pid IS NOT NULL", (list(self.slots()),))
                cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                            "WHERE slot_name = ANY(%s) AND NOT active", (list(self.slots()),))
                cur.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
        finally:
            conn.close()
