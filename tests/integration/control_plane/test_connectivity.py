"""A connector's MongoDB is checked before its configuration is saved or called valid: a host that does not resolve,
a refused port, a server that never answers as MongoDB and a standalone server are refused with the reason, in
bounded time, through the API, the dashboard form and Kafka Connect's validate; a reachable replica set passes."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from connectors.mongodb.client import connection_problem
from devstack.mongo import start_standalone
from web.connectors.models import Connector

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

CHECK_MS = 2000


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def silent_server():
    """A port that accepts TCP connections and never says a word (a wrong service, a stuck proxy)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    stop = threading.Event()
    accepted = []

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for connection in accepted:
        connection.close()
    server.close()


@pytest.fixture
def standalone():
    handle = start_standalone()
    yield handle
    handle.stop()


@pytest.fixture
def checking(settings):
    settings.CDC_CONNECTIVITY_CHECK_MS = CHECK_MS


def timed(uri: str) -> tuple[str | None, float]:
    started = time.monotonic()
    problem = connection_problem({"host": uri}, CHECK_MS)
    return problem, time.monotonic() - started


def test_each_kind_of_failure_is_named_in_bounded_time(mongo_rs, silent_server, standalone):
    refused_port = free_port()
    cases = {
        "mongodb://no-such-host.invalid:27017/?replicaSet=rs0": "no-such-host.invalid does not resolve (DNS)",
        f"mongodb://127.0.0.1:{refused_port}/?replicaSet=rs0":
            f"127.0.0.1:{refused_port} refused the connection: nothing listens on port {refused_port}",
        f"mongodb://{silent_server}/?replicaSet=rs0": f"{silent_server} accepted a connection but did not answer",
        standalone.uri: "is a standalone server",
    }
    for uri, expected in cases.items():
        problem, took = timed(uri)
        assert problem is not None and expected in problem, (uri, problem)
        assert took < CHECK_MS / 1000 + 1.5, (uri, took)
    assert timed(mongo_rs.uri)[0] is None


def test_the_api_and_the_form_refuse_an_unreachable_host_before_saving(mongo_rs, checking, django_user_model,
                                                                      admin_client, client):
    port = free_port()
    body = {"name": "unreachable", "topic_prefix": "u",
            "connection_string": f"mongodb://127.0.0.1:{port}/?replicaSet=rs0"}
    checked = admin_client.post("/api/connectors/validate/", body, format="json").json()
    assert checked["valid"] is False
    assert checked["problems"] == [{"property": "mongodb.connection.string", "field": "connection_string",
                                    "message": f"Unable to connect to MongoDB: 127.0.0.1:{port} refused the "
                                               f"connection: nothing listens on port {port}"}]
    created = admin_client.post("/api/connectors/", body, format="json")
    assert created.status_code == 400 and "refused the connection" in created.json()["connection_string"][0]
    assert not Connector.objects.exists()

    client.force_login(django_user_model.objects.get(username="user-admin"))  # admin_client's user
    form = client.post("/connectors/new/", {"name": "unreachable", "topic_prefix": "u", "snapshot_mode": "initial",
                                            "connection_string": body["connection_string"], "start": "on"})
    assert form.status_code == 400 and "refused the connection" in form.content.decode()
    assert not Connector.objects.exists()

    good = admin_client.post("/api/connectors/", {**body, "connection_string": mongo_rs.uri}, format="json")
    assert good.status_code == 201, good.json()


def test_connect_validate_says_unable_to_connect(checking, admin_client):
    port = free_port()
    result = admin_client.put("/connect/connector-plugins/MongoDbConnector/config/validate", {
        "name": "x", "connector.class": "io.debezium.connector.mongodb.MongoDbConnector", "topic.prefix": "x",
        "mongodb.connection.string": f"mongodb://127.0.0.1:{port}/?replicaSet=rs0"}, format="json").json()
    assert result["error_count"] == 1
    by_name = {c["value"]["name"]: c["value"]["errors"] for c in result["configs"]}
    assert by_name["mongodb.connection.string"][0].startswith("Unable to connect to MongoDB")
    created = admin_client.post("/connect/connectors", {"name": "x", "config": {
        "topic.prefix": "x", "mongodb.connection.string": f"mongodb://127.0.0.1:{port}/?replicaSet=rs0"}},
        format="json")
    assert created.status_code == 400 and "Unable to connect to MongoDB" in created.json()["message"]


def test_connect_validate_checks_the_connection_beside_an_unrelated_invalid_property(checking, admin_client):
    port = free_port()
    started = time.monotonic()
    result = admin_client.put("/connect/connector-plugins/MongoDbConnector/config/validate", {
        "name": "x", "connector.class": "io.debezium.connector.mongodb.MongoDbConnector", "topic.prefix": "x",
        "mongodb.connection.string": f"mongodb://127.0.0.1:{port}/?replicaSet=rs0",
        "poll.interval.ms": "often"}, format="json").json()
    assert time.monotonic() - started < CHECK_MS / 1000 + 5  # the check's own bound, on a loaded machine
    by_name = {c["value"]["name"]: c["value"]["errors"] for c in result["configs"]}
    assert by_name["poll.interval.ms"], by_name["poll.interval.ms"]
    assert by_name["mongodb.connection.string"][0].startswith("Unable to connect to MongoDB"), by_name
    assert result["error_count"] == 2


def test_connect_validate_does_not_check_a_connection_whose_own_properties_are_invalid(checking, admin_client):
    port = free_port()
    result = admin_client.put("/connect/connector-plugins/MongoDbConnector/config/validate", {
        "name": "x", "connector.class": "io.debezium.connector.mongodb.MongoDbConnector", "topic.prefix": "x",
        "mongodb.connection.string": f"mongodb://127.0.0.1:{port}/?replicaSet=rs0",
        "mongodb.connect.timeout.ms": "soon"}, format="json").json()
    by_name = {c["value"]["name"]: c["value"]["errors"] for c in result["configs"]}
    assert by_name["mongodb.connect.timeout.ms"]
    assert by_name["mongodb.connection.string"] == []  # judged once the connection's own properties are valid
