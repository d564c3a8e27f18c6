"""Reading a logical replication slot with the `pgoutput` plugin over the streaming replication protocol, spoken
through libpq itself (psycopg's `pq` module: psycopg 3 has no replication API of its own).

psycopg2's replication cursor is not used: on each server keepalive it moves the flush position it reports to the
server's WAL end whenever everything received so far has been acknowledged, and on a new connection (where nothing
has been received yet) always. The slot then moved past what Kafka held, without any acknowledgement (seen after a
failed batch while another database wrote, and on every reconnect). Here the server is told exactly the position
`acknowledge` was given, nothing else.

`ReplicationStream` owns one replication connection:
- `create_slot(export_snapshot=True)` runs `CREATE_REPLICATION_SLOT … LOGICAL pgoutput EXPORT_SNAPSHOT`; the returned
  snapshot name stays importable (`SET TRANSACTION SNAPSHOT`) by other sessions until this connection runs its next
  command, so read the snapshot before calling `start`.
- `start(start_lsn)` begins streaming; `read(timeout)` returns the decoded messages that arrived (possibly none).
- The slot moves only when told: `acknowledge(lsn)` sends the flush position; the status updates sent every
  `status_interval` seconds and in answer to the server's keepalives repeat the last acknowledged position, so a
  connection that never acknowledges replays everything.
"""

from __future__ import annotations

import select
import struct
import time
from dataclasses import dataclass

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from connectors.postgres.compiled import slots_maker
from connectors.postgres.pgoutput import Decoder, Message, lsn_from_text

# The text forms the type mapping reads: pgoutput writes values with the walsender session's output settings.
SESSION_SETTINGS = {
    "DateStyle": "ISO, MDY",
    "IntervalStyle": "postgres",
    "bytea_output": "hex",
    "extra_float_digits": "3",
    "lc_monetary": "C",
}
_PG_EPOCH_SECONDS = 946_684_800  # 2000-01-01: the protocol's times count from it
_XLOG_DATA = struct.Struct(">QQq")  # 'w': data start, WAL end, send time
_KEEPALIVE = struct.Struct(">Qq?")  # 'k': WAL end, send time, reply requested
_STATUS = struct.Struct(">cQQQq?")  # 'r': written, flushed, applied, client time, reply requested


def with_session_settings(dsn: str) -> str:
    """`dsn` with SESSION_SETTINGS added to its `options` (settings it already gives stay, ours come after)."""
    given = conninfo_to_dict(dsn).get("options") or ""
    ours = " ".join(f"-c {name}={value.replace(' ', '')}" for name, value in SESSION_SETTINGS.items())
    return make_conninfo(dsn, options=f"{given} {ours}".strip())


def lsn_text(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


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
    data_start: int  # LSN of the WAL record this message was decoded from (0 for some, e.g. Relation)
    message: Message


_make_wal_message = slots_maker(WalMessage)


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
        self._wal_end = 0
        self._last_status = 0.0
        self.started = False
        self._conn = pq.PGconn.connect(make_conninfo(with_session_settings(dsn), replication="database").encode())
        if self._conn.status != pq.ConnStatus.OK:
            problem = self._error_text()
            self._conn.finish()
            raise ReplicationError(f"cannot open a replication connection: {problem}")
        self._cancel = self._conn.get_cancel()

    def _error_text(self, result: pq.PGresult | None = None) -> str:
        raw = (result.error_message if result is not None else None) or self._conn.error_message
        return raw.decode("utf-8", "replace").strip() or "the connection failed"

    def _execute(self, command: str, action: str) -> pq.PGresult:
        """Runs a replication command; its result (the last one), or ReplicationError naming `action`. Waits on the
        socket (a slot's creation may wait for running transactions; `cancel` ends that wait)."""
        conn = self._conn
        try:
            conn.send_query(command.encode())  # raises what libpq refuses
            while conn.is_busy():
                select.select([conn.socket], [], [], 1.0)
                conn.consume_input()
            last = None
            while (result := conn.get_result()) is not None:
                last = result
                if result.status == pq.ExecStatus.COPY_BOTH:
                    break  # streaming began: no other result follows
        except psycopg.Error as error:
            raise ReplicationError(f"{action}: {str(error).strip()}") from None
        if last is None or last.status not in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK,
                                                pq.ExecStatus.COPY_BOTH):
            raise ReplicationError(f"{action}: {self._error_text(last)}")
        return last

    # --- slot -----------------------------------------------------------------------------------------------------
    def create_slot(self, export_snapshot: bool = True, temporary: bool = False) -> SlotCreated:
        command = (f"CREATE_REPLICATION_SLOT {_identifier(self.slot_name)} {'TEMPORARY ' if temporary else ''}"
                   f"LOGICAL pgoutput {'EXPORT_SNAPSHOT' if export_snapshot else 'NOEXPORT_SNAPSHOT'}")
        result = self._execute(command, f"cannot create replication slot {self.slot_name!r}")

        def value(column: int) -> str | None:
            raw = result.get_value(0, column)
            return None if raw is None else bytes(raw).decode()

        return SlotCreated(value(0) or self.slot_name, lsn_from_text(value(1) or "0/0"), value(2), value(3) or "")

    def drop_slot(self) -> None:
        self._execute(f"DROP_REPLICATION_SLOT {_identifier(self.slot_name)}",
                      f"cannot drop replication slot {self.slot_name!r}")

    # --- streaming ------------------------------------------------------------------------------------------------
    def start(self, start_lsn: int = 0) -> None:
        options = {"proto_version": str(self.proto_version),
                   "publication_names": ",".join(_identifier(name) for name in self.publication_names)}
        if self.messages:
            options["messages"] = "true"
        if self.proto_version >= 2:
            options["streaming"] = "true"
        listed = ", ".join(f"{_identifier(k)} {_literal(v)}" for k, v in options.items())
        self._execute(f"START_REPLICATION SLOT {_identifier(self.slot_name)} LOGICAL {lsn_text(start_lsn)} ({listed})",
                      f"cannot start replication from slot {self.slot_name!r}")
        self.started = True
        self._last_status = time.monotonic()

    def read(self, timeout: float = 1.0, max_messages: int = 10_000) -> list[WalMessage]:
        """The messages available now, else those that arrive within `timeout` seconds (an empty list if none)."""
        decode = self._decoder.decode
        return [_make_wal_message(_XLOG_DATA.unpack_from(data, 1)[0], decode(bytes(data[25:])))
                for data in self.read_raw(timeout, max_messages)]

    def read_raw(self, timeout: float = 1.0, max_messages: int = 10_000) -> list:
        """As `read`, the XLogData messages themselves, undecoded ('w', data start, WAL end, send time, then the
        pgoutput message from byte 25): for a reader that decodes them itself (`decode`)."""
        out: list = []
        deadline = time.monotonic() + timeout
        conn = self._conn
        last = None  # the last XLogData message, unless a keepalive came after it: the WAL end it reports
        try:
            while len(out) < max_messages:
                size, data = conn.get_copy_data(1)
                if size > 0:
                    kind = data[0]
                    if kind == 0x77:  # 'w'
                        out.append(data)
                        last = data
                    elif kind == 0x6B:  # 'k'
                        self._wal_end, _, reply = _KEEPALIVE.unpack_from(data, 1)
                        last = None
                        if reply:
                            self._send_status()
                    continue
                if size < 0:
                    raise ReplicationError(f"replication stream from slot {self.slot_name!r} failed: "
                                           f"{self._stream_end_text()}")
                if time.monotonic() - self._last_status >= self.status_interval:
                    self._send_status()
                if out:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                select.select([conn.socket], [], [], min(remaining, self.status_interval))
                conn.consume_input()
        except psycopg.Error as error:
            raise ReplicationError(
                f"replication stream from slot {self.slot_name!r} failed: {str(error).strip()}") from None
        finally:
            if last is not None:
                self._wal_end = _XLOG_DATA.unpack_from(last, 1)[1]
        return out

    def decode(self, data) -> Message:
        """The pgoutput message of an XLogData message from `read_raw`, decoded in order with the others."""
        return self._decoder.decode(bytes(data[25:]))

    @property
    def in_stream(self) -> bool:
        """Whether a protocol-2 stream block is open (its messages carry their transaction's id first)."""
        return self._decoder.in_stream

    def _stream_end_text(self) -> str:
        """Why the server ended the stream (the error of the result that follows the copy)."""
        try:
            result = self._conn.get_result()
        except psycopg.Error as error:
            return str(error).strip()
        if result is not None and result.error_message:
            return self._error_text(result)
        return self._error_text() if self._conn.error_message else "the server ended the stream"

    def _send_status(self) -> None:
        """A standby status update reporting the acknowledged position as written, flushed and applied."""
        lsn = self._acknowledged
        now_us = int((time.time() - _PG_EPOCH_SECONDS) * 1_000_000)
        conn = self._conn
        conn.put_copy_data(_STATUS.pack(b"r", lsn, lsn, lsn, now_us, False))
        while conn.flush():  # 1: not all of it was sent yet
            select.select([], [conn.socket], [], 1.0)
        self._last_status = time.monotonic()

    def acknowledge(self, flush_lsn: int) -> None:
        """Tell the server everything up to `flush_lsn` is durably handled: the slot may release WAL before it."""
        if flush_lsn < self._acknowledged:
            raise ValueError(f"acknowledged position cannot move back ({flush_lsn} < {self._acknowledged})")
        self._acknowledged = flush_lsn
        try:
            self._send_status()
        except psycopg.Error as error:
            raise ReplicationError(
                f"cannot acknowledge position on slot {self.slot_name!r}: {str(error).strip()}") from None

    @property
    def acknowledged(self) -> int:
        return self._acknowledged

    @property
    def server_wal_end(self) -> int:
        """The server's WAL end as last reported (data messages and keepalives); 0 before the first."""
        return self._wal_end

    def cancel(self) -> None:
        """Cancels the command running on this connection (from another thread): it then fails."""
        try:
            self._cancel.cancel()
        except psycopg.Error:
            pass

    def close(self) -> None:
        self._conn.finish()

    def __enter__(self) -> ReplicationStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
