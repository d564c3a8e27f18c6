"""Between Connector rows and the engine: the property map of a stored connector, saving a new one, and the masked
description used in responses and the audit log. The one place secrets are decrypted for the engine is
`engine_config`."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import transaction

from connectors import UnknownConnectorClass, sources
from connectors.config.types import ConfigError, Problem
from web.connectors import properties as props
from web.connectors.models import Connector, ConnectorFilter


def parts_of(connector: Connector) -> props.Parts:
    order = {kind: index for index, kind in enumerate(props.FILTER_KINDS)}
    stored = sorted(connector.filters.all(), key=lambda row: (order[row.kind], row.position, row.pk or 0))
    rows = [props.FilterRow(row.kind, row.value, row.argument, row.salt) for row in stored]
    return props.Parts(
        name=connector.name,
        topic_prefix=connector.topic_prefix,
        connection_string=connector.connection_string,
        password=connector.password,
        filters=rows,
        properties=dict(connector.properties or {}),
    )


def flat_of(connector: Connector) -> dict[str, Any]:
    """The full Debezium property map, secrets in clear. Never return or log it; see `masked_config`."""
    return props.join(parts_of(connector))


def config_version(connector: Connector) -> str:
    """A fingerprint of the whole configuration (secrets included, hashed): a pipeline started with another one
    is about to be restarted, so requests meant for the new configuration are left to its successor."""
    text = json.dumps(flat_of(connector), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def masked_config(connector: Connector) -> dict[str, Any]:
    return props.mask(flat_of(connector))


def engine_config(connector: Connector):
    """The validated engine configuration of a stored connector, of its source's kind (ConnectorConfig for
    MongoDB, PostgresConfig, MySqlConfig); raises connectors.config.ConfigError."""
    try:
        return sources.engine_config(flat_of(connector))[1]
    except UnknownConnectorClass as error:
        raise ConfigError([Problem(props.CONNECTOR_CLASS, str(error))]) from None


def describe(connector: Connector) -> dict[str, Any]:
    """A masked snapshot of the connector for the audit log."""
    return {
        "name": connector.name,
        "desired_state": connector.desired_state,
        "config": masked_config(connector),
    }


@transaction.atomic
def save_parts(connector: Connector, parts: props.Parts, user=None) -> Connector:
    """Stores `parts` on `connector` (new or existing). Filter rows of an unchanged kind keep their ids."""
    connector.name = parts.name
    connector.source = props.source_of(parts.properties)
    connector.topic_prefix = parts.topic_prefix
    connector.connection_string = parts.connection_string
    connector.password = parts.password
    connector.properties = parts.properties
    if connector.pk is None:
        connector.created_by = user
    connector.updated_by = user
    connector.save()
    replace_filters(connector, parts.filters)
    return connector


def replace_filters(connector: Connector, rows: list[props.FilterRow]) -> None:
    existing = list(connector.filters.all().order_by("position", "id"))
    for kind in props.FILTER_KINDS:
        old = [row for row in existing if row.kind == kind]
        new = [row for row in rows if row.kind == kind]
        if [(r.value, r.argument, r.salt) for r in old] == [(r.value, r.argument, r.salt) for r in new]:
            continue
        ConnectorFilter.objects.filter(pk__in=[row.pk for row in old]).delete()
        ConnectorFilter.objects.bulk_create(
            ConnectorFilter(connector=connector, kind=kind, value=r.value, argument=r.argument, salt=r.salt,
                            position=position)
            for position, r in enumerate(new)
        )
