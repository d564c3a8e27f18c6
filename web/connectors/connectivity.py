"""Can the connector reach its MongoDB? Checked before a configuration is saved or reported valid (API, dashboard
form, Kafka Connect's create/validate), in bounded time (CDC_CONNECTIVITY_CHECK_MS, 0 turns it off), with the
reason a person can act on: DNS, refused port, timeout, credentials, not a replica set (connectors.mongodb.client).
"""

from __future__ import annotations

from django.conf import settings

from connectors.config import ConfigError, ConnectorConfig, Problem
from connectors.mongodb.client import connection_problem
from web.connectors import properties as props


def enabled() -> bool:
    return settings.CDC_CONNECTIVITY_CHECK_MS > 0


def check(parts: props.Parts) -> list[Problem]:
    """[] when the deployment answers as a replica set (or the check is off); else one problem naming the property
    that says where to connect."""
    if not enabled():
        return []
    try:
        config = ConnectorConfig.from_properties(props.join(parts))
    except ConfigError:
        return []  # invalid configurations are reported by the validator already
    problem = connection_problem(config.mongo_client_options(), settings.CDC_CONNECTIVITY_CHECK_MS)
    if problem is None:
        return []
    where = props.CONNECTION_STRING if parts.connection_string else "mongodb.hosts"
    return [Problem(where, problem)]
