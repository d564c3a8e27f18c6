"""The runner and the CLI pick the source from connector.class: Debezium's class names and short names; none is
MongoDB; every known source is wired (MongoDB, PostgreSQL, MySQL/MariaDB); an unknown class is refused with a message
naming connector.class, without a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from connectors import UnknownConnectorClass
from connectors.mongodb.source import MongoSource
from connectors.mysql.source import MySqlSource
from connectors.runner import ConnectorRunner
from connectors.sources import engine_config, source_kind

ROOT = Path(__file__).resolve().parents[2]
MONGO = {"name": "c1", "topic.prefix": "c1", "mongodb.connection.string": "mongodb://127.0.0.1:1/?replicaSet=rs0"}


@pytest.mark.parametrize(("value", "kind"), [
    (None, "mongodb"),
    ("io.debezium.connector.mongodb.MongoDbConnector", "mongodb"),
    ("mongodb", "mongodb"),
    ("io.debezium.connector.postgresql.PostgresConnector", "postgres"),
    ("postgres", "postgres"),
    ("io.debezium.connector.mysql.MySqlConnector", "mysql"),
    ("MySQL", "mysql"),
    ("io.debezium.connector.mariadb.MariaDbConnector", "mariadb"),
    ("mariadb", "mariadb"),
])
def test_connector_class_names_a_source(value, kind):
    properties = {} if value is None else {"connector.class": value}
    assert source_kind(properties) == kind


def test_an_unknown_class_is_refused_by_name():
    with pytest.raises(UnknownConnectorClass, match="connector.class 'com.example.Oracle'"):
        source_kind({"connector.class": "com.example.Oracle"})


MYSQL = {"name": "m1", "topic.prefix": "m1", "database.hostname": "127.0.0.1", "database.user": "cdc",
         "database.server.id": "5400"}


def test_each_source_runs_on_the_core():
    for value in (None, "mongodb", "io.debezium.connector.mongodb.MongoDbConnector"):
        properties = dict(MONGO) if value is None else {**MONGO, "connector.class": value}
        kind, config = engine_config(properties)
        assert kind == "mongodb" and config.name == "c1"
        assert isinstance(ConnectorRunner(config, "127.0.0.1:9092").source, MongoSource)
    for value, kind, connector_class in (("mysql", "mysql", "io.debezium.connector.mysql.MySqlConnector"),
                                         ("MariaDB", "mariadb", "io.debezium.connector.mariadb.MariaDbConnector")):
        got, config = engine_config({**MYSQL, "connector.class": value})
        assert got == kind and config.connector_class == connector_class
        assert isinstance(ConnectorRunner(config, "127.0.0.1:9092").source, MySqlSource)


@pytest.mark.parametrize("command", ["run", "validate"])
def test_the_cli_refuses_an_unknown_class_without_a_traceback(tmp_path, command):
    path = tmp_path / "connector.json"
    path.write_text(json.dumps({**MONGO, "connector.class": "io.debezium.connector.oracle.OracleConnector"}))
    result = subprocess.run([sys.executable, "-m", "connectors", command, str(path)], capture_output=True,
                            text=True, cwd=ROOT, timeout=60)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert ("connector.class 'io.debezium.connector.oracle.OracleConnector' is not a connector this platform runs"
            in output)
    assert "Traceback" not in output
