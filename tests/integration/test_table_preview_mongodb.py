"""The table preview API on MongoDB: every collection of the replica set's user databases (no admin, local, config,
system.*) with whether the connector's NamespaceFilter captures it."""

from __future__ import annotations

import pymongo
import pytest

from tests.api_support import admin_client, no_redis  # noqa: F401 - fixtures

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_the_preview_marks_the_collections_the_lists_capture(mongo_rs, admin_client, settings):  # noqa: F811
    settings.CDC_CONNECTIVITY_CHECK_MS = 10_000
    client = pymongo.MongoClient(mongo_rs.uri)
    for database, collection in (("prevshop", "orders"), ("prevshop", "customers"), ("prevother", "things")):
        client[database][collection].insert_one({"_id": 1})
    client.close()
    body = {"connection_string": mongo_rs.uri,
            "config": {"database.include.list": "prevshop", "collection.exclude.list": "prevshop.customers"}}
    answer = admin_client.post("/api/connectors/tables/", body, format="json")
    assert answer.status_code == 200, answer.json()
    shown = {row["name"]: row["captured"] for row in answer.json()["tables"] if row["name"].startswith("prev")}
    assert shown == {"prevother.things": False, "prevshop.customers": False, "prevshop.orders": True}
    assert not any(row["name"].startswith(("admin.", "local.", "config.")) for row in answer.json()["tables"])
