"""The relational half of the demo: a small `shop` schema (customers, orders) in PostgreSQL and in MariaDB, and
the connectors that capture it. `prepare_*` creates what is missing and leaves existing data alone."""

from __future__ import annotations

import os

import psycopg2
import psycopg2.extensions

from devstack import postgres, settings

SHOP_TABLES = {
    "customers": "id integer PRIMARY KEY, name varchar(80) NOT NULL, email varchar(120)",
    "orders": "id integer PRIMARY KEY, customer_id integer NOT NULL, product varchar(40) NOT NULL, "
              "quantity integer NOT NULL, total decimal(10, 2) NOT NULL, status varchar(16) NOT NULL",
}
# The devstack servers are shared with the test suite, which purges binlogs and drops slots: the demo connectors
# take a new snapshot when their stored position is gone rather than stop with HistoryLost.
RESNAPSHOT_WHEN_NEEDED = "when_needed"
DEMO_SERVER_ID = 184_054  # the MariaDB demo connector's replication client id
# Debezium's signal table: ad-hoc (incremental) snapshots write their requests and watermarks there
SIGNAL_TABLE = "dbz_signal"
SIGNAL_COLUMNS = {"postgres": "id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data text",
                  "mariadb": "id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT"}


def postgres_dsn() -> str:
    """The connector user's DSN: POSTGRES_DSN for an existing server, else the devstack cluster's `cdc` role."""
    return os.environ.get("POSTGRES_DSN") or postgres.cdc_dsn()


def mariadb_cdc_dsn() -> str:
    user, password = settings.MARIADB_CDC_USER
    external = os.environ.get("MARIADB_CDC_DSN") or os.environ.get("MARIADB_DSN")
    return external or f"mysql://{user}:{password}@127.0.0.1:{settings.MARIADB_PORT}/"


def prepare_postgres(dsn: str | None = None) -> None:
    """Schema `shop` owned by the connector's user (`dsn`, default postgres_dsn()), so a `filtered` publication
    can name its tables, with the signal table."""
    connection = psycopg2.connect(dsn or postgres_dsn())
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            cursor.execute("CREATE SCHEMA IF NOT EXISTS shop")
            for table, columns in {**SHOP_TABLES, SIGNAL_TABLE: SIGNAL_COLUMNS["postgres"]}.items():
                cursor.execute(f"CREATE TABLE IF NOT EXISTS shop.{table} ({columns})")
    finally:
        connection.close()


def prepare_mariadb(admin_dsn: str | None = None, cdc_dsn: str | None = None) -> None:
    """Database `shop` and the signal table, which the connector's user (`cdc_dsn`) may INSERT into and DELETE
    from (its watermarks); `admin_dsn` creates them (defaults: the devstack server's users)."""
    from connectors.mysql.connection import ConnectionSettings, connect

    connection = connect(ConnectionSettings.from_dsn(admin_dsn or settings.mariadb_dsn()))
    cdc_user = ConnectionSettings.from_dsn(cdc_dsn or mariadb_cdc_dsn()).user
    try:
        with connection.cursor() as cursor:
            cursor.execute("CREATE DATABASE IF NOT EXISTS shop CHARACTER SET utf8mb4")
            for table, columns in {**SHOP_TABLES, SIGNAL_TABLE: SIGNAL_COLUMNS["mariadb"]}.items():
                cursor.execute(f"CREATE TABLE IF NOT EXISTS shop.{table} ({columns})")
            cursor.execute("SELECT host FROM mysql.user WHERE user = %s", (cdc_user,))
            for (host,) in cursor.fetchall():
                cursor.execute(f"GRANT INSERT, DELETE ON shop.{SIGNAL_TABLE} TO %s@%s", (cdc_user, host))
    finally:
        connection.close()


def postgres_properties(name: str, dsn: str | None = None) -> dict:
    dsn = psycopg2.extensions.parse_dsn(dsn or postgres_dsn())
    return {
        "name": name,
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "topic.prefix": name,
        "database.hostname": dsn.get("host", "127.0.0.1"),
        "database.port": int(dsn.get("port", 5432)),
        "database.user": dsn.get("user", ""),
        "database.password": dsn.get("password", ""),
        "database.dbname": dsn.get("dbname", ""),
        "slot.name": name.replace("-", "_"),
        "publication.name": f"{name.replace('-', '_')}_publication",
        "publication.autocreate.mode": "filtered",
        "schema.include.list": "shop",
        "signal.data.collection": f"shop.{SIGNAL_TABLE}",
        "heartbeat.interval.ms": 5000,
        "schemas.enable": "false",  # stated, as in demo.py
        "snapshot.mode": RESNAPSHOT_WHEN_NEEDED,
    }


def mariadb_properties(name: str, cdc_dsn: str | None = None) -> dict:
    from connectors.mysql.connection import ConnectionSettings

    where = ConnectionSettings.from_dsn(cdc_dsn or mariadb_cdc_dsn())
    return {
        "name": name,
        "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "topic.prefix": name,
        "database.hostname": where.host,
        "database.port": where.port,
        "database.user": where.user,
        "database.password": where.password,
        "database.server.id": DEMO_SERVER_ID,
        "database.include.list": "shop",
        "signal.data.collection": f"shop.{SIGNAL_TABLE}",
        "heartbeat.interval.ms": 5000,
        "schemas.enable": "false",  # stated, as in demo.py
        "snapshot.mode": RESNAPSHOT_WHEN_NEEDED,
    }
