"""The server-side objects a PostgreSQL connector relies on: its publication (created per
`publication.autocreate.mode`), its slot's state (active, confirmed flush, WAL retained), and the tables whose
updates and deletes cannot be published (no replica identity). Works on any DB-API cursor with %s parameters;
callers run it in autocommit mode."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

AUTOCREATE_MODES = ("all_tables", "disabled", "filtered")


class PublicationError(RuntimeError):
    """The publication is missing or cannot be made; the message says what to do."""


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _table_list(tables: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{_quote(schema)}.{_quote(table)}" for schema, table in tables)


def publication_tables(cursor, name: str) -> list[tuple[str, str]] | None:
    """The (schema, table) pairs a publication publishes, sorted; None when it does not exist."""
    cursor.execute("SELECT puballtables FROM pg_publication WHERE pubname = %s", (name,))
    row = cursor.fetchone()
    if row is None:
        return None
    cursor.execute(
        "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s ORDER BY 1, 2", (name,)
    )
    return [tuple(r) for r in cursor.fetchall()]


def ensure_publication(cursor, name: str, mode: str, tables: Sequence[tuple[str, str]] = ()) -> str:
    """Make sure publication `name` exists as `mode` wants; returns 'exists', 'created' or 'updated'.

    all_tables: created FOR ALL TABLES when missing (needs superuser), an existing one is used as it is.
    filtered: created, or its table list replaced, FOR TABLE `tables` (needs ownership of the tables).
    disabled: must exist already.
    """
    if mode not in AUTOCREATE_MODES:
        raise PublicationError(
            f"publication.autocreate.mode={mode!r} is not supported; choose one of {', '.join(AUTOCREATE_MODES)}"
        )
    current = publication_tables(cursor, name)
    if mode == "disabled":
        if current is None:
            raise PublicationError(
                f"publication {name!r} does not exist and publication.autocreate.mode is disabled; create it "
                f"(CREATE PUBLICATION {_quote(name)} FOR TABLE ...) or set publication.autocreate.mode to "
                "filtered or all_tables"
            )
        return "exists"
    try:
        if mode == "all_tables":
            if current is not None:
                return "exists"
            cursor.execute(f"CREATE PUBLICATION {_quote(name)} FOR ALL TABLES")
            return "created"
        if not tables:
            raise PublicationError(
                f"publication {name!r}: no table matches table.include.list/schema.include.list, so a filtered "
                "publication would publish nothing"
            )
        wanted = sorted(tables)
        if current is None:
            cursor.execute(f"CREATE PUBLICATION {_quote(name)} FOR TABLE {_table_list(wanted)}")
            return "created"
        if current == wanted:
            return "exists"
        cursor.execute(f"ALTER PUBLICATION {_quote(name)} SET TABLE {_table_list(wanted)}")
        return "updated"
    except PublicationError:
        raise
    except Exception as error:  # the driver's error: privileges, unknown tables
        if not (hasattr(error, "pgcode") or hasattr(error, "sqlstate")):  # psycopg2's, psycopg 3's
            raise
        action = "create" if current is None else "update"
        hint = ("; create it as a superuser, or use publication.autocreate.mode=filtered (needs ownership of the "
                "tables)") if mode == "all_tables" else ""
        raise PublicationError(f"cannot {action} publication {name!r} ({mode}): {str(error).strip()}{hint}") from None


def drop_publication(cursor, name: str) -> bool:
    """Drops publication `name`; False when there was none. Needs ownership of the publication."""
    if publication_tables(cursor, name) is None:
        return False
    cursor.execute(f"DROP PUBLICATION IF EXISTS {_quote(name)}")
    return True


def drop_publication_sql(name: str) -> str:
    return f"DROP PUBLICATION IF EXISTS {_quote(name)};"


def drop_slot_sql(slot_name: str) -> str:
    return "SELECT pg_drop_replication_slot('" + slot_name.replace("'", "''") + "');"


@dataclass(frozen=True)
class SlotStatus:
    slot_name: str
    plugin: str
    database: str
    active: bool
    active_pid: int | None
    restart_lsn: str | None
    confirmed_flush_lsn: str | None
    retained_wal_bytes: int | None  # WAL the server keeps for this slot: current WAL position - restart_lsn
    wal_status: str | None  # reserved, extended, unreserved, lost


def slot_status(cursor, slot_name: str) -> SlotStatus | None:
    cursor.execute(
        """
        SELECT slot_name, plugin, database, active, active_pid, restart_lsn::text, confirmed_flush_lsn::text,
               pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint, wal_status
        FROM pg_replication_slots WHERE slot_name = %s
        """,
        (slot_name,),
    )
    row = cursor.fetchone()
    return None if row is None else SlotStatus(*row)


def slot_mismatch(status: SlotStatus, slot_name: str, dbname: str, plugin: str) -> str | None:
    """Why an existing slot cannot serve this connector (another database's, another plugin's); None when it can.
    Retrying never helps: the server refuses such a slot every time."""
    if status.database != dbname:
        return (f"replication slot {slot_name!r} belongs to database {status.database!r}, not {dbname!r} (a slot "
                "serves one database): give this connector a slot.name of its own")
    if status.plugin != plugin:
        return (f"replication slot {slot_name!r} decodes with {status.plugin!r}, not {plugin!r}: give this "
                "connector a slot.name of its own, or drop that slot if nothing else reads it")
    return None


def user_tables(cursor) -> list[tuple[str, str]]:
    """Every ordinary and partitioned table outside the system schemas, as (schema, table), sorted."""
    cursor.execute("""SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                      WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                      AND n.nspname NOT LIKE 'pg_toast%%' ORDER BY 1, 2""")
    return [tuple(row) for row in cursor.fetchall()]


def tables_without_replica_identity(cursor, tables: Sequence[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(schema, table, why) for each table whose UPDATEs and DELETEs PostgreSQL refuses once it is published:
    REPLICA IDENTITY NOTHING, or DEFAULT without a primary key, or USING INDEX on an index that is gone.
    One catalog query, whatever the number of tables."""
    if not tables:
        return []
    cursor.execute(
        """
        SELECT n.nspname, c.relname, c.relreplident
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND (c.relreplident = 'n' OR (c.relreplident = 'd' AND NOT EXISTS (
                  SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary))
              OR (c.relreplident = 'i' AND NOT EXISTS (
                  SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisreplident)))
        """
    )
    why = {"n": "REPLICA IDENTITY NOTHING", "d": "no primary key and REPLICA IDENTITY DEFAULT",
           "i": "REPLICA IDENTITY USING INDEX on an index that no longer exists"}
    lacking = {}
    for schema, table, identity in cursor.fetchall():
        lacking[(schema, table)] = why[identity.decode() if isinstance(identity, bytes) else identity]
    problems = [(schema, table, lacking[(schema, table)]) for schema, table in tables if (schema, table) in lacking]
    return problems
