"""Reading a logical replication slot with the `pgoutput` plugin, over psycopg2's replication protocol support.

psycopg 3 has no API for the streaming replication protocol (CopyBoth); psycopg2's `LogicalReplicationConnection`
has, so this module is the only place that imports psycopg2.

`ReplicationStream` owns one replication connection:
- `create_slot(export_snapshot=True)` runs `CREATE_REPLICATION_SLOT … LOGICAL pgoutput EXPORT_SNAPSHOT`; the returned
  snapshot name stays importable (`SET TRANSACTION SNAPSHOT`) by other sessions until this connection runs its next
  command, so read the snapshot before calling `start`.
- `start(start_lsn)` begins streaming; `read(timeout)` returns the decoded messages that arrived (possibly none).
- The slot moves only when told: `acknowledge(lsn)` sends the flush position. Keepalive replies psycopg2 sends on
  its own repeat the last acknowledged position, so a connection that never acknowledges replays everything.
"""

from __future__ import annotations

import select
import time
from dataclasses import dataclass

import psycopg2
import psycopg2.extensions
import psycopg2.extras
from psycopg2 import sql

from connectors.postgres.pgoutput import Decoder, Message, lsn_from_text

# The text forms the type mapping reads: pgoutput writes values with the walsender session's output settings.
SESSION_SETTINGS = {
    "DateStyle": "ISO, MDY",
    "IntervalStyle": "postgres",
    "bytea_output": "hex",
    "extra_float_digits": "3",
    "lc_monetary": "C",
}


def with_session_settings(dsn: str) -> str:
    """`dsn` with SESSION_SETTINGS added to its `options` (settings it already gives stay, ours come after)."""
    given = psycopg2.extensions.parse_dsn(dsn).get("options", "")
    ours = " ".join(f"-c {name}={value.replace(' ', '')}" for name, value in SESSION_SETTINGS.items())
    return psycopg2.extensions.make_dsn(dsn, options=f"{given} {ours}".strip())


class ReplicationError(RuntimeError):
    """The replication connection failed or was refused; the message says why."""


@dataclass(frozen=True)
class SlotCreated:
    slot_name: str
    consistent_point: int  # LSN from which the slot's changes follow the exported snapshot
    snapshot_name: str | None
    output_plugin: str


@dataclass(slots=True, unsafe_hash=True)  # one per WAL message: see pgoutput.Begin
class WalMessage:
    data_start: int  # LSN of the WAL record this message was decoded from (0 for some, e.g. Commit's end)
    message: Message


class ReplicationStream:
    def __init__(
        self,
        dsn: str,
        slot_name: str,
        publication_names: list[str] | tuple[str, ...],
        *,
        proto_version: int = 1,
        messages: bool = False,
        status_interval: float = 10.0,
    ):
        if proto_version not in (1, 2):
            raise ValueError("proto_version must be 1 or 2")
        self.dsn = dsn
        self.slot_name = slot_name
        self.publication_names = tuple(publication_names)
        self.proto_version = proto_version
        self.messages = messages
        self.status_interval = status_interval
        self._decoder = Decoder()
        self._acknowledged = 0
        try:
            self._conn = psycopg2.connect(
                with_session_settings(dsn), connection_factory=psycopg2.extras.LogicalReplicationConnection
            )
        except psycopg2.Error as error:
            raise ReplicationError(f"cannot open a replication connection: {str(error).strip()}") from None
        self._cursor = self._conn.cursor()
        self.started = False

    # --- slot -----------------------------------------------------------------------------------------------------
    def create_slot(self, export_snapshot: bool = True, temporary: bool = False) -> SlotCreated:
        command = sql.SQL("CREATE_REPLICATION_SLOT {} {}LOGICAL pgoutput {}").format(
            sql.Identifier(self.slot_name),
            sql.SQL("TEMPORARY " if temporary else ""),
            sql.SQL("EXPORT_SNAPSHOT" if export_snapshot else "NOEXPORT_SNAPSHOT"),
        )
        try:
            self._cursor.execute(command)
            slot_name, consistent_point, snapshot_name, plugin = self._cursor.fetchone()
        except psycopg2.Error as error:
            raise ReplicationError(f"cannot create replication slot {self.slot_name!r}: {str(error).strip()}") from None
        return SlotCreated(slot_name, lsn_from_text(consistent_point), snapshot_name, plugin)

    def drop_slot(self) -> None:
        try:
            self._cursor.drop_replication_slot(self.slot_name)
        except psycopg2.Error as error:
            raise ReplicationError(f"cannot drop replication slot {self.slot_name!r}: {str(error).strip()}") from None

    # --- streaming ------------------------------------------------------------------------------------------------
    def start(self, start_lsn: int = 0) -> None:
        options = {"proto_version": str(self.proto_version), "publication_names": ",".join(self.publication_names)}
        if self.messages:
            options["messages"] = "true"
        if self.proto_version >= 2:
            options["streaming"] = "true"
        try:
            self._cursor.start_replication(
                slot_name=self.slot_name,
                slot_type=psycopg2.extras.REPLICATION_LOGICAL,
                start_lsn=start_lsn,
                options=options,
                decode=False,
                status_interval=self.status_interval,
            )
        except psycopg2.Error as error:
            raise ReplicationError(
                f"cannot start replication from slot {self.slot_name!r}: {str(error).strip()}"
            ) from None
        self.started = True

    def read(self, timeout: float = 1.0, max_messages: int = 10_000) -> list[WalMessage]:
        """The messages available now, else those that arrive within `timeout` seconds (an empty list if none)."""
        out: list[WalMessage] = []
        deadline = time.monotonic() + timeout
        cursor = self._cursor
        try:
            while len(out) < max_messages:
                raw = cursor.read_message()
                if raw is not None:
                    # (psycopg2 makes a datetime for each read of send_time: nothing here needs it)
                    out.append(WalMessage(raw.data_start, self._decoder.decode(raw.payload)))
                    continue
                if out:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                select.select([self._conn], [], [], min(remaining, self.status_interval))
        except psycopg2.Error as error:
            raise ReplicationError(
                f"replication stream from slot {self.slot_name!r} failed: {str(error).strip()}"
            ) from None
        return out

    def acknowledge(self, flush_lsn: int) -> None:
        """Tell the server everything up to `flush_lsn` is durably handled: the slot may release WAL before it."""
        if flush_lsn < self._acknowledged:
            raise ValueError(f"acknowledged position cannot move back ({flush_lsn} < {self._acknowledged})")
        try:
            self._cursor.send_feedback(write_lsn=flush_lsn, flush_lsn=flush_lsn, apply_lsn=flush_lsn, force=True)
        except psycopg2.Error as error:
            raise ReplicationError(
                f"cannot acknowledge position on slot {self.slot_name!r}: {str(error).strip()}"
            ) from None
        self._acknowledged = flush_lsn

    @property
    def acknowledged(self) -> int:
        return self._acknowledged

    @property
    def server_wal_end(self) -> int:
        """The server's WAL end as last reported (data messages and keepalives); 0 before the first."""
        return self._cursor.wal_end or 0

    def cancel(self) -> None:
        """Cancels the command running on this connection (from another thread): it then fails."""
        try:
            self._conn.cancel()
        except psycopg2.Error:
            pass

    def close(self) -> None:
        try:
            self._conn.close()
        except psycopg2.Error:
            pass

    def __enter__(self) -> ReplicationStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
