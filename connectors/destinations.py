"""Where a connector sends its credentials: the endpoint a stored password belongs to.

A stored secret is only ever sent to the endpoint it was stored with. The control plane compares the endpoint of a
configuration before and after a change: when it moves, a secret kept from storage (not typed again) may not follow.

The endpoint is everything that decides which server receives the login: PostgreSQL's and MySQL/MariaDB's host and
port, MongoDB's seed list (or SRV name). A MongoDB connection string is read here without resolving SRV names or
contacting anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectors.config_types import ConfigError
from connectors.core.errors import UnknownConnectorClass
from connectors.sources import MONGODB, engine_config

MONGODB_DEFAULT_PORT = 27017


def secret_destination(properties: Mapping[str, Any]) -> tuple | None:
    """A comparable description of where these properties make the connector log in; None when they are not a
    valid configuration (the validator reports why)."""
    try:
        kind, config = engine_config(properties)
    except (UnknownConnectorClass, ConfigError):
        return None
    if kind == MONGODB:
        return (kind, *mongodb_endpoint(config.mongo_client_options()))
    return kind, _host(config.hostname), int(config.port)  # PostgreSQL, MySQL and MariaDB


def mongodb_endpoint(options: Mapping[str, Any]) -> tuple:
    """(scheme, sorted seeds) of pymongo client options, from the connection string or a host list."""
    host = options.get("host")
    if isinstance(host, str):
        return connection_string_endpoint(host)
    seeds = sorted(_seed(item) for item in host or ())
    return "mongodb", tuple(seeds)


def connection_string_endpoint(uri: str) -> tuple:
    scheme, _, rest = uri.strip().partition("://")
    scheme = scheme.lower()
    authority = rest.partition("/")[0].partition("?")[0]
    hosts = authority.rpartition("@")[2]  # the userinfo ends at the last @ of the authority
    return scheme, tuple(sorted(_seed(item, scheme) for item in hosts.split(",") if item))


def _seed(item: str, scheme: str = "mongodb") -> str:
    item = item.strip().lower()
    if scheme == "mongodb+srv" or item.endswith("]") or item.rpartition(":")[2].isdigit():
        return item
    return f"{item}:{MONGODB_DEFAULT_PORT}"


def _host(host: Any) -> str:
    return str(host or "").strip().lower()
