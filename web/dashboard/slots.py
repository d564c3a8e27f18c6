"""The overview's warning about PostgreSQL replication slots of stored connectors that nothing reads: an inactive
slot keeps every WAL segment from its restart position, so the server's disk fills until the connector runs again
or the slot is dropped. Each server is asked with a short timeout; one that cannot be asked is named, not fatal."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import psycopg

from connectors.postgres import leftovers
from connectors.postgres.publication import drop_slot_sql
from web.connectors import services
from web.connectors.models import Connector, SourceKind

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IdleSlot:
    connector: str
    slot: str
    where: str  # host:port/database
    retained_bytes: int
    drop_sql: str


@dataclass(frozen=True)
class Unchecked:
    connector: str
    reason: str


def idle_slots(timeout_s: int = 3) -> dict[str, list]:
    """{"idle": [IdleSlot], "unchecked": [Unchecked]} over the stored PostgreSQL connectors (one look per slot)."""
    idle, unchecked, seen = [], [], set()
    for connector in Connector.objects.filter(source=SourceKind.POSTGRES).order_by("name"):
        config = services.postgres_config(connector)
        if config is None:
            continue
        key = (config.hostname, config.port, config.dbname, config.slot_name)
        if key in seen:
            continue
        seen.add(key)
        try:
            status = leftovers.inactive_slot(config, timeout_s)
        except psycopg.Error as error:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            log.info("cannot look at the slot of %s: %s", connector.name, reason)
            unchecked.append(Unchecked(connector.name, f"PostgreSQL at {leftovers.where(config)}: {reason}"))
            continue
        if status is not None:
            idle.append(IdleSlot(connector.name, config.slot_name, leftovers.where(config),
                                 status.retained_wal_bytes or 0, drop_slot_sql(config.slot_name)))
    return {"idle": idle, "unchecked": unchecked}
