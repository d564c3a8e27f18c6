"""The dashboard's pages for a PostgreSQL connector, against the real server: the New connector page's PostgreSQL form
checks the server (a wrong password is shown next to the password field, nothing saved), creates the connector,
its edit page shows the stored values and never the password; the detail and offsets pages speak of the database,
not of a replica set, and offer only the resets that apply."""

from __future__ import annotations

import psycopg2.extensions
import pytest

from tests.api_support import make_user, no_redis  # noqa: F401 - fixtures
from web.connectors.models import Connector, ReplicaSetState

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def form_data(pg_db, password: str) -> dict:
    dsn = psycopg2.extensions.parse_dsn(pg_db.dsn)
    return {"source": "postgres", "name": "pgform", "topic_prefix": "pgform", "hostname": dsn["host"],
            "port": dsn["port"], "user": dsn["user"], "password": password, "dbname": pg_db.name,
            "slot_name": "s_pgform", "publication_mode": "filtered", "snapshot_mode": "initial",
            "schema_include": "public", "table_include": "public.items\npublic.lines",
            "other": "poll.interval.ms=100\noffset.storage.topic=pgform.offsets"}


def test_the_postgres_form_checks_creates_and_edits(pg_db, client, django_user_model, settings, no_redis):  # noqa: F811
    settings.CDC_CONNECTIVITY_CHECK_MS = 5000
    client.force_login(make_user(django_user_model, "admin"))
    password = psycopg2.extensions.parse_dsn(pg_db.dsn)["password"]
    page = client.get("/connectors/new/?source=postgres").content.decode()
    assert "New PostgreSQL connector" in page and 'name="dbname"' in page and "Connection string" not in page

    refused = client.post("/connectors/new/", form_data(pg_db, "not-it"))
    assert refused.status_code == 400 and not Connector.objects.exists()
    errors = refused.context["form"].errors
    assert "refused the login" in errors["password"][0] and "not-it" not in refused.content.decode()

    created = client.post("/connectors/new/", form_data(pg_db, password))
    assert created.status_code == 302, created.context["form"].errors
    connector = Connector.objects.get(name="pgform")
    assert connector.source == "postgres" and connector.password == password
    assert connector.properties["table.include.list"] in (["public.items", "public.lines"],
                                                          "public.items,public.lines")

    edit = client.get("/connectors/pgform/edit/").content.decode()
    assert password not in edit and f'value="{pg_db.name}"' in edit and "poll.interval.ms=100" in edit
    saved = client.post("/connectors/pgform/edit/", {**form_data(pg_db, ""), "snapshot_mode": "no_data"})
    assert saved.status_code == 302, saved.context["form"].errors
    connector.refresh_from_db()
    assert connector.password == password and connector.properties["snapshot.mode"] == "no_data"

    ReplicaSetState.objects.create(connector=connector, replica_set=pg_db.name, phase="streaming",
                                   since=connector.created_at,
                                   metrics={"source": {"slot": "s_pgform", "active": True,
                                                       "retained_wal_bytes": 2048}})
    detail = client.get("/connectors/pgform/").content.decode()
    assert f"Database {pg_db.name}" in detail and "Primary elections" not in detail and "WAL retained" in detail
    offsets = client.get("/connectors/pgform/offsets/").content.decode()
    assert "Resume token" not in offsets and 'value="timestamp"' not in offsets and "Databases" in offsets
