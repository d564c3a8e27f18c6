"""The JSON request parser of /api/ and /connect/: DRF's, plus two limits that keep malformed bodies a 400 instead of
a 500 — nesting deeper than MAX_JSON_DEPTH (Python's parser would otherwise hit its recursion limit), and strings
holding a lone UTF-16 surrogate (`"\\ud800"`: valid JSON, but not text that can be stored or echoed back)."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# No request of the API nests anywhere near this deep; a body that does is refused before it is walked further.
MAX_JSON_DEPTH = 64


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(too_deep()) from None
        problem = shape_problem(data)
        if problem:
            raise ParseError(problem)
        return data


def too_deep() -> str:
    return f"JSON parse error - the body is nested more than {MAX_JSON_DEPTH} levels deep."


def shape_problem(data) -> str | None:
    """Why parsed JSON is refused (too deep, or a string that is not valid Unicode), or None."""
    pending = [(data, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, dict):
            children = [*value.keys(), *value.values()]
        elif isinstance(value, list):
            children = value
        else:
            if isinstance(value, str) and not _encodable(value):
                return ("JSON parse error - a string holds a lone UTF-16 surrogate (such as \\ud800), which is not "
                        "valid text; send UTF-8 text.")
            continue
        if depth > MAX_JSON_DEPTH:
            return too_deep()
        pending.extend((child, depth + 1) for child in children)
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
