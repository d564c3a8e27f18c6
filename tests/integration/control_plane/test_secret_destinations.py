"""A stored secret only ever goes where it was stored for, whoever asks, through every entry point.

Fake PostgreSQL, MariaDB and MongoDB servers ask for the password in clear text (tests/fake_sources.py). Viewers
and operators, who may not edit a connector, try to make the platform send a stored connector's password to them:
the validate calls of the REST API and of Kafka Connect with the host or port changed, and masked secrets. No
connection may reach a fake. An admin who moves a connector must type the password again; when they do, the fake
receives that password (the control that shows the fakes and the path would have caught a leak).
"""

from __future__ import annotations

import pytest

from tests.api_support import client_for, make_user
from tests.fake_sources import FakeSource
from web.connectors import drafts, services

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

STORED = "St0red-Secret-pw"  # noqa: S105 - the secret no request may make travel
TYPED = "typed-again-pw"  # noqa: S105
MASKED = "********"

CONNECTORS = {
    "postgres": {"name": "pg", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
                 "topic.prefix": "pg", "database.hostname": "127.0.0.1", "database.port": "5999",
                 "database.user": "cdc", "database.dbname": "shop", "database.password": STORED},
    "mysql": {"name": "maria", "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
              "topic.prefix": "maria", "database.hostname": "127.0.0.1", "database.port": "3999",
              "database.user": "cdc", "database.server.id": "77", "database.password": STORED},
    "mongodb": {"name": "mongo", "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
                "topic.prefix": "mongo", "mongodb.connection.string": "mongodb://127.0.0.1:27999/?replicaSet=rs0",
                "mongodb.user": "cdc", "mongodb.password": STORED},
}
PLUGINS = {"postgres": "PostgresConnector", "mysql": "MariaDbConnector", "mongodb": "MongoDbConnector"}


@pytest.fixture
def checking(settings):
    settings.CDC_CONNECTIVITY_CHECK_MS = 3000
    settings.CDC_CONNECTIVITY_CHECK_RATE = "1000/min"


@pytest.fixture(params=sorted(CONNECTORS))
def target(request, no_redis):
    kind = request.param
    fake = FakeSource.start(kind)
    config = CONNECTORS[kind]
    services.create_connector(drafts.prepare(dict(config)), user=None, source="system")
    yield kind, config, fake
    fake.close()


def moved(kind: str, port: int) -> dict:
    """The changes that point a stored connector at the fake on `port`."""
    if kind == "mongodb":
        return {"mongodb.connection.string": f"mongodb://127.0.0.1:{port}/?replicaSet=rs0&authMechanism=PLAIN"}
    return {"database.hostname": "127.0.0.1", "database.port": str(port)}


def attempts(kind: str, config: dict, port: int) -> list[tuple[str, str, dict]]:
    name, changes = config["name"], moved(kind, port)
    password = "mongodb.password" if kind == "mongodb" else "database.password"
    whole = {**config, **changes, password: MASKED}
    return [
        ("post", f"/api/connectors/{name}/validate/", {"config": changes}),
        ("post", f"/api/connectors/{name}/validate/", {"config": {**changes, password: MASKED}}),
        ("post", "/api/connectors/validate/", {"name": "probe", "config": {**whole, "name": "probe"}}),
        ("put", f"/connect/connector-plugins/{PLUGINS[kind]}/config/validate", whole),
    ]


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_no_role_below_admin_can_send_a_stored_password_anywhere(target, role, checking, django_user_model):
    kind, config, fake = target
    client = client_for(make_user(django_user_model, role))
    for method, url, body in attempts(kind, config, fake.port):
        response = getattr(client, method)(url, body, format="json")
        assert response.status_code < 500, (url, response.content)
        assert STORED not in response.content.decode()
    assert fake.connections == 0 and STORED.encode() not in fake.received


def test_an_admin_gives_the_password_again_to_move_a_connector(target, checking, django_user_model):
    kind, config, fake = target
    admin = client_for(make_user(django_user_model, "admin"))
    name, changes = config["name"], moved(kind, fake.port)
    password = "mongodb.password" if kind == "mongodb" else "database.password"

    for method, url, body in [
        *attempts(kind, config, fake.port),
        ("patch", f"/api/connectors/{name}/", {"config": changes}),
        ("put", f"/connect/connectors/{name}/config", {**config, **changes, password: MASKED}),
    ]:
        response = getattr(admin, method)(url, body, format="json")
        assert response.status_code < 500, (url, response.content)
    assert fake.connections == 0 and STORED.encode() not in fake.received

    refused = admin.patch(f"/api/connectors/{name}/", {"config": changes}, format="json")
    assert refused.status_code == 400
    assert "give the password again" in refused.content.decode()

    typed = admin.post(f"/api/connectors/{name}/validate/", {"password": TYPED, "config": changes}, format="json")
    assert typed.json()["connection_checked"] is True
    assert fake.connections >= 1
    if kind != "mongodb":  # the fakes that ask for a clear-text password received the one typed, not the stored one
        assert fake.passwords and set(fake.passwords) == {TYPED.encode()}
    assert STORED.encode() not in fake.received


def test_a_viewer_validation_never_connects(checking, django_user_model, no_redis):
    """Port scanning through the check: a viewer's validation of a new configuration checks it without connecting."""
    fake = FakeSource.start("postgres")
    try:
        viewer = client_for(make_user(django_user_model, "viewer"))
        body = {"name": "scan", "password": "x", "config": {**CONNECTORS["postgres"], **moved("postgres", fake.port),
                                                           "name": "scan", "database.password": "x"}}
        result = viewer.post("/api/connectors/validate/", body, format="json").json()
        assert result["connection_checked"] is False and fake.connections == 0
    finally:
        fake.close()
