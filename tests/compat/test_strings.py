"""Strings as Kafka Connect's JsonConverter (Jackson's UTF-8 writer) writes them: characters beyond the Basic
Multilingual Plane as two escaped UTF-16 units, other non-ASCII raw, control characters as upper-case \\u00XX."""

from __future__ import annotations

from connectors.events.json_converter import string_json


def test_characters_beyond_the_bmp_are_escaped_surrogate_pairs():
    assert string_json("a😀b") == '"a\\uD83D\\uDE00b"'
    assert string_json("\U0010ffff") == '"\\uDBFF\\uDFFF"'


def test_other_text_is_as_before():
    assert string_json("é\u2028\x01\\u0001") == '"é\u2028\\u0001\\\\u0001"'
