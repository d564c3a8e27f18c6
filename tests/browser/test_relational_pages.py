"""A PostgreSQL connector's pages speak of databases, tables and rows: no MongoDB words (replica set, documents,
change stream) on its detail page or in its activity log, and the log shows its initial snapshot as a phase, before
streaming, in order. The test's own database on the stack's PostgreSQL."""

from __future__ import annotations

import re
import time
import uuid

import psycopg2.extensions
import pytest

from tests.browser.conftest import screenshot
from tests.browser.test_delete_postgres import PG_CLASS, run

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

MONGODB_WORDS = re.compile(r"replica.?set|documents?\b|change stream|resume token|cluster time", re.IGNORECASE)


@pytest.fixture
def pg_database():
    from devstack import postgres as devstack_postgres
    from devstack import stack as devstack

    devstack.up(["postgres"], echo=lambda line: None)
    admin, cdc = devstack_postgres.admin_dsn(), devstack_postgres.cdc_dsn()
    name = f"bt_{uuid.uuid4().hex[:10]}"
    run(admin, f'CREATE DATABASE "{name}" OWNER "{psycopg2.extensions.parse_dsn(cdc)["user"]}"')
    dsn = psycopg2.extensions.make_dsn(cdc, dbname=name)
    run(dsn, "CREATE TABLE items (id int PRIMARY KEY, note text)")
    run(dsn, "INSERT INTO items SELECT g, repeat('x', 100) FROM generate_series(1, 2000) g")
    yield dsn, name
    deadline = time.monotonic() + 60  # a deleted connector's walsender ends a moment after its pipeline
    while time.monotonic() < deadline and run(admin, "SELECT 1 FROM pg_replication_slots "
                                                     "WHERE database = %s AND active", (name,)):
        time.sleep(0.2)
    run(admin, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
               "WHERE database = %s AND NOT active", (name,))
    run(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def create_postgres_connector(current, page, dsn: str, dbname: str) -> str:
    """Through the running web server's API as the logged-in admin (a `manage.py shell` may take a minute to start
    on a loaded machine)."""
    parts = psycopg2.extensions.parse_dsn(dsn)
    connector = f"btpgw{uuid.uuid4().hex[:6]}"
    config = {"connector.class": PG_CLASS, "database.hostname": parts["host"], "database.port": int(parts["port"]),
              "database.user": parts["user"], "database.dbname": dbname, "slot.name": f"s_{dbname}",
              "publication.name": f"p_{dbname}", "publication.autocreate.mode": "filtered",
              "table.include.list": "public.items", "offset.storage.topic": f"{connector}.offsets"}
    response = page.request.post("/api/connectors/", headers={"X-CSRFToken": current.csrf(page)},
                                 data={"name": connector, "topic_prefix": connector, "config": config,
                                       "password": parts["password"]})
    assert response.status == 201, response.text()
    return connector


def test_postgres_pages_use_relational_words_and_log_the_snapshot_phase(session, platform, pg_database):
    dsn, dbname = pg_database
    current, page = session("admin")
    connector = create_postgres_connector(current, page, dsn, dbname)
    try:
        page.goto(f"/connectors/{connector}/")
        activity = page.locator("#activity table.activity")
        page.wait_for_function(
            "() => [...document.querySelectorAll('#activity tr[data-kind=state] .reason')]"
            ".some(cell => /streaming/.test(cell.textContent))", timeout=90_000)
        page.locator(f'[data-rs^="{connector}/"]').first.wait_for()
        headers = activity.locator("thead th").all_inner_texts()
        assert headers[2] == "Database", headers
        text = page.locator("main").inner_text()
        screenshot(page, "postgres-detail-words")
        assert not MONGODB_WORDS.findall(text), MONGODB_WORDS.findall(text)
        # the log is newest first: read it oldest first
        states = [cell for cell in reversed(activity.locator("tr[data-kind=state] .reason").all_inner_texts())]
        snapshot_at = next((i for i, t in enumerate(states) if "snapshot" in t), None)
        streaming_at = next(i for i, t in enumerate(states) if "streaming" in t)
        assert snapshot_at is not None, states
        assert snapshot_at < streaming_at, states
    finally:  # through the running web server: a `manage.py shell` may take a minute to start on a loaded machine
        csrf = current.csrf(page)
        page.goto("about:blank")  # the detail page would poll the deleted connector's parts and log 404s
        response = page.request.delete(f"/api/connectors/{connector}/?drop_slot=true",
                                       headers={"X-CSRFToken": csrf})
        assert response.status in (200, 202, 204), response.text()


def test_postgres_form_checks_while_typing_and_has_signal_and_heartbeat_fields(session, platform, pg_database):
    dsn, dbname = pg_database
    parts = psycopg2.extensions.parse_dsn(dsn)
    _, page = session("admin")
    page.goto("/connectors/new/?source=postgres")
    name = f"btlive{uuid.uuid4().hex[:6]}"
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Topic prefix").fill(name)  # required: the server is asked once the rest is valid
    page.get_by_label("Host").fill(parts["host"])
    page.get_by_label("Port").fill(str(parts["port"]))
    page.get_by_label("User").fill(parts["user"])
    page.get_by_label("Database").fill(dbname)
    page.get_by_label("Password").fill("not-the-password")
    errors = page.locator("#err-password li")
    errors.first.wait_for(timeout=30_000)  # said while typing, before any submit
    assert "password" in errors.first.inner_text().lower()
    page.get_by_label("Password").fill(parts["password"])
    page.wait_for_function("() => !document.querySelector('#err-password li')", timeout=30_000)
    page.get_by_label("Signal table").fill("public.no_such_signals")
    signal_error = page.locator("#err-signal_collection li").first
    signal_error.wait_for(timeout=30_000)
    assert "no_such_signals" in signal_error.inner_text()
    assert page.get_by_label("Heartbeat interval (ms)").is_visible()
    assert page.url.endswith("/connectors/new/?source=postgres")  # nothing was submitted
