"""Field rules: exclusion, renaming, hashing and redaction in documents and in update descriptions."""

from __future__ import annotations

import hashlib

import pytest
from bson import Int64, ObjectId
from bson.binary import Binary

from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.field_rules import (
    FieldRenameConflict,
    FieldRules,
    hash_masker,
    parse_rule_path,
    redact_masker,
)
from connectors.mongodb.records import Namespace, TruncatedArray, UpdateDescription

BASE = {"name": "c", "topic.prefix": "p", "mongodb.connection.string": "mongodb://h1"}
CUSTOMERS = Namespace("inventory", "customers")


def rules(**props) -> FieldRules:
    return FieldRules.from_config(ConnectorConfig.from_properties({**BASE, **props}))


def transform(document, namespace=CUSTOMERS, **props):
    return rules(**props).for_namespace(namespace).document(document)


def describe(description: UpdateDescription, namespace=CUSTOMERS, **props) -> UpdateDescription:
    return rules(**props).for_namespace(namespace).update_description(description)


def sha256(salt: str, text: str) -> str:
    return hashlib.sha256((salt + text).encode()).hexdigest()


DOCUMENT = {
    "_id": Int64(1004),
    "name": "Anne",
    "ssn": "123-45-6789",
    "address": {"street": "Main St", "city": "Springfield", "geo": {"lat": 1.0, "lon": 2.0}},
    "orders": [{"sku": "A", "price": 5, "card": "4111"}, {"sku": "B", "price": 7, "card": "5500"}, "not a document"],
    "matrix": [[{"secret": 1}], [{"secret": 2}]],
}


# --- rule paths -------------------------------------------------------------------------------


def test_rule_path_wildcards_match_namespaces_ignoring_case():
    pattern, path = parse_rule_path("inv*.*.address.city")
    assert path == ("address", "city")
    assert pattern.fullmatch("inventory.customers")
    assert pattern.fullmatch("INVENTORY_EU.orders")
    assert not pattern.fullmatch("sales.customers")


def test_rule_path_escapes_regex_characters():
    pattern, _ = parse_rule_path("in+v.c(1).f")
    assert pattern.fullmatch("in+v.c(1)")
    assert not pattern.fullmatch("innv.c1")


def test_rules_apply_only_to_matching_collections():
    rule_set = rules(**{"field.exclude.list": "inventory.customers.ssn"})
    assert rule_set.for_namespace(Namespace("inventory", "orders")).is_identity
    assert not rule_set.for_namespace(CUSTOMERS).is_identity
    assert rule_set.for_namespace(CUSTOMERS) is rule_set.for_namespace(CUSTOMERS)


# --- documents --------------------------------------------------------------------------------


def test_no_rules_return_the_same_object():
    assert transform(DOCUMENT) is DOCUMENT
    assert transform(None, **{"field.exclude.list": "inventory.customers.ssn"}) is None


def test_exclude_top_level_and_nested_fields():
    result = transform(DOCUMENT, **{"field.exclude.list": "inventory.customers.ssn,inventory.customers.address.geo"})
    assert "ssn" not in result
    assert result["address"] == {"street": "Main St", "city": "Springfield"}


def test_input_documents_are_never_modified():
    before = repr(DOCUMENT)
    transform(
        DOCUMENT,
        **{
            "field.exclude.list": "inventory.customers.ssn,inventory.customers.orders.card",
            "field.renames": "inventory.customers.name:full_name",
            "field.mask.redact": "inventory.customers.address.city",
        },
    )
    assert repr(DOCUMENT) == before


def test_exclude_inside_arrays_of_documents():
    result = transform(DOCUMENT, **{"field.exclude.list": "inventory.customers.orders.card"})
    assert result["orders"] == [{"sku": "A", "price": 5}, {"sku": "B", "price": 7}, "not a document"]


def test_exclude_inside_arrays_of_arrays():
    result = transform(DOCUMENT, **{"field.exclude.list": "inventory.customers.matrix.secret"})
    assert result["matrix"] == [[{}], [{}]]


def test_missing_fields_are_ignored():
    result = transform(DOCUMENT, **{"field.exclude.list": "inventory.customers.nope.deeper,inventory.customers.name.x"})
    assert result == DOCUMENT


def test_field_wildcard_segment():
    result = transform(DOCUMENT, **{"field.exclude.list": "inventory.customers.*.lat"})
    assert result["address"]["geo"] == {"lat": 1.0, "lon": 2.0}  # '*' is one level: address.*.lat is not geo.lat
    result = transform(DOCUMENT, **{"field.exclude.list": "inventory.customers.address.*.lat"})
    assert result["address"]["geo"] == {"lon": 2.0}
    result = transform(DOCUMENT, **{"field.exclude.list": "inventory.customers.address.*"})
    assert result["address"] == {}


def test_namespace_wildcards():
    result = transform(DOCUMENT, Namespace("sales", "people"), **{"field.exclude.list": "*.*.ssn"})
    assert "ssn" not in result


def test_rename_keeps_the_field_position():
    result = transform(DOCUMENT, **{"field.renames": "inventory.customers.name:full_name"})
    assert list(result) == ["_id", "full_name", "ssn", "address", "orders", "matrix"]
    assert result["full_name"] == "Anne"


def test_rename_nested_and_in_arrays():
    result = transform(
        DOCUMENT,
        **{"field.renames": "inventory.customers.address.city:town,inventory.customers.orders.sku:code"},
    )
    assert result["address"] == {"street": "Main St", "town": "Springfield", "geo": {"lat": 1.0, "lon": 2.0}}
    assert result["orders"][0] == {"code": "A", "price": 5, "card": "4111"}


def test_rename_of_parent_and_child_both_apply():
    result = transform(
        DOCUMENT,
        **{"field.renames": "inventory.customers.address:location,inventory.customers.address.city:town"},
    )
    assert result["location"]["town"] == "Springfield"


def test_rename_onto_an_existing_field_is_refused():
    with pytest.raises(FieldRenameConflict, match="already has 'ssn'"):
        transform(DOCUMENT, **{"field.renames": "inventory.customers.name:ssn"})


def test_rename_to_the_same_name_is_a_no_op():
    assert transform(DOCUMENT, **{"field.renames": "inventory.customers.name:name"}) == DOCUMENT


def test_exclude_wins_over_rename_of_the_same_field():
    result = transform(
        DOCUMENT,
        **{"field.exclude.list": "inventory.customers.name", "field.renames": "inventory.customers.name:full_name"},
    )
    assert "name" not in result and "full_name" not in result


def test_mask_applies_before_rename():
    result = transform(
        DOCUMENT,
        **{
            "field.renames": "inventory.customers.ssn:tax_id",
            "field.mask.hash.SHA-256.with.salt.pepper": "inventory.customers.ssn",
        },
    )
    assert result["tax_id"] == sha256("pepper", "123-45-6789")


def test_hash_mask_is_debeziums_salted_digest():
    result = transform(DOCUMENT, **{"field.mask.hash.SHA-256.with.salt.CzQMA0cB5K": "inventory.customers.name"})
    assert result["name"] == hashlib.sha256(b"CzQMA0cB5KAnne").hexdigest()


@pytest.mark.parametrize(
    ("algorithm", "hashlib_name"), [("SHA-512", "sha512"), ("MD5", "md5"), ("SHA3-256", "sha3_256"), ("SHA-1", "sha1")]
)
def test_hash_algorithms(algorithm, hashlib_name):
    result = transform(DOCUMENT, **{f"field.mask.hash.{algorithm}.with.salt.s": "inventory.customers.name"})
    assert result["name"] == hashlib.new(hashlib_name, b"sAnne").hexdigest()


def test_hash_mask_of_non_string_values_hashes_their_json():
    masker = hash_masker("sha256", "s")
    assert masker(Int64(42)) == hashlib.sha256(b"s42").hexdigest()
    oid = ObjectId("596e275826f08b2730779e1f")
    assert masker(oid) == hashlib.sha256(b's{"$oid": "596e275826f08b2730779e1f"}').hexdigest()
    assert masker({"a": 1}) == hashlib.sha256(b's{"a": 1}').hexdigest()
    assert masker(Binary(b"\x00\x01", 0)) == hashlib.sha256(b"s\x00\x01").hexdigest()
    assert masker(None) is None


def test_hash_of_a_subdocument_and_in_arrays():
    result = transform(DOCUMENT, **{"field.mask.hash.SHA-256.with.salt.s": "inventory.customers.orders.card"})
    assert result["orders"][0]["card"] == sha256("s", "4111")
    assert result["orders"][1]["card"] == sha256("s", "5500")


def test_redact():
    result = transform(DOCUMENT, **{"field.mask.redact": "inventory.customers.ssn,inventory.customers.address"})
    assert result["ssn"] == "********"
    assert result["address"] == "********"


def test_redact_replacement_and_null_values():
    result = transform(
        {"_id": 1, "ssn": None, "pin": 1234},
        **{
            "field.mask.redact": "inventory.customers.ssn,inventory.customers.pin",
            "field.mask.redact.replacement": "X",
        },
    )
    assert result == {"_id": 1, "ssn": None, "pin": "X"}
    assert redact_masker("#")(0) == "#"


# --- update descriptions ----------------------------------------------------------------------

UPDATE = UpdateDescription(
    updated_fields={
        "name": "Anne Marie",
        "ssn": "999",
        "address.city": "Shelbyville",
        "address": {"street": "Elm", "city": "Ogdenville", "geo": {"lat": 3}},
        "orders.1.card": "6011",
        "orders.0": {"sku": "C", "card": "3400"},
        "orders": [{"sku": "D", "card": "3700"}],
        "tags.2": "x",
    },
    removed_fields=("ssn", "address.geo.lat", "orders.0.card", "nickname"),
    truncated_arrays=(TruncatedArray("orders", 1), TruncatedArray("address.history", 3)),
)


def test_update_description_without_rules_is_unchanged():
    assert describe(UPDATE) is UPDATE
    assert describe(None, **{"field.exclude.list": "inventory.customers.ssn"}) is None


def test_exclude_in_update_description():
    result = describe(
        UPDATE,
        **{"field.exclude.list": "inventory.customers.ssn,inventory.customers.orders.card,inventory.customers.address"},
    )
    assert result.updated_fields == {
        "name": "Anne Marie",
        "orders.0": {"sku": "C"},
        "orders": [{"sku": "D"}],
        "tags.2": "x",
    }
    assert "ssn" not in result.updated_fields
    assert "orders.1.card" not in result.updated_fields
    assert result.updated_fields["orders.0"] == {"sku": "C"}
    assert result.updated_fields["orders"] == [{"sku": "D"}]
    assert "address" not in result.updated_fields and "address.city" not in result.updated_fields
    assert result.removed_fields == ("nickname",)
    assert result.truncated_arrays == (TruncatedArray("orders", 1),)


def test_rename_in_update_description():
    result = describe(
        UPDATE,
        **{"field.renames": "inventory.customers.address.city:town,inventory.customers.orders.card:payment"},
    )
    assert result.updated_fields["address.town"] == "Shelbyville"
    assert "address.city" not in result.updated_fields
    assert result.updated_fields["address"] == {"street": "Elm", "town": "Ogdenville", "geo": {"lat": 3}}
    assert result.updated_fields["orders.1.payment"] == "6011"
    assert result.updated_fields["orders.0"] == {"sku": "C", "payment": "3400"}
    assert result.updated_fields["orders"] == [{"sku": "D", "payment": "3700"}]
    assert result.removed_fields == ("ssn", "address.geo.lat", "orders.0.payment", "nickname")


def test_rename_of_a_parent_renames_paths_below_it():
    result = describe(UPDATE, **{"field.renames": "inventory.customers.address:location"})
    assert result.updated_fields["location.city"] == "Shelbyville"
    assert result.updated_fields["location"]["city"] == "Ogdenville"
    assert "address.geo.lat" not in result.removed_fields
    assert "location.geo.lat" in result.removed_fields
    assert TruncatedArray("location.history", 3) in result.truncated_arrays


def test_mask_in_update_description():
    result = describe(
        UPDATE,
        **{
            "field.mask.hash.SHA-256.with.salt.s": "inventory.customers.orders.card",
            "field.mask.redact": "inventory.customers.ssn",
        },
    )
    assert result.updated_fields["ssn"] == "********"
    assert result.updated_fields["orders.1.card"] == sha256("s", "6011")
    assert result.updated_fields["orders.0"]["card"] == sha256("s", "3400")
    assert result.updated_fields["orders"][0]["card"] == sha256("s", "3700")
    assert "orders.0.card" in result.removed_fields  # masks change values, never paths


def test_value_under_a_masked_field_is_masked():
    result = describe(
        UpdateDescription({"address.city": "X", "address.geo.lat": 5}),
        **{"field.mask.redact": "inventory.customers.address"},
    )
    assert result.updated_fields == {"address.city": "********", "address.geo.lat": "********"}


def test_removed_parent_of_an_excluded_field_is_kept():
    result = describe(
        UpdateDescription({}, ("address", "address.geo", "address.geo.lat")),
        **{"field.exclude.list": "inventory.customers.address.geo"},
    )
    assert result.removed_fields == ("address",)


def test_wildcard_segments_in_update_description():
    result = describe(
        UpdateDescription({"address.geo.lat": 1, "address.zip": 2}, ("billing.geo.lat",)),
        **{"field.exclude.list": "inventory.customers.*.geo"},
    )
    assert result.updated_fields == {"address.zip": 2}
    assert result.removed_fields == ()


def test_rename_conflict_in_update_description():
    with pytest.raises(FieldRenameConflict):
        describe(
            UpdateDescription({"name": 1, "full_name": 2}), **{"field.renames": "inventory.customers.name:full_name"}
        )


def test_update_values_are_not_shared_with_the_input():
    original = UpdateDescription({"address": {"city": "X", "geo": {"lat": 1}}})
    describe(original, **{"field.exclude.list": "inventory.customers.address.geo"})
    assert original.updated_fields == {"address": {"city": "X", "geo": {"lat": 1}}}
