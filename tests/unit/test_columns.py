"""connectors/core/columns.py: the column rules shared by the PostgreSQL and MySQL/MariaDB sources — parsing of
message.key.columns and of the column.mask/truncate property names, whole-name case-insensitive matching, and the
key columns a table gets."""

from __future__ import annotations

import pytest

from connectors.core.columns import ColumnRules, length_rule, parse_key_columns
from connectors.core.errors import ConnectorError


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
