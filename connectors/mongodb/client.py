"""Opening a pymongo client from a connector's client options, with errors a user can act on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pymongo
from pymongo.errors import ConfigurationError, OperationFailure, ServerSelectionTimeoutError

from connectors.errors import AuthenticationFailed, ConnectorError, SourceUnreachable

AUTH_FAILED_CODES = {18, 13}


def describe_hosts(options: Mapping[str, Any]) -> str:
    """Where a client connects, without credentials: safe for logs and error messages."""
    from pymongo.uri_parser import parse_uri

    host = options.get("host")
    if isinstance(host, str):
        try:
            return ",".join(f"{h}:{p}" for h, p in parse_uri(host)["nodelist"])
        except Exception:
            return "<unparsable connection string>"
    return ",".join(host or ["localhost:27017"])


def open_client(options: Mapping[str, Any], listeners: Sequence[object] = ()) -> pymongo.MongoClient:
    kwargs = {k: v for k, v in options.items() if v is not None}
    kwargs.setdefault("tz_aware", False)
    try:
        return pymongo.MongoClient(event_listeners=list(listeners), **kwargs)
    except ConfigurationError as error:
        raise ConnectorError(f"invalid MongoDB connection settings for {describe_hosts(options)}: {error}") from None


def check_connection(client: pymongo.MongoClient, options: Mapping[str, Any]) -> dict:
    """Ping the deployment and return its `hello` reply, translating failures into clear errors."""
    where = describe_hosts(options)
    try:
        client.admin.command("ping")
        return client.admin.command("hello")
    except ServerSelectionTimeoutError:
        raise SourceUnreachable(
            f"cannot reach MongoDB at {where} within {options.get('serverSelectionTimeoutMS')} ms; "
            "check the hosts, ports, network and that the replica set is running"
        ) from None
    except OperationFailure as error:
        if error.code in AUTH_FAILED_CODES:
            raise AuthenticationFailed(
                f"MongoDB rejected the credentials of user {options.get('username')!r} (authSource "
                f"{options.get('authSource')!r}) at {where}; check mongodb.user, mongodb.password "
                "and mongodb.authsource"
            ) from None
        raise ConnectorError(f"MongoDB at {where} refused the connection check: {error.details}") from None
