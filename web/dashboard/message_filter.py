"""Filter expressions of the topic browser, parsed into a small tree and evaluated over a message's decoded key, value
and headers; nothing the user types is ever executed.

    expression := clause ("and" clause)*
    clause     := path operator literal
    path       := ("key" | "value") ("." name-or-index)*  |  "headers." header-name
    operator   := "==" | "!=" | ">" | ">=" | "<" | "<=" | "contains"
    literal    := a JSON string ("paid"), number, true, false or null, or a bare word (taken as a string)

`value.after.status == "paid" and key.id > 1000`. A path that does not exist in a message makes its clause false
(`!=` included). `contains` is a case-insensitive substring test on the field's text (JSON for objects and arrays);
`==`/`!=` compare JSON values, a number equal to a string of it; `>`… compare two numbers or two strings.
"""

from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass
from typing import Any

MAX_LENGTH = 500
MAX_CLAUSES = 10
ROOTS = ("key", "value", "headers")
TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<op>==|!=|>=|<=|>|<)|(?P<word>[^\s"=!<>]+))')
ORDER = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
MISSING = object()


class FilterError(ValueError):
    """The expression cannot be parsed; the text says where and how to write it."""


@dataclass(frozen=True)
class Clause:
    root: str
    path: tuple[str, ...]
    op: str
    literal: Any

    def matches(self, fields: dict[str, Any]) -> bool:
        found = _resolve(fields[self.root], self.path)
        if found is MISSING:
            return False
        if self.op == "contains":
            return str(self.literal).casefold() in _text(found).casefold()
        if self.op in ("==", "!="):
            return _equal(found, self.literal) == (self.op == "==")
        if _number(found) and _number(self.literal) or isinstance(found, str) and isinstance(self.literal, str):
            return ORDER[self.op](found, self.literal)
        return False


@dataclass(frozen=True)
class Filter:
    text: str
    clauses: tuple[Clause, ...]

    def matches(self, key: Any, value: Any, headers: list[tuple[str, str]]) -> bool:
        fields = {"key": key, "value": value, "headers": dict(reversed(headers))}  # the first header of a name
        return all(clause.matches(fields) for clause in self.clauses)


def parse(text: str) -> Filter:
    text = text.strip()
    if len(text) > MAX_LENGTH:
        raise FilterError(f"The filter is {len(text)} characters long; write at most {MAX_LENGTH}.")
    tokens = _tokens(text)
    clauses = []
    while tokens:
        if clauses:
            if tokens[0] != ("word", "and"):
                raise FilterError(f"Expected “and” between conditions, found “{tokens[0][1]}”.")
            tokens.pop(0)
        if len(tokens) < 3:
            raise FilterError("Each condition is a path, an operator and a value, e.g. value.after.status == \"paid\".")
        clauses.append(_clause(tokens.pop(0), tokens.pop(0), tokens.pop(0)))
    if not clauses:
        raise FilterError("The filter is empty.")
    if len(clauses) > MAX_CLAUSES:
        raise FilterError(f"The filter has {len(clauses)} conditions; use at most {MAX_CLAUSES}.")
    return Filter(text, tuple(clauses))


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise FilterError(f"Cannot read the filter from “{text[position:position + 20].strip()}” on.")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return [("op", "contains") if token == ("word", "contains") else token for token in tokens]


def _clause(path: tuple[str, str], op: tuple[str, str], literal: tuple[str, str]) -> Clause:
    if path[0] != "word":
        raise FilterError(f"A condition starts with a path such as value.after.id, not {path[1]}.")
    root, *rest = path[1].split(".")
    if root not in ROOTS:
        raise FilterError(f"A path starts with key, value or headers, not “{root}”.")
    if root == "headers" and len(rest) != 1:
        raise FilterError("A header is named as headers.<name>, e.g. headers.trace.")
    if "" in rest:
        raise FilterError(f"The path “{path[1]}” has an empty part.")
    if op[0] != "op":
        raise FilterError(f"After {path[1]} comes an operator (==, !=, >, >=, <, <=, contains), not “{op[1]}”.")
    if literal[0] == "op":
        raise FilterError(f"After {path[1]} {op[1]} comes a value, not “{literal[1]}”.")
    return Clause(root, tuple(rest), op[1], _literal(literal))


def _literal(token: tuple[str, str]) -> Any:
    kind, text = token
    if kind == "string":
        try:
            return json.loads(text)
        except ValueError:
            raise FilterError(f"{text} is not a valid quoted string.") from None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _resolve(found: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if isinstance(found, dict) and part in found:
            found = found[part]
        elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
            found = found[int(part)]
        else:
            return MISSING
    return found


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _equal(found: Any, literal: Any) -> bool:
    if _number(found) and isinstance(literal, str) or isinstance(found, str) and _number(literal):
        return _text(found) == _text(literal)
    return found == literal and isinstance(found, bool) == isinstance(literal, bool)
