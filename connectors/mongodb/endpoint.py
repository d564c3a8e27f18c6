"""Which servers a MongoDB configuration logs in to, read from its pymongo client options without resolving SRV
names or contacting anything: the endpoint a stored secret belongs to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MONGODB_DEFAULT_PORT = 27017


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
