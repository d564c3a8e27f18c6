"""The table preview of the connector form (POST /api/connectors/tables/ and /api/connectors/<name>/tables/), on a
database of the test's own: every table of the source with whether the include/exclude lists capture it, as the
connector's own TableFilter decides (the signal table is never captured); a viewer cannot make the server connect;
the stored password is not sent to another server; a server that does not answer is a sentence, in bounded time."""

from __future__ import annotations

import time

import psycopg2.extensions
import pytest

from tests.api_support import admin_client, client_for, make_user, no_redis  # noqa: F401 - fixtures
from tests.postgres.test_control_plane import pg_properties

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_the_preview_lists_the_tables_the_lists_capture(pg_db, admin_client, settings,  # noqa: F811
                                                        django_user_model):
    settings.CDC_CONNECTIVITY_CHECK_MS = 5000
    for table in ("orders", "customers", "audit_log"):
        pg_db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY)")
    pg_db.execute("CREATE TABLE signals (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data text)")
    password = psycopg2.extensions.parse_dsn(pg_db.dsn)["password"]
    config = {**pg_properties(pg_db, "pgprev"), "table.include.list": r"public\.(orders|customers|signals)",
              "table.exclude.list": "public.customers", "signal.data.collection": "public.signals"}
    body = {"password": password, "config": config}

    answer = admin_client.post("/api/connectors/tables/", body, format="json")
    assert answer.status_code == 200, answer.json()
    shown = {row["name"]: row["captured"] for row in answer.json()["tables"]}
    assert shown == {"public.audit_log": False, "public.customers": False, "public.orders": True,
                     "public.signals": False}
    assert answer.json()["captured"] == 1 and answer.json()["total"] == 4

    viewer = client_for(make_user(django_user_model, "viewer"))
    assert viewer.post("/api/connectors/tables/", body, format="json").status_code == 403

    created = admin_client.post("/api/connectors/", {**body, "name": "pgprev", "topic_prefix": "pgprev",
                                                     "desired_state": "stopped"}, format="json")
    assert created.status_code == 201, created.json()
    assert viewer.post("/api/connectors/pgprev/tables/", {}, format="json").status_code == 403
    edited = admin_client.post("/api/connectors/pgprev/tables/", {"config": {"table.exclude.list": ""}},
                               format="json")
    assert edited.status_code == 200, edited.json()
    assert [row["name"] for row in edited.json()["tables"] if row["captured"]] == ["public.customers",
                                                                                    "public.orders"]

    moved = admin_client.post("/api/connectors/pgprev/tables/", {"config": {"database.hostname": "127.0.0.2"}},
                              format="json")
    assert moved.status_code == 400
    assert "a stored secret is only sent to where it was stored for" in moved.json()["problems"][0]["message"]

    started = time.monotonic()
    nowhere = admin_client.post("/api/connectors/tables/", {**body, "config": {**config, "database.port": 1}},
                                format="json")
    assert nowhere.status_code == 503
    assert nowhere.json()["detail"].startswith("the tables could not be listed: PostgreSQL at 127.0.0.1:1")
    assert time.monotonic() - started < 30
