"""The admin console: connectors created and changed through validated forms (audited), secrets masked on every
page, and the offsets page: positions decoded, resets behind a confirmation step, refused while running, audited."""

from __future__ import annotations

import json

import pytest
from bson import Timestamp
from django.contrib.auth.models import Group

from connectors.kafka import OffsetRecord
from tests.api_support import SECRET, create_connector
from tests.topic_cleanup import tagged_suffix
from web.connectors import offsets as offset_views
from web.connectors.models import AuditEntry, Connector, DesiredState

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
TOKEN = {"_data": "8265A1B2C3000000072B022C0100296E5A1004"}


def staff(django_user_model, role):
    user = django_user_model.objects.create_user(f"staff-{role}", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def admin_browser(client, django_user_model, no_redis):
    client.force_login(staff(django_user_model, "admin"))
    return client


def test_add_and_change_a_connector(admin_browser):
    form = {
        "name": "orders", "topic_prefix": "shop", "desired_state": "stopped",
        "connection_string": f"mongodb://cdc:{SECRET}@db1:27017/?replicaSet=rs0",
        "config": '{"snapshot.mode": "never", "max.batch.size": 50}',
    }
    bad = admin_browser.post("/admin/connectors/connector/add/", {**form, "config": '{"snapshot.mode": "x"}'})
    assert bad.status_code == 200 and b"snapshot.mode" in bad.content and not Connector.objects.exists()
    added = admin_browser.post("/admin/connectors/connector/add/", form)
    assert added.status_code == 302, added.content.decode()[:2000]
    connector = Connector.objects.get(name="orders")
    assert connector.properties == {"snapshot.mode": "never", "max.batch.size": 50}
    page = admin_browser.get(f"/admin/connectors/connector/{connector.pk}/change/")
    assert page.status_code == 200 and SECRET not in page.content.decode()
    masked = "mongodb://cdc:********@db1:27017/?replicaSet=rs0"
    assert masked in page.content.decode()
    changed = admin_browser.post(f"/admin/connectors/connector/{connector.pk}/change/", {
        **form, "connection_string": masked, "config": '{"snapshot.mode": "initial"}'})
    assert changed.status_code == 302
    connector.refresh_from_db()
    assert SECRET in connector.connection_string and connector.properties == {"snapshot.mode": "initial"}
    assert list(AuditEntry.objects.filter(source="admin").values_list("action", flat=True)) == [
        "connector.update", "connector.create"]
    assert SECRET not in admin_browser.get("/admin/connectors/auditentry/").content.decode()


def test_a_postgres_connector_keeps_its_database_password_encrypted(admin_browser):
    config = {"connector.class": "io.debezium.connector.postgresql.PostgresConnector", "database.hostname": "pg1",
              "database.user": "cdc", "database.dbname": "shop"}
    form = {"name": "pgorders", "topic_prefix": "pgshop", "desired_state": "stopped", "password": SECRET,
            "config": json.dumps(config)}
    added = admin_browser.post("/admin/connectors/connector/add/", form)
    assert added.status_code == 302, added.content.decode()[:2000]
    connector = Connector.objects.get(name="pgorders")
    assert (connector.source, connector.password, connector.properties) == ("postgres", SECRET, config)
    page = admin_browser.get(f"/admin/connectors/connector/{connector.pk}/change/").content.decode()
    assert SECRET not in page
    kept = admin_browser.post(f"/admin/connectors/connector/{connector.pk}/change/", {**form, "password": ""})
    assert kept.status_code == 302
    connector.refresh_from_db()
    assert connector.password == SECRET  # left blank: kept


def test_a_postgres_connectors_offsets_page_offers_its_own_resets(admin_browser, stack):
    connector = Connector.objects.create(
        name=f"pg{tagged_suffix()}", topic_prefix="pgshop", source="postgres", desired_state="stopped",
        properties={"connector.class": "postgres", "database.hostname": "pg1", "database.user": "cdc",
                    "database.dbname": "shop", "offset.storage.topic": f"it.offsets.{tagged_suffix()}"})
    url = f"/admin/connectors/connector/{connector.pk}/offsets/"
    page = admin_browser.get(url).content.decode()
    assert "Committed position per partition" in page and "Resume token" not in page
    assert 'value="shop"' in page  # the partition is the database
    review = admin_browser.post(url, {"mode": "timestamp"})
    assert "timestamp" in review.content.decode() and "is not one of the available choices" in \
        review.content.decode()


def test_offsets_page_and_confirmed_reset(admin_browser, stack):
    connector = create_connector("orders", state=DesiredState.RUNNING,
                                 **{"offset.storage.topic": f"cdc.offsets.test-{tagged_suffix()}"})
    store = offset_views.store_for(connector)
    store.write(OffsetRecord("orders", "rs0", resume_token=TOKEN, snapshot={"chunks_done": 3}))
    url = f"/admin/connectors/connector/{connector.pk}/offsets/"
    page = admin_browser.get(url).content.decode()
    assert "2024-01-12T21:44:35Z" in page and "chunks_done" in page and "Review reset" in page

    review = admin_browser.post(url, {"mode": "timestamp", "timestamp": "2024-01-01T00:00:00Z"})
    assert review.status_code == 200 and "Confirm the offset reset" in review.content.decode()
    assert store.load("orders")["rs0"].resume_token == TOKEN  # nothing written before confirming

    refused = admin_browser.post(url, {"mode": "timestamp", "timestamp": "2024-01-01T00:00:00Z", "confirm": "1"},
                                 follow=True)
    assert "Not reset" in refused.content.decode() and "running" in refused.content.decode()

    done = admin_browser.post(url, {"mode": "timestamp", "timestamp": "2024-01-01T00:00:00Z", "stop": "on",
                                    "confirm": "1"})
    assert done.status_code == 302
    record = store.load("orders")["rs0"]
    assert record.startup["mode"] == "timestamp" and record.startup["timestamp"] == Timestamp(1704067200, 0)
    entry = AuditEntry.objects.get(action="offsets.reset.timestamp")
    assert entry.source == "admin" and entry.username == "staff-admin"


def test_viewers_see_but_cannot_reset(client, django_user_model, no_redis, stack):
    connector = create_connector("orders", state=DesiredState.STOPPED,
                                 **{"offset.storage.topic": f"cdc.offsets.test-{tagged_suffix()}"})
    client.force_login(staff(django_user_model, "viewer"))
    url = f"/admin/connectors/connector/{connector.pk}/offsets/"
    page = client.get(url)
    assert page.status_code == 200 and "Review reset" not in page.content.decode()
    assert client.post(url, {"mode": "latest", "confirm": "1"}).status_code == 403
    assert client.post(f"/admin/connectors/connector/{connector.pk}/change/", {"name": "x"}).status_code == 403
