"""web.connectors.properties: a Debezium property map split into connector fields + filter rows and joined back,
secrets masked for display and restored from the stored ones when a masked value comes back."""

from __future__ import annotations

import pytest

from connectors.mongodb.config import ConnectorConfig
from web.connectors import properties as props

FULL = {
    "name": "orders",
    "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
    "topic.prefix": "shop",
    "mongodb.connection.string": "mongodb://cdc:s3cret@h1:27017,h2:27017/?replicaSet=rs0&authSource=admin",
    "database.include.list": "inventory,sales",
    "collection.exclude.list": "inventory\\.tmp.*",
    "field.exclude.list": "inventory.orders.internal",
    "field.renames": "inventory.orders.cust:customer,sales.lines.qty:quantity",
    "field.mask.redact": "inventory.orders.card",
    "field.mask.hash.SHA-256.with.salt.pepper": "inventory.orders.email,inventory.orders.phone",
    "skipped.operations": "t,d",
    "snapshot.include.collection.list": "inventory.orders",
    "snapshot.collection.filter.overrides": "inventory.orders",
    "snapshot.collection.filter.overrides.inventory.orders": '{"status": "open"}',
    "snapshot.mode": "initial",
    "max.batch.size": 100,
}


def test_split_puts_each_list_item_in_its_own_row():
    parts = props.split(FULL)
    assert (parts.name, parts.topic_prefix) == ("orders", "shop")
    assert parts.connection_string == FULL["mongodb.connection.string"]
    rows = [(r.kind, r.value, r.argument, r.salt) for r in parts.filters]
    assert ("database_include", "sales", "", "") in rows
    assert ("collection_exclude", "inventory\\.tmp.*", "", "") in rows
    assert ("field_rename", "inventory.orders.cust", "customer", "") in rows
    assert ("field_mask_hash", "inventory.orders.phone", "SHA-256", "pepper") in rows
    assert ("skipped_operation", "d", "", "") in rows
    assert ("snapshot_filter_override", "inventory.orders", '{"status": "open"}', "") in rows
    assert parts.properties == {"connector.class": FULL["connector.class"], "snapshot.mode": "initial",
                                "max.batch.size": 100}


def test_join_of_split_builds_the_same_engine_configuration():
    assert ConnectorConfig.from_properties(props.join(props.split(FULL))) == ConnectorConfig.from_properties(FULL)


def test_regex_with_a_comma_inside_braces_stays_one_row():
    parts = props.split({**FULL, "collection.include.list": "inventory\\.c{1,3},sales.x"})
    assert [r.value for r in parts.filters if r.kind == "collection_include"] == ["inventory\\.c{1,3}", "sales.x"]


def test_mongodb_name_alias_is_the_topic_prefix():
    parts = props.split({"name": "a", "mongodb.name": "legacy"})
    assert parts.topic_prefix == "legacy"
    assert props.join(parts)["topic.prefix"] == "legacy"


def test_mask_hides_passwords_and_salts():
    shown = props.mask(props.join(props.split({**FULL, "mongodb.password": "pw", "mongodb.user": "u"})))
    text = repr(shown)
    assert "s3cret" not in text and "pepper" not in text and "'pw'" not in text
    assert shown["mongodb.connection.string"].startswith("mongodb://cdc:********@h1:27017")
    assert shown["mongodb.password"] == "********"
    assert shown["field.mask.hash.SHA-256.with.salt.********"] == "inventory.orders.email,inventory.orders.phone"


@pytest.mark.parametrize(
    "credentials",
    [{}, {"mongodb.connection.string": "mongodb://h1:27017/?replicaSet=rs0", "mongodb.user": "u",
          "mongodb.password": "pw"}],
)
def test_unmask_restores_the_stored_secrets(credentials):
    stored = props.split({**FULL, **credentials})
    given = props.mask(props.join(stored))
    restored, problems = props.unmask(given, stored)
    assert problems == []
    assert restored == props.join(stored)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("mongodb.connection.string", "mongodb://other:********@elsewhere:27017"),
        ("mongodb.password", "********"),
        ("field.mask.hash.SHA-512.with.salt.********", "inventory.orders.email"),
    ],
)
def test_a_mask_that_matches_nothing_stored_is_a_problem(key, value):
    _, problems = props.unmask({key: value}, props.split({"name": "x"}))
    assert [prop for prop, _ in problems] == [key]


def test_uri_has_password():
    assert props.uri_has_password("mongodb://u:p@h")
    assert not props.uri_has_password("mongodb://u@h")
    assert not props.uri_has_password("mongodb://h:27017")


RELATIONAL = {
    "name": "pg", "connector.class": "io.debezium.connector.postgresql.PostgresConnector", "topic.prefix": "pg",
    "database.password": "dbpw",
    "column.mask.hash.SHA-256.with.salt.pep.per": "public\\.t\\.a,public\\.t\\.b{1,2}",
    "column.mask.hash.v2.SHA-512.with.salt.other": "public\\.u\\.c",
}


def test_column_hash_salts_go_to_rows_and_are_masked_like_the_password():
    parts = props.split(RELATIONAL)
    rows = [(r.kind, r.value, r.argument, r.salt) for r in parts.filters]
    assert rows == [("column_mask_hash", "public\\.t\\.a", "SHA-256", "pep.per"),
                    ("column_mask_hash", "public\\.t\\.b{1,2}", "SHA-256", "pep.per"),
                    ("column_mask_hash", "public\\.u\\.c", "v2.SHA-512", "other")]
    assert not any(key.startswith("column.mask.hash") for key in parts.properties)  # not stored in clear
    assert props.join(parts) == RELATIONAL
    shown = props.mask(props.join(parts))
    assert "pep.per" not in repr(shown) and "other" not in repr(shown) and shown["database.password"] == "********"
    assert shown["column.mask.hash.SHA-256.with.salt.********"] == "public\\.t\\.a,public\\.t\\.b{1,2}"
    assert shown["column.mask.hash.v2.SHA-512.with.salt.********"] == "public\\.u\\.c"
    assert [props.property_of(r) for r in parts.filters][-1] == "column.mask.hash.v2.SHA-512.with.salt.********"
    restored, problems = props.unmask(shown, parts)
    assert problems == [] and restored == RELATIONAL
    _, problems = props.unmask({"column.mask.hash.MD5.with.salt.********": "a"}, parts)
    assert [prop for prop, _ in problems] == ["column.mask.hash.MD5.with.salt.********"]
    assert props.mask({"column.mask.hash.SHA-256.salt.secret": "a"}) == {"column.mask.hash.********": "a"}
