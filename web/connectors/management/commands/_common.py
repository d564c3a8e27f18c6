"""Shared bits of the connector management commands: the acting user, connector lookup, errors."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from web.connectors.models import Connector


def add_user_argument(parser) -> None:
    parser.add_argument("--user", help="User name recorded in the audit log (default: none, source 'cli').")


def acting_user(username: str | None):
    if not username:
        return None
    try:
        return get_user_model().objects.get_by_natural_key(username)
    except get_user_model().DoesNotExist:
        raise CommandError(f"no user {username!r}") from None


def connector_named(name: str) -> Connector:
    connector = Connector.objects.filter(name=name).first()
    if connector is None:
        raise CommandError(f"no connector named {name!r} (see: manage.py connector_list)")
    return connector
