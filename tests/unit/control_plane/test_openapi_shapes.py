"""The OpenAPI document describes what the server returns where the schemathesis run (tests/integration/
control_plane/test_api_schema.py, MongoDB connectors only) cannot see it: PostgreSQL and MariaDB offsets, a user
deleted since (null created_by), the runs list with and without ?limit=, the ranges of `limit`, and the 4xx
answers of every operation."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

from web.connectors.partition_offsets import PartitionOffset


@pytest.fixture(scope="module")
def document():
    return SchemaGenerator().get_schema(request=None, public=True)


def test_offsets_of_every_source_fit_the_offset_schema(document):
    offset = document["components"]["schemas"]["Offset"]
    shapes = [
        PartitionOffset("demo-pg", b'["demo-pg",{"server":"demo-pg"}]', {"lsn": 123, "txId": 7}).describe(),
        PartitionOffset("demo-mariadb", b'["m",{"server":"m"}]', {"file": "b.000001", "pos": 4, "gtids": "0-1-5",
                                                                 "startup": {"mode": "latest"}}).describe(),
        {"replica_set": "rs0"},  # a MongoDB offset deleted by a reset to initial
    ]
    for shape in shapes:
        assert set(offset["required"]) <= set(shape), shape
        assert set(shape) <= set(offset["properties"]), shape


def test_users_deleted_since_are_null(document):
    schemas = document["components"]["schemas"]
    for component, field in [("Connector", "created_by"), ("Connector", "updated_by"), ("JobDefinition", "created_by"),
                             ("JobDefinition", "updated_by"), ("JobRun", "requested_by"),
                             ("JobRun", "cancel_requested_by")]:
        assert schemas[component]["properties"][field].get("nullable") is True, (component, field)


def test_runs_list_is_a_page_or_a_plain_list_and_limits_have_ranges(document):
    runs = document["components"]["schemas"]["PaginatedJobRunList"]
    assert [option.get("type") for option in runs["oneOf"]] == ["object", "array"]
    for path, maximum in [("/api/spark/runs/", 1000), ("/api/audit/", 1000), ("/api/connectors/{name}/activity/", 500)]:
        (limit,) = [p for p in document["paths"][path]["get"]["parameters"] if p["name"] == "limit"]
        assert limit["schema"]["minimum"] == 1 and limit["schema"]["maximum"] == maximum, path


def test_every_operation_documents_its_error_answers(document):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            expected = {"400", "429"} if path == "/api/auth/token/" else {"401", "403"}
            assert expected <= set(operation["responses"]), (method, path)
            if "{" in path:
                assert "404" in operation["responses"], (method, path)
