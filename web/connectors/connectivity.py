"""Can the connector reach its source? Checked before a configuration is saved or reported valid (API, dashboard
form, Kafka Connect's create/validate), in bounded time (CDC_CONNECTIVITY_CHECK_MS, 0 turns it off), with the
reason a person can act on: DNS, refused port, timeout, credentials, and what the source needs (a MongoDB replica
set; PostgreSQL's wal_level, REPLICATION and publication; MySQL/MariaDB's binlog settings and grants), by
connectors.sources.preflight.
"""

from __future__ import annotations

from django.conf import settings

from connectors.config import Problem
from connectors.sources import preflight
from web.connectors import properties as props


def enabled() -> bool:
    return settings.CDC_CONNECTIVITY_CHECK_MS > 0


def check(parts: props.Parts) -> list[Problem]:
    """[] when the source answers as the connector needs (or the check is off); else the problems, each naming the
    property to change."""
    if not enabled():
        return []
    return preflight(props.join(parts), settings.CDC_CONNECTIVITY_CHECK_MS)
