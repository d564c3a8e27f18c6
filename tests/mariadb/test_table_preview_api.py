"""The table preview API on MariaDB, on a database of the test's own: its tables with whether the connector's
captures_table decides they are captured (database and table lists, the signal table never)."""

from __future__ import annotations

import pytest

from tests.api_support import admin_client, no_redis  # noqa: F401 - fixtures
from tests.mariadb.test_control_plane import mariadb_properties

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_the_preview_marks_the_tables_the_lists_capture(mariadb, mariadb_db, admin_client, settings):  # noqa: F811
    settings.CDC_CONNECTIVITY_CHECK_MS = 5000
    mariadb.execute(*(f"CREATE TABLE {table} (id int PRIMARY KEY)" for table in ("orders", "customers", "audit_log")),
                    "CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data text)",
                    database=mariadb_db)
    config = {**mariadb_properties(mariadb, mariadb_db, "mdbprev"),
              "table.include.list": rf"{mariadb_db}\.(orders|customers|dbz_signal)",
              "signal.data.collection": f"{mariadb_db}.dbz_signal"}
    body = {"password": mariadb.cdc.password, "config": config}
    answer = admin_client.post("/api/connectors/tables/", body, format="json")
    assert answer.status_code == 200, answer.json()
    mine = {row["name"].split(".", 1)[1]: row["captured"] for row in answer.json()["tables"]
            if row["name"].startswith(mariadb_db + ".")}
    assert mine == {"audit_log": False, "customers": True, "dbz_signal": False, "orders": True}
    assert not any(row["captured"] for row in answer.json()["tables"] if not row["name"].startswith(mariadb_db))
