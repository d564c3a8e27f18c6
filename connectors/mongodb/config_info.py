"""Kafka Connect ConfigDef metadata of every connector property (type, default, importance, documentation, group,
order in group, width, display name, dependents, recommended values), as `config/validate` answers it in
ConfigKeyInfo, so that form generators written for Connect build a form for this connector.

Names, defaults and documentation come from connectors.config (the one definition of the properties); what
Connect adds on top (group, importance, width, dependents) is declared here.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from connectors.config.types import HashMask
from connectors.mongodb.config import ConnectorConfig, property_docs
from connectors.secrets import Secret

# Connect's Common group first, as a Connect worker lists it; then the connector's groups in declaration order.
COMMON = "Common"
COMMON_PROPERTIES = ("name", "connector.class", "tasks.max")
# The first property of each group in connectors.config's declaration order (the dataclass's sections).
GROUP_STARTS = {
    "topic.prefix": "Connection",
    "database.include.list": "Filters",
    "signal.data.collection": "Capture",
    "event.format": "Events",
    "max.batch.size": "Kafka",
    "snapshot.mode": "Snapshot",
    "field.mask.hash.<algorithm>.with.salt.<salt>": "Filters",
    "connector.class": COMMON,
}
HIGH = frozenset({
    "name", "connector.class", "topic.prefix", "mongodb.connection.string", "mongodb.hosts", "mongodb.user",
    "mongodb.password", "database.include.list", "collection.include.list", "snapshot.mode", "capture.mode",
})
LOW_WORDS = ("backoff", "poll", "await", "queue", "batch", "fetch", "threads", "chunk", "timeout",
             "heartbeat.frequency", "attempts", "tasks.max", "replication.factor", "partitions")
DEPENDENTS = {
    "mongodb.user": ("mongodb.password", "mongodb.authsource"),
    "mongodb.ssl.enabled": ("mongodb.ssl.invalid.hostname.allowed",),
    "field.mask.redact": ("field.mask.redact.replacement",),
    "signal.data.collection": ("incremental.snapshot.chunk.size",),
    "capture.mode": ("capture.mode.full.update.type",),
    "capture.scope": ("capture.target",),
    "cursor.pipeline": ("cursor.pipeline.order",),
    "event.format": ("flattened.delete.tombstone.handling.mode", "flattened.add.fields",
                     "flattened.add.fields.prefix"),
    "schemas.enable": ("key.converter.schemas.enable", "value.converter.schemas.enable"),
    "provide.transaction.metadata": ("topic.transaction",),
    "heartbeat.interval.ms": ("heartbeat.topics.prefix",),
    "message.too.large.policy": ("errors.topic",),
    "topic.creation.enable": ("topic.creation.default.partitions", "topic.creation.default.replication.factor",
                              "topic.creation.default.cleanup.policy"),
    "snapshot.mode": ("snapshot.include.collection.list", "snapshot.collection.filter.overrides",
                      "snapshot.delay.ms", "snapshot.fetch.size", "snapshot.max.threads", "snapshot.chunk.size",
                      "snapshot.chunk.max.bytes"),
    "snapshot.collection.filter.overrides": ("snapshot.collection.filter.overrides.<database>.<collection>",),
    "startup.mode": ("startup.timestamp",),
}
TYPE_OVERRIDES = {"connector.class": "CLASS", "startup.timestamp": "STRING", "mongodb.hosts": "STRING"}
LONG_WIDTH = frozenset({"mongodb.connection.string", "mongodb.hosts", "cursor.pipeline",
                        "snapshot.collection.filter.overrides.<database>.<collection>"})
ACRONYMS = {"ssl": "SSL", "json": "JSON", "authsource": "auth source", "max": "max."}
REQUIRED = frozenset({"name", "topic.prefix", "connector.class"})
HASH_TEMPLATE = "field.mask.hash.<algorithm>.with.salt.<salt>"
OVERRIDE_TEMPLATE = "snapshot.collection.filter.overrides.<database>.<collection>"


@dataclass(frozen=True)
class PropertyInfo:
    name: str
    type: str  # BOOLEAN, STRING, INT, LONG, LIST, CLASS, PASSWORD
    required: bool
    default_value: str | None  # as Connect's ConfigDef.convertToString writes it
    importance: str  # HIGH, MEDIUM, LOW
    documentation: str
    group: str
    order: int  # position in its group, from 1
    width: str  # SHORT, MEDIUM, LONG
    display_name: str
    dependents: tuple[str, ...]
    recommended_values: tuple[str, ...]

    def definition(self, name: str | None = None) -> dict[str, Any]:
        """ConfigKeyInfo's JSON; `name` for a concrete property of a templated one (a hash mask)."""
        return {
            "name": name or self.name, "type": self.type, "required": self.required,
            "default_value": self.default_value, "importance": self.importance,
            "documentation": self.documentation, "group": self.group, "width": self.width,
            "display_name": self.display_name, "dependents": list(self.dependents), "order": self.order,
        }


def as_config_string(value: Any) -> str | None:
    """A value as Connect writes it in ConfigInfos (booleans lower case, lists comma-separated)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    return str(value)


def _type(name: str, hint: Any) -> tuple[str, tuple[str, ...]]:
    if name in TYPE_OVERRIDES:
        return TYPE_OVERRIDES[name], ()
    options = [arg for arg in typing.get_args(hint) if arg is not type(None)] if typing.get_args(hint) else [hint]
    base = options[0] if len(options) == 1 else hint
    origin = typing.get_origin(base)
    if base is bool:
        return "BOOLEAN", ()
    if base is int:
        return ("LONG" if name.endswith(".ms") else "INT"), ()
    if base is Secret:
        return ("PASSWORD" if name == "mongodb.password" else "STRING"), ()
    if isinstance(base, type) and issubclass(base, StrEnum):
        return "STRING", tuple(member.value for member in base)
    if origin is tuple:
        if typing.get_args(base)[:1] == (HashMask,):
            return "STRING", ()
        return "LIST", ()
    return "STRING", ()


def _display_name(name: str) -> str:
    if name in (HASH_TEMPLATE, OVERRIDE_TEMPLATE):
        return "Hash mask (algorithm and salt in the name)" if name == HASH_TEMPLATE else "Snapshot filter"
    words = [ACRONYMS.get(word, word) for word in name.removeprefix("mongodb.").split(".")]
    text = " ".join(words[:-1] + ["(ms)"] if words[-1] == "ms" and len(words) > 1 else words)
    return text[:1].upper() + text[1:]


def _importance(name: str) -> str:
    if name in HIGH:
        return "HIGH"
    return "LOW" if any(word in name for word in LOW_WORDS) else "MEDIUM"


def _width(name: str, kind: str) -> str:
    if name in LONG_WIDTH or kind == "LIST":
        return "LONG"
    return "SHORT" if kind in ("BOOLEAN", "INT", "LONG") else "MEDIUM"


def _build() -> dict[str, PropertyInfo]:
    hints = typing.get_type_hints(ConnectorConfig)
    hint_of = {spec.metadata["property"]: hints[spec.name] for spec in dataclasses.fields(ConnectorConfig)}
    groups: dict[str, list[str]] = {}
    group = COMMON
    for name, _, _ in property_docs():
        group = GROUP_STARTS.get(name, group)
        groups.setdefault(COMMON if name in COMMON_PROPERTIES else group, []).append(name)
    docs = {name: (default, doc) for name, default, doc in property_docs()}
    infos: dict[str, PropertyInfo] = {}
    for group_name in sorted(groups, key=lambda g: (g != COMMON, list(groups).index(g))):
        for order, name in enumerate(groups[group_name], start=1):
            kind, recommended = _type(name, hint_of[name])
            default, doc = docs[name]
            infos[name] = PropertyInfo(
                name=name, type=kind, required=name in REQUIRED, default_value=as_config_string(default),
                importance=_importance(name), documentation=doc, group=group_name, order=order,
                width=_width(name, kind), display_name=_display_name(name),
                dependents=DEPENDENTS.get(name, ()), recommended_values=recommended,
            )
    return infos


PROPERTIES: dict[str, PropertyInfo] = _build()
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(info.group for info in PROPERTIES.values()))


def info_of(name: str) -> PropertyInfo | None:
    """The metadata of a property; a hash mask or snapshot filter property gets its template's."""
    if name in PROPERTIES:
        return PROPERTIES[name]
    if name.startswith("field.mask.hash."):
        return PROPERTIES[HASH_TEMPLATE]
    if name.startswith("snapshot.collection.filter.overrides."):
        return PROPERTIES[OVERRIDE_TEMPLATE]
    return None
