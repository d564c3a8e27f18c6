"""A mistyped MongoDB connection string (a password with an unescaped @ : / ? or %) never has any part of its user
info echoed: not in /connect/'s validate (values and errors), nor the API's validate and create errors."""

from __future__ import annotations

import pytest

from tests.api_support import sample_config

pytestmark = pytest.mark.django_db

# Each password's pieces (split where a parser might cut it) are distinctive, so finding one means an echo.
MISTYPED = [
    "mongodb://cdc:Qx7w@Zr9k@db1:27017/?replicaSet=rs0",
    "mongodb://cdc:Qx7w@Zr9k@Vy3m@db1/?replicaSet=rs0",
    "mongodb://cdc:Qx7w/Zr9k@db1:27017/?replicaSet=rs0",
    "mongodb://cdc:Qx7w?Zr9k@db1/?replicaSet=rs0",
    "mongodb://cdc:Qx7w:Zr9k@db1/?replicaSet=rs0",
    "mongodb://cdc:Qx7w%Zr9k@db1/?replicaSet=rs0",
    "mongodb://cdc:987654/Zr9k@db1:27017/?replicaSet=rs0",
    "mongodb+srv://cdc:Qx7w@Zr9k@cluster.example.com/?replicaSet=rs0",
]
PIECES = ("Qx7w", "Zr9k", "Vy3m", "987654")


def leaked(body: str) -> list[str]:
    return [piece for piece in PIECES if piece in body]


@pytest.mark.parametrize("uri", MISTYPED)
def test_connect_validate_echoes_no_part_of_the_userinfo(admin_client, uri):
    config = sample_config("x", **{"mongodb.connection.string": uri})
    response = admin_client.put("/connect/connector-plugins/MongoDbConnector/config/validate", config, format="json")
    assert response.status_code == 200
    body = response.content.decode()
    assert leaked(body) == [], body
    (value,) = [entry["value"] for entry in response.json()["configs"]
                if entry["definition"]["name"] == "mongodb.connection.string"]
    assert value["errors"], "a mistyped connection string is reported"
    assert "percent-encoded" in value["errors"][0] or "escaped" in value["errors"][0]


@pytest.mark.parametrize("uri", MISTYPED)
def test_api_validate_and_create_echo_no_part_of_the_userinfo(admin_client, uri):
    config = sample_config("x", **{"mongodb.connection.string": uri})
    for url in ("/api/connectors/validate/", "/api/connectors/"):
        response = admin_client.post(url, config, format="json")
        assert response.status_code in (200, 400)
        assert leaked(response.content.decode()) == [], (url, response.content)
    response = admin_client.post("/connect/connectors", {"name": "x", "config": config}, format="json")
    assert response.status_code == 400 and leaked(response.content.decode()) == [], response.content


def test_a_well_formed_string_still_shows_its_user_and_hosts(admin_client):
    config = sample_config("x", **{"mongodb.connection.string": "mongodb://cdc:Qx7w%40Zr9k@db1:27017/?replicaSet=rs0"})
    response = admin_client.put("/connect/connector-plugins/MongoDbConnector/config/validate", config, format="json")
    (value,) = [entry["value"] for entry in response.json()["configs"]
                if entry["definition"]["name"] == "mongodb.connection.string"]
    assert value["value"] == "mongodb://cdc:********@db1:27017/?replicaSet=rs0" and value["errors"] == []
