"""Deleting a PostgreSQL connector, against the real server: its replication slot and publication are dropped when
asked (dashboard checkboxes, the API's ?drop_slot=true), kept and named with the SQL to drop them otherwise, and
never silently: a slot still read by someone, a publication the connector's user may not drop or a server that
cannot be reached leave the deletion done with a warning naming what stayed. The overview warns of an inactive
slot of a stored connector that retains WAL. Every slot and publication here is the test's own, in the test's own
database."""

from __future__ import annotations

import uuid

import psycopg2
import psycopg2.extensions
import psycopg2.extras
import pytest
from django.contrib.messages import get_messages

from tests.api_support import client_for, make_user, no_redis  # noqa: F401 - fixtures
from web.connectors import drafts, services
from web.connectors.models import Connector, DesiredState

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

PG_CLASS = "io.debezium.connector.postgresql.PostgresConnector"


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def store_connector(pg_db, name: str, slot: str, publication: str, mode: str = "filtered", port=None) -> Connector:
    dsn = psycopg2.extensions.parse_dsn(pg_db.dsn)
    properties = {"name": name, "topic.prefix": name, "connector.class": PG_CLASS, "database.hostname": dsn["host"],
                  "database.port": int(port or dsn["port"]), "database.user": dsn["user"],
                  "database.password": dsn["password"], "database.dbname": pg_db.name, "slot.name": slot,
                  "publication.name": publication, "publication.autocreate.mode": mode,
                  "table.include.list": "public.items", "offset.storage.topic": f"{name}.offsets"}
    return services.create_connector(drafts.prepare(properties), user=None, source="system",
                                     desired_state=DesiredState.STOPPED)


def make_slot_and_publication(pg_db, slot: str, publication: str) -> None:
    pg_db.execute("CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, note text)")
    pg_db.execute(f'CREATE PUBLICATION "{publication}" FOR TABLE items')
    pg_db.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
    pg_db.execute("INSERT INTO items VALUES (1, 'retained by the slot')")


def slot_exists(pg_db, slot: str) -> bool:
    return bool(pg_db.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,)))


def publication_exists(pg_db, publication: str) -> bool:
    return bool(pg_db.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (publication,)))


def page_messages(response) -> list[tuple[str, str]]:
    return [(message.level_tag, str(message)) for message in get_messages(response.wsgi_request)]


@pytest.fixture
def admin(client, django_user_model, no_redis):  # noqa: F811
    client.force_login(make_user(django_user_model, "admin"))
    return client


def test_delete_page_drops_the_slot_and_publication_when_ticked(pg_db, admin):
    slot, publication = unique("s_del"), unique("p_del")
    make_slot_and_publication(pg_db, slot, publication)
    store_connector(pg_db, "pgdrop", slot, publication)

    page = admin.get("/connectors/pgdrop/delete/").content.decode()
    assert 'name="drop_slot" checked' in page and f"<code>{slot}</code>" in page
    assert 'name="drop_publication" checked' in page and f"<code>{publication}</code>" in page

    response = admin.post("/connectors/pgdrop/delete/", {"offsets": "keep", "drop_slot": "on",
                                                         "drop_publication": "on"})
    assert response.status_code == 302
    assert not Connector.objects.filter(name="pgdrop").exists()
    assert not slot_exists(pg_db, slot) and not publication_exists(pg_db, publication)
    shown = page_messages(response)
    assert ("info", f"The replication slot {slot!r} on {where(pg_db)} was dropped.") in shown
    assert ("info", f"The publication {publication!r} on {where(pg_db)} was dropped.") in shown


def where(pg_db) -> str:
    dsn = psycopg2.extensions.parse_dsn(pg_db.dsn)
    return f"{dsn['host']}:{dsn['port']}/{pg_db.name}"


def test_delete_page_keeps_them_when_unticked_and_says_so(pg_db, admin):
    slot, publication = unique("s_keep"), unique("p_keep")
    make_slot_and_publication(pg_db, slot, publication)
    store_connector(pg_db, "pgkeep", slot, publication)

    page = admin.get("/connectors/pgkeep/delete/").content.decode()
    assert "Unticked, they stay on the server" in page
    assert f"SELECT pg_drop_replication_slot(&#x27;{slot}&#x27;);" in page

    response = admin.post("/connectors/pgkeep/delete/", {"offsets": "keep"})
    assert response.status_code == 302 and not Connector.objects.filter(name="pgkeep").exists()
    assert slot_exists(pg_db, slot) and publication_exists(pg_db, publication)
    warnings = [text for level, text in page_messages(response) if level == "warning"]
    assert any(slot in text and "not asked to drop it" in text and "keeps WAL" in text
               and f"SELECT pg_drop_replication_slot('{slot}');" in text for text in warnings), warnings
    assert any(publication in text and f'DROP PUBLICATION IF EXISTS "{publication}";' in text
               for text in warnings), warnings


def test_api_delete_drops_with_the_query_parameter(pg_db, django_user_model, no_redis):  # noqa: F811
    slot, publication = unique("s_api"), unique("p_api")
    make_slot_and_publication(pg_db, slot, publication)
    store_connector(pg_db, "pgapi", slot, publication)
    api = client_for(make_user(django_user_model, "admin"))

    assert api.delete("/api/connectors/pgapi/?drop_slot=maybe").status_code == 400
    assert Connector.objects.filter(name="pgapi").exists()
    response = api.delete("/api/connectors/pgapi/?drop_slot=true")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["warnings"] == []
    assert [(o["kind"], o["name"], o["dropped"]) for o in body["server_objects"]] == [
        ("slot", slot, True), ("publication", publication, True)]
    assert not slot_exists(pg_db, slot) and not publication_exists(pg_db, publication)


def test_a_slot_still_read_is_left_with_a_warning(pg_db, no_redis, monkeypatch):  # noqa: F811
    monkeypatch.setattr("connectors.postgres.leftovers.ACTIVE_WAIT_S", 1.0)
    slot, publication = unique("s_busy"), unique("p_busy")
    make_slot_and_publication(pg_db, slot, publication)
    connector = store_connector(pg_db, "pgbusy", slot, publication)
    reader = psycopg2.connect(pg_db.dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
    try:
        cursor = reader.cursor()
        cursor.start_replication(slot_name=slot, decode=False,
                                 options={"proto_version": "1", "publication_names": publication})
        assert pg_db.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)) == [(True,)]
        outcomes = services.delete_connector(connector, user=None, source="system", drop_slot=True)
    finally:
        reader.close()
    assert not Connector.objects.filter(name="pgbusy").exists()
    left = {outcome.kind: outcome for outcome in outcomes}
    assert not left["slot"].dropped and "still in use by server process" in left["slot"].message
    assert left["slot"].sql == f"SELECT pg_drop_replication_slot('{slot}');" and slot_exists(pg_db, slot)
    assert left["publication"].dropped and not publication_exists(pg_db, publication)


def test_a_publication_the_user_may_not_drop_is_named_with_its_sql(pg_db, postgres, no_redis):  # noqa: F811
    slot, publication = unique("s_perm"), unique("p_perm")
    pg_db.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
    postgres.execute(f'CREATE PUBLICATION "{publication}" FOR ALL TABLES', dbname=pg_db.name)  # the admin's
    connector = store_connector(pg_db, "pgperm", slot, publication, mode="all_tables")
    outcomes = services.delete_connector(connector, user=None, source="system", drop_slot=True)
    assert not Connector.objects.filter(name="pgperm").exists()
    left = {outcome.kind: outcome for outcome in outcomes}
    assert left["slot"].dropped and not slot_exists(pg_db, slot)
    assert not left["publication"].dropped and publication_exists(pg_db, publication)
    assert "PostgreSQL refused: must be owner of publication" in left["publication"].message
    assert left["publication"].sql == f'DROP PUBLICATION IF EXISTS "{publication}";'
    postgres.execute(f'DROP PUBLICATION "{publication}"', dbname=pg_db.name)


def test_an_unreachable_server_leaves_the_deletion_done_with_a_warning(pg_db, no_redis):  # noqa: F811
    connector = store_connector(pg_db, "pggone", "s_never_made", "p_never_made", port=1)
    outcomes = services.delete_connector(connector, user=None, source="system", drop_slot=True)
    assert not Connector.objects.filter(name="pggone").exists()
    assert [outcome.kind for outcome in outcomes] == ["slot", "publication"]
    for outcome in outcomes:
        assert not outcome.dropped and "cannot connect to PostgreSQL at" in outcome.message and outcome.sql


def test_the_overview_warns_of_an_inactive_slot_of_a_stored_connector(pg_db, admin):
    slot, publication = unique("s_idle"), unique("p_idle")
    make_slot_and_publication(pg_db, slot, publication)
    pg_db.execute("INSERT INTO items SELECT g, repeat('x', 200) FROM generate_series(2, 2000) g")
    store_connector(pg_db, "pgidle", slot, publication)

    assert 'hx-get="/idle-slots/"' in admin.get("/").content.decode()  # the overview loads the warning
    warning = admin.get("/idle-slots/").content.decode()
    assert "Inactive replication slots are retaining WAL" in warning
    assert f'data-slot="{slot}"' in warning and "pgidle" in warning and "of WAL" in warning

    Connector.objects.filter(name="pgidle").delete()  # a slot of no stored connector is not ours to name
    assert slot not in admin.get("/idle-slots/").content.decode()
