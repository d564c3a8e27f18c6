"""connectors/core/columns.py: the column rules shared by the PostgreSQL and MySQL/MariaDB sources — parsing of
message.key.columns and of the column.mask/truncate property names, whole-name case-insensitive matching, the key
columns a table gets, and the schema parameters (`masked`, `truncateLength`) of the rule a column gets."""

from __future__ import annotations

import pytest

from connectors import ConnectorError
from connectors.core.columns import ColumnHash, ColumnRules, length_rule, parse_key_columns
from connectors.events import schema as s
from connectors.events.json_converter import schema_json
from connectors.secrets import Secret


def test_message_key_columns_parse_into_table_regexes_and_column_lists():
    assert parse_key_columns(r" public\.log : line , at ; inventory\.t.*:id;") == {
        r"public\.log": ("line", "at"), r"inventory\.t.*": ("id",)}
    assert parse_key_columns("") == {}


@pytest.mark.parametrize("raw", ["public.t", ":a", "public.t:", "public.t: , ", "(:a", "t:a,("])
def test_malformed_message_key_columns_are_refused(raw):
    with pytest.raises(ValueError, match="<table>:<column>|regular expression"):
        parse_key_columns(raw)


def test_length_rules_come_from_the_property_name():
    assert length_rule("column.mask.with.12.chars") == ("mask", 12)
    assert length_rule("column.truncate.to.0.chars") == ("truncate", 0)
    assert length_rule("column.mask.with.x.chars") is None
    assert length_rule("column.mask.hash.SHA-256.with.salt.s") is None
    assert length_rule("column.include.list") is None


def test_column_filters_match_the_whole_name_case_insensitively():
    exclude = ColumnRules(exclude=(r"public\.people\.secret",))
    assert not exclude.captures("public.people.secret") and not exclude.captures("PUBLIC.People.SECRET")
    assert exclude.captures("public.people.secret2") and exclude.captures("xpublic.people.secret")
    include = ColumnRules(include=(r"public\.people\.(id|name)",))
    assert include.captures("public.people.id") and include.captures("public.PEOPLE.Name")
    assert not include.captures("public.people.ident") and not include.captures("public.people.email")
    assert ColumnRules().captures("any.thing.at_all")


def test_masks_and_truncation_convert_strings():
    rules = ColumnRules(masks={r"s\.t\.secret": 3}, truncates={r"s\.t\..*": 4})
    masked = rules.string_converter("s.t.SECRET", str.upper)
    assert masked("hidden") == "***" and masked(None) is None
    truncated = rules.string_converter("s.t.bio", str.upper)
    assert truncated("abcdef") == "ABCD" and truncated("ab") == "AB"
    assert rules.string_converter("s.u.bio", str.upper)("abcdef") == "ABCDEF"
    assert rules.mask_length("s.t.secret") == 3 and rules.mask_length("s.t.bio") is None
    # the last matching property wins when two give a column different lengths
    assert ColumnRules(truncates={r"s\.t\..*": 4, r"s\.t\.bio": 2}).truncate_length("s.t.bio") == 2


def test_key_columns_of_a_table():
    rules = ColumnRules(key_columns={r"public\.log": ("Line", "at"), r"public\.p.*": ("code",)})
    assert rules.key_of("public.log", ["at", "line", "extra"]) == ("line", "at")  # the property's order
    assert rules.key_of("PUBLIC.people", ["id", "code"]) == ("code",)
    assert rules.key_of("public.other", ["id"]) is None
    assert rules.key_of("public.logs", ["line"]) is None  # the table regex matches the whole name
    assert ColumnRules(key_columns={"t": ("b", "a.*")}).key_of("t", ["ax", "b", "a", "c"]) == ("b", "ax", "a")
    assert ColumnRules(key_columns={"t": ("a.b",)}).key_of("t", ["axb", "a.b"]) == ("a.b",)  # the exact name first
    with pytest.raises(ConnectorError, match="names code for public.people, which has no such captured column"):
        rules.key_of("public.people", ["id"])


def test_the_rule_applied_gives_the_schema_parameters_debezium_adds():
    """Debezium's MaskStrings adds `masked`, its TruncateStrings `truncateLength` only when a value can be cut; here
    the rule our values get (mask > hash > truncation) gives them."""
    salted = ColumnHash("SHA-256", Secret("s"), 2, (r"s\.t\.(h|both|n)",))
    rules = ColumnRules(masks={r"s\.t\.(m|both)": 2}, truncates={r"s\.t\..*": 4}, hashes=(salted,))
    masked = rules.string_rule("s.t.m", str, hashable=True, length=10)
    assert (masked.kind, masked.parameters, masked.convert("x")) == ("mask", (("masked", "true"),), "**")
    assert rules.string_rule("s.t.both", str, hashable=True).parameters == (("masked", "true"),)
    hashed = rules.string_rule("s.t.h", str, hashable=True, length=10)
    assert (hashed.kind, hashed.parameters, len(hashed.convert("x"))) == ("hash", (("masked", "true"),), 10)
    # a hash rule does not change a column that is not a character one: the truncation does, and only it marks
    assert rules.string_rule("s.t.n", str, hashable=False).parameters == (("truncateLength", "4"),)
    # a truncation marks the schema when the declared length is unknown or longer than N, not when it cannot cut
    assert rules.string_rule("s.t.text", str).parameters == (("truncateLength", "4"),)
    assert rules.string_rule("s.t.v", str, length=5).parameters == (("truncateLength", "4"),)
    short = rules.string_rule("s.t.v", str, length=4)
    assert (short.kind, short.parameters, short.convert("abcdef")) == ("truncate", (), "abcd")
    assert rules.string_rule("s.t.x", str, truncatable=False) is None
    assert rules.string_rule("s.u.x", str, hashable=True) is None


def test_schema_parameters_are_added_after_the_schemas_own():
    """Kafka Connect's SchemaBuilder.parameter puts into a LinkedHashMap: the mapper's parameter after those the type
    gave; a name already there keeps its place."""
    enum = s.primitive("string", name="io.debezium.data.Enum", version=1, parameters={"allowed": "a,b"})
    marked = enum.with_parameters((("truncateLength", "4"),))
    assert marked.parameters == (("allowed", "a,b"), ("truncateLength", "4")) and marked.name == enum.name
    assert schema_json(marked).endswith('"parameters":{"allowed":"a,b","truncateLength":"4"}}')
    again = marked.with_parameters((("allowed", "c"), ("masked", "true")))
    assert again.parameters == (("allowed", "c"), ("truncateLength", "4"), ("masked", "true"))
    plain = s.string(optional=True)
    assert plain.with_parameters(()) is plain
    assert schema_json(plain.with_parameters((("masked", "true"),))) == (
        '{"type":"string","optional":true,"parameters":{"masked":"true"}}')
