"""The devstack MariaDB is a usable binlog source and the cdc user has what the connector needs."""

from __future__ import annotations

import os

import pytest

from connectors.mysql.connection import connect

pytestmark = pytest.mark.integration


def variables(settings) -> dict[str, str]:
    connection = connect(settings)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW GLOBAL VARIABLES")
            return dict(cursor.fetchall())
    finally:
        connection.close()


def test_binlog_settings(mariadb):
    values = variables(mariadb.cdc)
    assert values["log_bin"] == "ON"
    assert values["binlog_format"] == "ROW"
    assert values["binlog_row_image"] == "FULL"
    assert values["binlog_row_metadata"] == "FULL"
    assert int(values["server_id"]) > 0
    assert "gtid_domain_id" in values


@pytest.mark.skipif(bool(os.environ.get("MARIADB_DSN")), reason="the private server's own accounts")
def test_cdc_user_privileges(mariadb):
    connection = connect(mariadb.cdc)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW GRANTS")
            grants = " ".join(row[0] for row in cursor.fetchall())
    finally:
        connection.close()
    # MariaDB >= 10.5 shows REPLICATION CLIENT under its new name, BINLOG MONITOR
    for privilege in ("REPLICATION SLAVE", "BINLOG MONITOR", "SELECT", "RELOAD", "LOCK TABLES"):
        assert privilege in grants
    assert "ALL PRIVILEGES" not in grants


def test_account_setup_is_not_in_the_binlog(mariadb, mariadb_db):
    for log in mariadb.execute("SHOW BINARY LOGS"):
        events = mariadb.execute(f"SHOW BINLOG EVENTS IN '{log[0]}'")
        assert not any("CREATE USER IF NOT EXISTS 'cdc'" in str(event[-1]) for event in events)
