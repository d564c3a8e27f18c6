"""Opening a pymongo client from connector settings, with errors a user can act on."""

from __future__ import annotations

from dataclasses import dataclass

import pymongo
from pymongo import monitoring
from pymongo.errors import ConfigurationError, OperationFailure, ServerSelectionTimeoutError

from connectors.errors import AuthenticationFailed, ConnectorError, SourceUnreachable

AUTH_FAILED_CODES = {18, 13}


@dataclass(frozen=True)
class ConnectionSettings:
    uri: str
    user: str | None = None
    password: str | None = None
    auth_source: str = "admin"
    tls: bool = False
    server_selection_timeout_ms: int = 10_000
    app_name: str = "cdc-platform"

    def describe(self) -> str:
        """Where we connect, without credentials: safe for logs and errors."""
        from pymongo.uri_parser import parse_uri

        try:
            hosts = ",".join(f"{h}:{p}" for h, p in parse_uri(self.uri)["nodelist"])
        except Exception:
            hosts = "<unparsable connection string>"
        return hosts


def open_client(settings: ConnectionSettings, listeners: list[monitoring._EventListener] | None = None,
                direct: bool = False) -> pymongo.MongoClient:
    kwargs: dict = {
        "serverSelectionTimeoutMS": settings.server_selection_timeout_ms,
        "appname": settings.app_name,
        "tz_aware": False,
        "event_listeners": listeners or [],
    }
    if settings.user:
        kwargs.update(username=settings.user, password=settings.password, authSource=settings.auth_source)
    if settings.tls:
        kwargs["tls"] = True
    if direct:
        kwargs["directConnection"] = True
    try:
        client = pymongo.MongoClient(settings.uri, **kwargs)
    except ConfigurationError as error:
        raise ConnectorError(f"invalid MongoDB connection settings for {settings.describe()}: {error}") from None
    return client


def check_connection(client: pymongo.MongoClient, settings: ConnectionSettings) -> dict:
    """Ping the deployment and return its `hello` reply, translating failures into clear errors."""
    try:
        client.admin.command("ping")
        return client.admin.command("hello")
    except ServerSelectionTimeoutError:
        raise SourceUnreachable(
            f"cannot reach MongoDB at {settings.describe()} within {settings.server_selection_timeout_ms} ms; "
            "check the hosts, ports, network and that the replica set is running"
        ) from None
    except OperationFailure as error:
        if error.code in AUTH_FAILED_CODES:
            raise AuthenticationFailed(
                f"MongoDB rejected the credentials of user {settings.user!r} (authSource "
                f"{settings.auth_source!r}) at {settings.describe()}; check mongodb.user, mongodb.password "
                "and mongodb.authsource"
            ) from None
        raise ConnectorError(f"MongoDB at {settings.describe()} refused the connection check: {error}") from None
