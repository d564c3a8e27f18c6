"""Validation of a connector's property map: the engine's validator plus the platform's own rules.

The engine (`connectors.sources.validate`, by the connector.class) is the authority on every property; the
platform adds only what its storage needs (the name is part of URLs, so a slug). Problems name the property;
`api_errors` groups them by the field of the REST API that carries the property.
"""

from __future__ import annotations

import re
from typing import Any

from connectors.config.types import Problem
from connectors.config.values import split_list
from connectors.sources import validate
from web.connectors import properties as props

_SLUG = re.compile(r"^[-A-Za-z0-9_]+$")
MAX_NAME_LENGTH = 100
# The one wording of the name rule: the form's help, the clone form and every message about a bad name.
NAME_RULE = f"1-{MAX_NAME_LENGTH} characters among A-Z a-z 0-9 - _ (the name is part of URLs and cannot change)"

# Property -> the API field that carries it; anything else travels inside `config`.
API_FIELDS = {
    props.NAME: "name",
    props.TOPIC_PREFIX: "topic_prefix",
    props.TOPIC_PREFIX_ALIAS: "topic_prefix",
    props.CONNECTION_STRING: "connection_string",
    props.PASSWORD: "password",
    props.DATABASE_PASSWORD: "password",
}


def check(flat: Any) -> list[Problem]:
    """Every problem of this property map, engine and platform rules together."""
    problems = list(validate(flat))
    if isinstance(flat, dict):
        problems = [as_typed(problem, flat) for problem in problems]
        name = flat.get(props.NAME)
        if isinstance(name, str) and name.strip() and not valid_name(name.strip()):
            # the platform's rule is stricter than the engine's (no dots): one message, in its words
            problems = [p for p in problems if p.property != props.NAME]
            problems.insert(0, Problem(props.NAME, name_problem(name.strip())))
    return problems


def as_typed(problem: Problem, flat: dict[str, Any]) -> Problem:
    """The engine quotes a value with Python's repr, which doubles backslashes ('inventory\\\\.(orders'): quote
    the items of the property as the user typed them instead ("inventory\\.(orders")."""
    raw = flat.get(problem.property)
    try:
        items = [raw] if isinstance(raw, str) else []
        items += [str(item) for item in split_list(raw)] if raw is not None else []
    except ValueError:
        pass
    message = problem.message
    for item in sorted(set(items), key=len, reverse=True):
        if "\\" in item or "'" in item:
            message = message.replace(repr(item), f'"{item}"')
    return problem if message == problem.message else Problem(problem.property, message)


def valid_name(name: str) -> bool:
    return bool(_SLUG.fullmatch(name)) and len(name) <= MAX_NAME_LENGTH


def name_problem(name: str) -> str:
    return f"\"{name}\" is not a valid name: {NAME_RULE}"


def api_field(prop: str) -> str:
    return API_FIELDS.get(prop, "config")


def api_errors(problems: list[Problem]) -> dict[str, Any]:
    """DRF-style errors: {"name": [...], "config": {"snapshot.mode": [...]}, ...}."""
    errors: dict[str, Any] = {}
    for problem in problems:
        field = api_field(problem.property)
        if field == "config":
            errors.setdefault("config", {}).setdefault(problem.property or "non_field_errors", []).append(
                problem.message
            )
        else:
            errors.setdefault(field, []).append(problem.message)
    return errors


def problem_list(problems: list[Problem]) -> list[dict[str, str]]:
    return [{"property": p.property, "field": api_field(p.property), "message": p.message} for p in problems]
