"""The connector forms (MongoDB, and PostgreSQL/MariaDB) have a Topic creation section
(topic.creation.default.partitions, replication.factor, cleanup.policy) and an Event format section (schemas.enable,
tombstones.on.delete): what is chosen there is stored as those properties, and the edit form shows it back in the
same fields (not in Other properties). The relational test uses its own database on the stack's PostgreSQL, the
MongoDB one its own connector name on the stack's replica set."""

from __future__ import annotations

import uuid

import psycopg2.extensions
import pytest

from tests.browser.conftest import screenshot
from tests.browser.test_relational_pages import pg_database  # noqa: F401 - fixture
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_topic_creation_and_event_format_sections_are_stored_and_shown_back(session, platform,
                                                                            pg_database):  # noqa: F811
    dsn, dbname = pg_database
    parts = psycopg2.extensions.parse_dsn(dsn)
    current, page = session("admin")
    page.goto("/connectors/new/?source=postgres")
    name = f"btsect{uuid.uuid4().hex[:6]}"
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Topic prefix").fill(name)
    page.get_by_label("Host").fill(parts["host"])
    page.get_by_label("Port").fill(str(parts["port"]))
    page.get_by_label("User").fill(parts["user"])
    page.get_by_label("Database").fill(dbname)
    page.get_by_label("Password").fill(parts["password"])
    page.get_by_label("Slot").fill(f"s_{dbname}")
    page.get_by_label("Publication", exact=True).fill(f"p_{dbname}")
    page.get_by_label("Table include").fill("public.items")
    fill_sections(page)
    page.get_by_label("Start the connector now").uncheck()
    screenshot(page, "form-topic-and-format-sections")
    page.get_by_role("button", name="Create connector").click()
    page.wait_for_url(f"**/connectors/{name}/", timeout=60_000)
    try:
        assert_sections_stored(page, name)

        page.goto(f"/connectors/{name}/edit/")
        assert page.get_by_label("Partitions").input_value() == "2"
        assert page.get_by_label("Cleanup policy").input_value() == "compact"
        assert page.get_by_label("Schemas in events").input_value() == "true"
        assert page.get_by_label("Tombstones after deletes").input_value() == "false"
        assert "topic.creation" not in page.get_by_label("Other properties").input_value()
        assert "schemas.enable" not in page.get_by_label("Other properties").input_value()
    finally:
        csrf = current.csrf(page)
        page.goto("about:blank")
        response = page.request.delete(f"/api/connectors/{name}/?drop_slot=true", headers={"X-CSRFToken": csrf})
        assert response.status in (200, 202, 204), response.text()


def fill_sections(page) -> None:
    topics = page.get_by_role("group", name="Topic creation")
    topics.get_by_label("Partitions").fill("2")
    topics.get_by_label("Replication factor").fill("1")
    topics.get_by_label("Cleanup policy").select_option("compact")
    events = page.get_by_role("group", name="Event format")
    events.get_by_label("Schemas in events").select_option("true")
    events.get_by_label("Tombstones after deletes").select_option("false")


def assert_sections_stored(page, name: str) -> None:
    config = page.request.get(f"/api/connectors/{name}/").json()["config"]
    assert str(config["topic.creation.default.partitions"]) == "2"
    assert str(config["topic.creation.default.replication.factor"]) == "1"
    assert config["topic.creation.default.cleanup.policy"] == "compact"
    assert str(config["schemas.enable"]).lower() == "true"
    assert str(config["tombstones.on.delete"]).lower() == "false"


def test_mongodb_form_has_the_topic_creation_and_event_format_sections(session, platform, mongo_rs):
    current, page = session("admin")
    page.goto("/connectors/new/")
    name = f"btmsect{tagged_suffix()}"
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Topic prefix").fill(name)
    page.get_by_label("Connection string").fill(mongo_rs.uri)
    page.get_by_label("Collection include").fill(f"{name}\\.orders")
    fill_sections(page)
    page.get_by_label("Start the connector now").uncheck()
    screenshot(page, "mongodb-form-topic-and-format-sections")
    page.get_by_role("button", name="Create connector").click()
    page.wait_for_url(f"**/connectors/{name}/", timeout=60_000)
    try:
        assert_sections_stored(page, name)

        page.goto(f"/connectors/{name}/edit/")
        topics = page.get_by_role("group", name="Topic creation")
        assert topics.get_by_label("Partitions").input_value() == "2"
        assert topics.get_by_label("Replication factor").input_value() == "1"
        assert topics.get_by_label("Cleanup policy").input_value() == "compact"
        events = page.get_by_role("group", name="Event format")
        assert events.get_by_label("Schemas in events").input_value() == "true"
        assert events.get_by_label("Tombstones after deletes").input_value() == "false"
        other = page.get_by_label("Other properties").input_value()
        assert "topic.creation" not in other and "schemas.enable" not in other and "tombstones" not in other

        events.get_by_label("Tombstones after deletes").select_option("true")  # an edit saves the sections too
        page.get_by_role("button", name="Save").click()
        page.wait_for_url(f"**/connectors/{name}/", timeout=60_000)
        config = page.request.get(f"/api/connectors/{name}/").json()["config"]
        assert str(config["tombstones.on.delete"]).lower() == "true"
        assert str(config["topic.creation.default.partitions"]) == "2"
    finally:
        csrf = current.csrf(page)
        page.goto("about:blank")
        response = page.request.delete(f"/api/connectors/{name}/", headers={"X-CSRFToken": csrf})
        assert response.status in (200, 202, 204), response.text()
