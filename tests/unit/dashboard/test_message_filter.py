"""Filter expressions of the topic browser: parsed into clauses (never evaluated as code), matched over a message's
decoded key, value and headers, and refused with a sentence saying what is wrong."""

from __future__ import annotations

import pytest

from web.dashboard.message_filter import FilterError, parse

KEY = {"id": 1004}
VALUE = {"payload": {"op": "u", "after": {"status": "paid", "total": 12.5, "tags": ["gift", "rush"],
                                          "note": "Leave at the DOOR", "active": True, "gone": None}}}
HEADERS = [("trace", "t-1"), ("trace", "t-2"), ("origin", "api")]


def matches(text: str) -> bool:
    return parse(text).matches(KEY, VALUE, HEADERS)


@pytest.mark.parametrize("text", [
    'value.payload.after.status == "paid"', "value.payload.after.status == paid", "key.id == 1004",
    'key.id == "1004"', "key.id>1000", "key.id >= 1004", "value.payload.after.total < 13",
    "value.payload.after.tags.1 == rush", "value.payload.after.note contains door",
    "value.payload.after.tags contains GIFT",
    "value.payload.after.active == true", "value.payload.after.gone == null", "headers.trace == t-1",
    "headers.origin != web", 'value.payload.op == "u" and key.id == 1004', "value.payload.after.status > p",
    'value.payload.after.note contains "at the"',
])
def test_matching(text):
    assert matches(text)


@pytest.mark.parametrize("text", [
    'value.payload.after.status == "due"', "key.id != 1004", "key.id < 1000", "value.payload.after.missing == 1",
    "value.payload.after.missing != 1", "value.payload.after.tags.5 == rush", "headers.trace == t-2",
    "value.payload.after.active == 1", "value.payload.after.status > 5", 'value.payload.op == "u" and key.id == 7',
    "key.id.deeper == 1",
])
def test_not_matching(text):
    assert not matches(text)


def test_plain_text_values_and_no_key():
    assert parse("value contains hello").matches(None, "Hello world", [])
    assert not parse("key == x").matches(None, "x", [])


@pytest.mark.parametrize(("text", "says"), [
    ("", "empty"), ("status == paid", "starts with key, value or headers"), ("value.a paid", "operator"),
    ("value.a ==", "path, an operator and a value"), ("value.a == 1 or key == 2", "Expected “and”"),
    ("headers == x", "headers.<name>"), ("value..a == 1", "empty part"), ('value.a == "x', "Cannot read"),
    ("value.a == ==", "comes a value"), ("__import__('os').system('x') == 1", "starts with key, value or headers"),
    ("x" * 501, "at most 500"), (" and ".join(["key == 1"] * 11), "at most 10"),
])
def test_errors_are_sentences(text, says):
    with pytest.raises(FilterError) as error:
        parse(text)
    assert says in str(error.value)


def test_the_live_tail_takes_the_same_filter():
    from web.dashboard.topic_tail import tail_query

    query = tail_query("f=" + "key.id%20%3E%201000")
    assert query.filter is not None and query.filter.matches(KEY, VALUE, HEADERS)
    with pytest.raises(ValueError, match="starts with key, value or headers"):
        tail_query("f=status%20%3D%3D%20paid")
