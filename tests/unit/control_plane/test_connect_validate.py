"""PUT /connect/connector-plugins/{plugin}/config/validate answers Kafka Connect's ConfigInfos with the full
ConfigKeyInfo of every property (what Connect form generators read), the values given or defaulted, secrets hidden."""

from __future__ import annotations

import pytest

from connectors.mongodb.config import KNOWN_PROPERTIES, property_docs
from connectors.mongodb.config_info import PROPERTIES
from tests.api_support import SALT, SECRET, sample_config

pytestmark = pytest.mark.django_db

URL = "/connect/connector-plugins/MongoDbConnector/config/validate"
# Kafka Connect's ConfigInfos JSON (org.apache.kafka.connect.runtime.rest.entities): the keys and enumerations
DEFINITION_KEYS = {"name", "type", "required", "default_value", "importance", "documentation", "group", "width",
                   "display_name", "dependents", "order"}
VALUE_KEYS = {"name", "value", "recommended_values", "errors", "visible"}
TYPES = {"BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"}
IMPORTANCES = {"HIGH", "MEDIUM", "LOW"}
WIDTHS = {"NONE", "SHORT", "MEDIUM", "LONG"}


def validate(client, config):
    response = client.put(URL, config, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_every_property_has_connects_full_metadata(admin_client):
    body = validate(admin_client, sample_config("x", **{"mongodb.password": "pw", "mongodb.user": "u",
                                                        "mongodb.connection.string": "mongodb://db1/?replicaSet=rs0"}))
    assert set(body) == {"name", "error_count", "groups", "configs"}
    assert body["name"] == "io.debezium.connector.mongodb.MongoDbConnector" and body["error_count"] == 0
    listed = {entry["definition"]["name"]: entry for entry in body["configs"]}
    assert set(KNOWN_PROPERTIES) <= set(listed)
    docs = {name: doc for name, _, doc in property_docs()}
    for name, entry in listed.items():
        definition, value = entry["definition"], entry["value"]
        assert set(definition) == DEFINITION_KEYS and set(value) == VALUE_KEYS, name
        assert definition["type"] in TYPES and definition["importance"] in IMPORTANCES
        assert definition["width"] in WIDTHS and definition["group"] in body["groups"]
        assert isinstance(definition["order"], int) and definition["order"] >= 1
        assert definition["display_name"] and definition["documentation"], name
        assert set(definition["dependents"]) <= set(listed), name
        assert value["name"] == name and value["errors"] == [] and value["visible"] is True
        assert value["value"] is None or isinstance(value["value"], str)
        if name in docs:
            assert definition["documentation"] == docs[name]
    orders = {}
    for entry in body["configs"]:
        orders.setdefault(entry["definition"]["group"], []).append(entry["definition"]["order"])
    assert all(order == list(range(1, len(order) + 1)) for order in orders.values()), orders
    assert body["groups"][0] == "Common"

    mode = listed["snapshot.mode"]
    assert mode["definition"]["type"] == "STRING" and mode["definition"]["default_value"] == "initial"
    assert mode["definition"]["group"] == "Snapshot" and mode["definition"]["importance"] == "HIGH"
    assert "when_needed" in mode["value"]["recommended_values"]
    assert "snapshot.max.threads" in mode["definition"]["dependents"]
    assert listed["tombstones.on.delete"]["definition"] == {**listed["tombstones.on.delete"]["definition"],
                                                           "type": "BOOLEAN", "default_value": "true"}
    assert listed["tombstones.on.delete"]["value"]["value"] == "true"  # not given: the default, as Connect shows it
    assert listed["max.batch.size"]["definition"]["type"] == "INT"
    assert listed["heartbeat.interval.ms"]["definition"]["type"] == "LONG"
    assert listed["collection.include.list"]["definition"]["type"] == "LIST"
    assert listed["collection.include.list"]["value"]["value"] == "inventory.orders,inventory.lines"
    assert listed["name"]["definition"]["required"] is True and listed["name"]["definition"]["group"] == "Common"
    assert listed["mongodb.password"]["definition"]["type"] == "PASSWORD"
    assert listed["mongodb.password"]["value"]["value"] == "[hidden]"
    text = str(body)
    assert listed["mongodb.connection.string"]["value"]["value"] == "mongodb://db1/?replicaSet=rs0"
    assert SECRET not in text and SALT not in text and "'pw'" not in text
    masks = [name for name in listed if name.startswith("field.mask.hash.SHA-256")]
    assert masks == ["field.mask.hash.SHA-256.with.salt.********"]
    assert listed[masks[0]]["value"]["value"] == "inventory.orders.email"


def test_errors_sit_on_their_property_and_unknown_keys_are_listed(admin_client):
    body = validate(admin_client, sample_config("x", **{"snapshot.mode": "bad", "snapshot.modes": "initial"}))
    listed = {entry["definition"]["name"]: entry for entry in body["configs"]}
    assert body["error_count"] == 2
    assert listed["snapshot.mode"]["value"]["errors"] and listed["snapshot.mode"]["value"]["value"] == "bad"
    assert listed["topic.prefix"]["value"]["errors"] == []
    unknown = listed["snapshot.modes"]
    assert unknown["definition"]["group"] == "Other" and "Other" in body["groups"]
    assert unknown["value"]["errors"] and "snapshot.mode" in unknown["value"]["errors"][0]


def test_metadata_module_is_consistent():
    assert all(info.type != "LIST" or info.width == "LONG" for info in PROPERTIES.values())
    assert [info.name for info in PROPERTIES.values() if info.required] == ["name", "connector.class", "topic.prefix"]


def test_validate_needs_a_role(client, django_user_model):
    assert client.put(URL, sample_config("x"), content_type="application/json").status_code in (401, 403)
