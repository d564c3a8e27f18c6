"""`schemas.enable` and its key/value overrides resolve the same way for every source: off unless set, the
`key.converter.` / `value.converter.` properties overriding `schemas.enable` for keys or values."""

from __future__ import annotations

import json

import pytest
from pymysqlreplication.constants import FIELD_TYPE

from connectors.mongodb.config import ConnectorConfig
from connectors.mysql.binlog import ColumnInfo, TableSchema
from connectors.mysql.config import MySqlConfig
from connectors.mysql.envelope import SourceInfo, TableEvents
from connectors.postgres.config import PostgresConfig

SOURCES = {
    "mongodb": (ConnectorConfig, {"name": "m", "topic.prefix": "m",
                                  "mongodb.connection.string": "mongodb://h1:27017/?replicaSet=rs0"}),
    "postgres": (PostgresConfig, {"name": "p", "topic.prefix": "p", "database.hostname": "h", "database.user": "u",
                                  "database.dbname": "d"}),
    "mariadb": (MySqlConfig, {"name": "m1", "database.hostname": "db", "database.user": "cdc",
                              "database.server.id": "5400", "topic.prefix": "srv"}),
}
KEY, VALUE = "key.converter.schemas.enable", "value.converter.schemas.enable"
# properties -> (key schemas, value schemas)
CASES = [
    ({}, (False, False)),
    ({"schemas.enable": "true"}, (True, True)),
    ({"schemas.enable": "false"}, (False, False)),
    ({KEY: "true"}, (True, False)),
    ({VALUE: "true"}, (False, True)),
    ({"schemas.enable": "true", KEY: "false"}, (False, True)),
    ({"schemas.enable": "true", VALUE: "false"}, (True, False)),
    ({"schemas.enable": "false", KEY: "true", VALUE: "true"}, (True, True)),
]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize(("props", "expected"), CASES, ids=lambda c: json.dumps(c) if isinstance(c, dict) else "")
def test_every_source_resolves_schemas_alike(source, props, expected):
    config_class, base = SOURCES[source]
    config = config_class.from_properties({**base, **props})
    assert (config.key_schemas, config.value_schemas) == expected


@pytest.mark.parametrize(("props", "expected"), CASES, ids=lambda c: json.dumps(c) if isinstance(c, dict) else "")
def test_mariadb_events_follow_the_resolved_setting(props, expected):
    table = TableSchema("shop", "users", (ColumnInfo("id", FIELD_TYPE.LONG, False, primary=True),))
    source = SourceInfo("shop", "users", 1_700_000_000_000, 1, "mariadb-bin.000001", 400, 0, "false", "0-1-9", 12)
    config = MySqlConfig.from_properties({**SOURCES["mariadb"][1], **props})
    message = TableEvents(config, table).messages("c", None, {"id": 7}, source)[0]
    key, value = json.loads(message.key), json.loads(message.value)
    assert ("schema" in key, "schema" in value) == expected
    assert (key["payload"] if expected[0] else key) == {"id": 7}
    assert (value["payload"] if expected[1] else value)["after"] == {"id": 7}


def test_the_demo_connectors_state_their_setting():
    from devstack import demo, demo_sql

    for properties in (demo.demo_properties(), demo_sql.postgres_properties("demo-pg", dsn="host=h dbname=d user=u"),
                       demo_sql.mariadb_properties("demo-mariadb", cdc_dsn="mysql://u:p@h:3306/")):
        assert properties["schemas.enable"] == "false", properties["name"]
