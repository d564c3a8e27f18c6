"""Deleting a PostgreSQL connector in a real browser: the overview warns of its inactive slot retaining WAL; the delete
page offers to drop the slot and the publication (both ticked, the connector created them) and says what stays;
with the slot unticked, the deletion drops the publication only and a warning names the slot with its SQL. The
test's own database, slot and publication on the stack's PostgreSQL."""

from __future__ import annotations

import uuid

import psycopg2
import psycopg2.extensions
import pytest

from devstack import postgres as devstack_postgres
from devstack import stack as devstack
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

PG_CLASS = "io.debezium.connector.postgresql.PostgresConnector"


def run(dsn: str, statement: str, params=None) -> list[tuple]:
    connection = psycopg2.connect(dsn)
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
            return list(cursor.fetchall()) if cursor.description else []
    finally:
        connection.close()


@pytest.fixture
def pg_database():
    """A database of the connector's user, with a table, a publication of it and an inactive slot; dropped after."""
    devstack.up(["postgres"], echo=lambda line: None)
    admin, cdc = devstack_postgres.admin_dsn(), devstack_postgres.cdc_dsn()
    name = f"bt_{uuid.uuid4().hex[:10]}"
    owner = psycopg2.extensions.parse_dsn(cdc)["user"]
    run(admin, f'CREATE DATABASE "{name}" OWNER "{owner}"')
    dsn = psycopg2.extensions.make_dsn(cdc, dbname=name)
    slot, publication = f"s_{name}", f"p_{name}"
    run(dsn, "CREATE TABLE items (id int PRIMARY KEY, note text)")
    run(dsn, f'CREATE PUBLICATION "{publication}" FOR TABLE items')
    run(dsn, "SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
    run(dsn, "INSERT INTO items SELECT g, repeat('x', 100) FROM generate_series(1, 500) g")
    yield dsn, name, slot, publication
    run(admin, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = %s", (name,))
    run(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_delete_page_offers_the_slot_and_says_what_stays(session, platform, pg_database):
    dsn, dbname, slot, publication = pg_database
    parts = psycopg2.extensions.parse_dsn(dsn)
    connector = f"btpg{uuid.uuid4().hex[:6]}"
    properties = {"name": connector, "topic.prefix": connector, "connector.class": PG_CLASS,
                  "database.hostname": parts["host"], "database.port": int(parts["port"]),
                  "database.user": parts["user"], "database.password": parts["password"], "database.dbname": dbname,
                  "slot.name": slot, "publication.name": publication, "publication.autocreate.mode": "filtered",
                  "table.include.list": "public.items", "offset.storage.topic": f"{connector}.offsets"}
    platform.django("from web.connectors import drafts, services\n"
                    f"services.create_connector(drafts.prepare({properties!r}), user=None, source='system', "
                    "desired_state='stopped')\n")
    current, page = session("admin")
    page.goto("/")
    warning = page.locator(f'#idle-slots [data-slot="{slot}"]')
    warning.wait_for()
    assert connector in warning.inner_text() and "of WAL" in warning.inner_text()

    page.goto(f"/connectors/{connector}/delete/")
    drop_slot = page.get_by_label("Drop the replication slot")
    drop_publication = page.get_by_label("Drop the publication")
    assert drop_slot.is_checked() and drop_publication.is_checked()
    assert "Unticked, they stay on the server" in page.locator(".server-objects").inner_text()
    screenshot(page, "delete-postgres")
    drop_slot.uncheck()
    page.get_by_role("button", name=f"Delete {connector}").click()  # the confirmation is accepted
    page.wait_for_url(f"{platform.base_url}/")
    left = page.locator(".messages li.warning", has_text=slot).inner_text()
    assert "not asked to drop it" in left and f"SELECT pg_drop_replication_slot('{slot}');" in left
    assert page.locator(".messages li.info", has_text=f"publication {publication!r}").inner_text().endswith(
        "was dropped.")
    assert run(dsn, "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,)) == [(1,)]
    assert run(dsn, "SELECT 1 FROM pg_publication WHERE pubname = %s", (publication,)) == []
