"""Validation of a connector's property map: the engine's validator plus the platform's own rules.

The engine (`connectors.config.validate`) is the authority on every property; the platform adds only what its
storage needs (the name is part of URLs, so a slug). Problems name the property; `api_errors` groups them by the
field of the REST API that carries the property.
"""

from __future__ import annotations

import re
from typing import Any

from connectors.config import Problem, validate
from web.connectors import properties as props

_SLUG = re.compile(r"^[-A-Za-z0-9_]+$")
MAX_NAME_LENGTH = 100

# Property -> the API field that carries it; anything else travels inside `config`.
API_FIELDS = {
    props.NAME: "name",
    props.TOPIC_PREFIX: "topic_prefix",
    props.TOPIC_PREFIX_ALIAS: "topic_prefix",
    props.CONNECTION_STRING: "connection_string",
    props.PASSWORD: "password",
}


def check(flat: Any) -> list[Problem]:
    """Every problem of this property map, engine and platform rules together."""
    problems = list(validate(flat))
    if isinstance(flat, dict):
        name = flat.get(props.NAME)
        if isinstance(name, str) and name.strip() and not any(p.property == props.NAME for p in problems):
            if not _SLUG.fullmatch(name.strip()) or len(name.strip()) > MAX_NAME_LENGTH:
                problems.append(
                    Problem(props.NAME, f"name {name.strip()!r} must be 1-{MAX_NAME_LENGTH} characters among "
                                        "A-Z a-z 0-9 - _ (it is part of URLs)")
                )
    return problems


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
