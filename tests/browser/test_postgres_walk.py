"""A newcomer's walk through a PostgreSQL connector in a real browser, on a database of the test's own: create the
connector from the form, the preview listing the tables its lists capture while it is filled in; see it stream;
start an incremental snapshot of a big table and stop it midway; produce a message into a topic and see it in the
compact message table; delete the connector with "drop the slot", after which pg_replication_slots has no slot
of it."""

from __future__ import annotations

import time
import uuid

import psycopg2.extensions
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from devstack import postgres as devstack_postgres
from devstack import stack as devstack
from tests.browser.conftest import delete_every_connector, screenshot, wait_streaming
from tests.browser.test_delete_postgres import run
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

BIG = 60_000


@pytest.fixture
def walk_database(platform):
    devstack.up(["postgres"], echo=lambda line: None)
    admin, cdc = devstack_postgres.admin_dsn(), devstack_postgres.cdc_dsn()
    name = f"bt_walk_{uuid.uuid4().hex[:8]}"
    run(admin, f'CREATE DATABASE "{name}" OWNER "{psycopg2.extensions.parse_dsn(cdc)["user"]}"')
    dsn = psycopg2.extensions.make_dsn(cdc, dbname=name)
    run(dsn, "CREATE TABLE orders (id int PRIMARY KEY, note text)")
    run(dsn, "INSERT INTO orders SELECT g, 'o' || g FROM generate_series(1, %s) g", (BIG,))
    run(dsn, "CREATE TABLE customers (id int PRIMARY KEY, name text)")
    run(dsn, "CREATE TABLE audit_log (id int PRIMARY KEY, line text)")
    run(dsn, "CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data text)")
    yield dsn, name
    delete_every_connector(platform)  # one the test left behind when it failed midway still holds the slot
    deadline = time.monotonic() + 60  # a deleted connector's walsender ends a moment after its pipeline
    while time.monotonic() < deadline and run(admin, "SELECT 1 FROM pg_replication_slots "
                                                     "WHERE database = %s AND active", (name,)):
        time.sleep(0.2)
    run(admin, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
               "WHERE database = %s AND NOT active", (name,))
    run(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_postgres_walk_from_the_form_to_the_dropped_slot(session, platform, stack, walk_database):
    dsn, dbname = walk_database
    parts = psycopg2.extensions.parse_dsn(dsn)
    current, page = session("admin")
    name = f"btwalk{uuid.uuid4().hex[:6]}"
    slot = f"s_{dbname}"

    page.goto("/connectors/new/?source=postgres")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Topic prefix").fill(name)
    page.get_by_label("Host").fill(parts["host"])
    page.get_by_label("Port").fill(str(parts["port"]))
    page.get_by_label("User").fill(parts["user"])
    page.get_by_label("Database").fill(dbname)
    page.get_by_label("Password").fill(parts["password"])
    page.get_by_label("Slot").fill(slot)
    page.get_by_label("Publication", exact=True).fill(f"p_{dbname}")
    page.get_by_label("Snapshot mode").select_option("no_data")
    page.get_by_label("Table include").fill("public\\.(orders|customers)")
    page.get_by_label("Signal table").fill("public.dbz_signal")
    page.get_by_role("group", name="Topic creation").get_by_label("Partitions").fill("1")
    page.get_by_label("Other properties").fill("incremental.snapshot.chunk.size=100")

    # the preview follows the lists as they are typed, with the connector's own matching
    preview = page.locator("#table-preview-list")
    preview.locator('li[data-table="public.orders"][data-captured="true"]').wait_for(timeout=60_000)
    page.wait_for_function("() => document.querySelector('#table-preview-list li[data-table=\"public.customers\"]')"
                           "?.dataset.captured === 'true'", timeout=30_000)
    page.get_by_label("Table exclude").fill("public.customers")
    page.wait_for_function("() => document.querySelector('#table-preview-list li[data-table=\"public.customers\"]')"
                           "?.dataset.captured === 'false'", timeout=60_000)
    assert preview.locator('li[data-table="public.audit_log"]').get_attribute("data-captured") == "false"
    assert preview.locator('li[data-table="public.dbz_signal"]').get_attribute("data-captured") == "false"
    assert "1 of 4 tables captured" in page.locator("#table-preview-state").inner_text()
    screenshot(page, "walk-table-preview")
    page.get_by_role("button", name="Create connector").click()
    page.wait_for_url(f"**/connectors/{name}/", timeout=60_000)

    wait_streaming(page, name, timeout_ms=120_000)
    page.get_by_label("Snapshot tables").fill("public.orders")
    page.get_by_role("button", name="Snapshot", exact=True).click()
    page.locator('#replica-sets [data-snapshot-state="running"]').first.wait_for(timeout=60_000)
    # a paused snapshot cannot complete before the stop reaches it (600 chunks left little time to pause)
    page.get_by_role("button", name="Pause snapshot").click()
    page.locator('#replica-sets [data-snapshot-state="paused"]').first.wait_for(timeout=60_000)
    page.get_by_role("button", name="Stop snapshot").click()
    page.locator('#replica-sets [data-snapshot-state="stopped"]').first.wait_for(timeout=60_000)
    asked = page.locator('#requests tr[data-request^="snapshot-"]').first
    asked.locator('[data-status="failed"]').wait_for(timeout=30_000)
    assert "stopped before it finished" in asked.locator(".reason").inner_text()
    screenshot(page, "walk-snapshot-stopped")

    topic = f"walk.produce.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    page.goto(f"/topics/{topic}/")
    page.get_by_text("Produce a message").click()
    page.get_by_label("Message key").fill('{"id": 7}')
    page.get_by_label("Message value").fill('{"walk": "produced"}')
    page.get_by_role("button", name="Produce").click()
    page.get_by_text(f"Message produced to {topic}: partition 0, offset 0.").wait_for()
    row = page.locator("table.messages > tbody.message").first
    assert row.locator("td.preview").inner_text() == '{"walk": "produced"}'

    page.goto(f"/connectors/{name}/delete/")
    drop_slot = page.get_by_label("Drop the replication slot")
    assert drop_slot.is_checked()
    page.get_by_role("button", name=f"Delete {name}").click()  # the confirmation is accepted
    page.wait_for_url(f"{platform.base_url}/", timeout=60_000)
    screenshot(page, "walk-deleted")
    assert run(dsn, "SELECT slot_name FROM pg_replication_slots WHERE database = %s", (dbname,)) == []
