"""What a deleted PostgreSQL connector leaves on its server: its replication slot (which keeps every WAL segment from
its restart position until it is dropped) and its publication. Drops them on request, once nothing reads the slot,
and reports each as a sentence with the SQL to drop it by hand when it stays; finds inactive slots retaining WAL.

Connection failures and refusals (unreachable server, missing privileges) are outcomes, never exceptions: the
caller's own work (deleting the connector) goes on and the operator is told what was left behind."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psycopg

from connectors.postgres.config import PostgresConfig
from connectors.postgres.publication import (
    SlotStatus,
    drop_publication,
    drop_publication_sql,
    drop_slot_sql,
    slot_status,
)

CONNECT_TIMEOUT_S = 5
ACTIVE_WAIT_S = 15.0  # a walsender outlives its stopped pipeline for a moment


@dataclass(frozen=True)
class Outcome:
    kind: str  # "slot" or "publication"
    name: str
    dropped: bool
    message: str
    sql: str | None = None  # to drop it by hand, when it stays

    def as_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "dropped": self.dropped, "message": self.message,
                "sql": self.sql}


def where(config: PostgresConfig) -> str:
    return f"{config.hostname}:{config.port}/{config.dbname}"


def slot_label(config: PostgresConfig) -> str:
    return f"replication slot {config.slot_name!r} on {where(config)}"


def publication_label(config: PostgresConfig) -> str:
    return f"publication {config.publication_name!r} on {where(config)}"


def kept(config: PostgresConfig, kind: str, why: str) -> Outcome:
    """An object left on the server, with the reason and the SQL to drop it by hand."""
    if kind == "slot":
        return Outcome("slot", config.slot_name, False,
                       f"The {slot_label(config)} was left behind ({why}); it keeps WAL on the server until it is "
                       f"dropped: {drop_slot_sql(config.slot_name)}", drop_slot_sql(config.slot_name))
    return Outcome("publication", config.publication_name, False,
                   f"The {publication_label(config)} was left behind ({why}); drop it by hand with "
                   f"{drop_publication_sql(config.publication_name)}", drop_publication_sql(config.publication_name))


def _last_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _connect(config: PostgresConfig, timeout_s: int) -> psycopg.Connection:
    return psycopg.connect(config.dsn(), autocommit=True, connect_timeout=max(1, timeout_s))


def drop(config: PostgresConfig, *, slot: bool, publication: bool, active_wait_s: float | None = None,
         timeout_s: int = CONNECT_TIMEOUT_S) -> list[Outcome]:
    """Drops the slot and/or the publication of `config`; one Outcome for each asked for. An active slot is
    waited for up to `active_wait_s` (default ACTIVE_WAIT_S), then left with the reason."""
    active_wait_s = ACTIVE_WAIT_S if active_wait_s is None else active_wait_s
    wanted = [kind for kind, asked in (("slot", slot), ("publication", publication)) if asked]
    if not wanted:
        return []
    try:
        connection = _connect(config, timeout_s)
    except psycopg.Error as error:
        why = f"cannot connect to PostgreSQL at {config.hostname}:{config.port}: {_last_line(error)}"
        return [kept(config, kind, why) for kind in wanted]
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SET statement_timeout = {int(timeout_s * 1000)}")
            return [_drop_slot(cursor, config, active_wait_s) if kind == "slot" else _drop_publication(cursor, config)
                    for kind in wanted]
    except psycopg.Error as error:  # the connection lost between the two
        return [kept(config, kind, f"PostgreSQL failed: {_last_line(error)}") for kind in wanted]
    finally:
        connection.close()


def _drop_slot(cursor, config: PostgresConfig, active_wait_s: float) -> Outcome:
    name = config.slot_name
    try:
        status = _wait_inactive(cursor, name, active_wait_s)
        if status is None:
            return Outcome("slot", name, False, f"The {slot_label(config)} did not exist; nothing to drop.")
        if status.database != config.dbname:
            return kept(config, "slot", f"it belongs to database {status.database!r}, so it is not this "
                                        "connector's")
        if status.active:
            return kept(config, "slot", f"it is still in use by server process {status.active_pid} after "
                                        f"{active_wait_s:g}s: something other than this connector reads it")
        cursor.execute("SELECT pg_drop_replication_slot(%s)", (name,))
    except psycopg.Error as error:
        return kept(config, "slot", f"PostgreSQL refused: {_last_line(error)}")
    return Outcome("slot", name, True, f"The {slot_label(config)} was dropped.")


def _wait_inactive(cursor, name: str, wait_s: float) -> SlotStatus | None:
    deadline = time.monotonic() + wait_s
    status = slot_status(cursor, name)
    while status is not None and status.active and time.monotonic() < deadline:
        time.sleep(0.25)
        status = slot_status(cursor, name)
    return status


def _drop_publication(cursor, config: PostgresConfig) -> Outcome:
    name = config.publication_name
    try:
        dropped = drop_publication(cursor, name)
    except psycopg.Error as error:
        return kept(config, "publication", f"PostgreSQL refused: {_last_line(error)}")
    if not dropped:
        return Outcome("publication", name, False, f"The {publication_label(config)} did not exist; nothing to drop.")
    return Outcome("publication", name, True, f"The {publication_label(config)} was dropped.")


def inactive_slot(config: PostgresConfig, timeout_s: int = 3) -> SlotStatus | None:
    """The connector's slot when it exists in its database and nothing reads it (so it only retains WAL); None
    otherwise. Raises psycopg.Error when the server cannot be asked."""
    with _connect(config, timeout_s) as connection, connection.cursor() as cursor:
        cursor.execute(f"SET statement_timeout = {int(timeout_s * 1000)}")
        status = slot_status(cursor, config.slot_name)
    if status is None or status.active or status.database != config.dbname:
        return None
    return status
