"""Kafka Connect's ConfigInfos (the body of `PUT /connector-plugins/{plugin}/config/validate`): every property of
the connector with its ConfigKeyInfo definition
(connectors.mongodb.config_info) and its ConfigValueInfo (the value given,
else the default; secrets masked; the problems found), so Connect form generators can build a form."""

from __future__ import annotations

from typing import Any

from connectors.config.types import Problem
from connectors.mongodb.config_info import GROUPS, PROPERTIES, info_of
from connectors.sources import MONGODB
from web.connectors import properties as props
from web.connectors.connect.shapes import as_string

OTHER = "Other"  # given keys that are not properties of the connector (their errors say so)
HIDDEN = "[hidden]"  # how Connect shows a PASSWORD value


def _definition_of_unknown(name: str, order: int) -> dict[str, Any]:
    return {"name": name, "type": "STRING", "required": False, "default_value": None, "importance": "LOW",
            "documentation": "Not a property of this connector.", "group": OTHER, "width": "MEDIUM",
            "display_name": name, "dependents": [], "order": order}


def _string(value: Any) -> str | None:
    return None if value is None else as_string(value)


def _value(name: str, value: Any, errors: list[str], recommended=()) -> dict[str, Any]:
    return {"name": name, "value": value, "recommended_values": list(recommended), "errors": errors,
            "visible": True}


def config_infos(plugin: str, config: dict[str, Any], problems: list[Problem]) -> dict[str, Any]:
    errors: dict[str, list[str]] = {}
    for problem in problems:
        errors.setdefault(problem.property, []).append(problem.message)
    given = props.mask(config)  # hash mask names carry salts: the masked names are listed
    configs = []
    # the property catalogue (connectors.mongodb.config_info) is MongoDB's; other sources list what was given
    catalogue = PROPERTIES if props.source_of(config) == MONGODB else {}
    for name, info in catalogue.items():
        if name in given:
            value = HIDDEN if info.type == "PASSWORD" and given[name] else _string(given[name])
        else:
            value = info.default_value
        configs.append({"definition": info.definition(),
                        "value": _value(name, value, errors.get(name, []), info.recommended_values)})
    extra = [name for name in dict.fromkeys([*given, *errors]) if name not in catalogue]
    next_order = {group: sum(1 for info in PROPERTIES.values() if info.group == group) + 1 for group in GROUPS}
    for name in extra:
        info = info_of(name) if catalogue else None
        group = info.group if info is not None else OTHER
        order = next_order.get(group, 1)
        next_order[group] = order + 1
        definition = {**info.definition(name), "order": order} if info is not None else \
            _definition_of_unknown(name, order)
        value = _string(given[name]) if name in given else None
        configs.append({"definition": definition, "value": _value(name, value, errors.get(name, []))})
    groups = list(GROUPS)
    if any(entry["definition"]["group"] == OTHER for entry in configs):
        groups.append(OTHER)
    return {"name": config.get("connector.class", plugin), "error_count": len(problems), "groups": groups,
            "configs": configs}
