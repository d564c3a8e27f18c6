"""Decoding of the `pgoutput` logical replication protocol (PostgreSQL's "Logical Replication Message Formats"),
protocol versions 1 and 2, as pure functions over the bytes of one CopyData payload.

`decode(data, in_stream)` returns one message dataclass. In protocol 2 the messages sent between Stream Start and
Stream Stop carry the transaction id first; `in_stream` says whether `data` is such a message. `Decoder` tracks that
state across a stream of payloads. Column values are `None` (SQL NULL), `UNCHANGED_TOAST` (a TOASTed value the
update did not change, so the server did not send it), `str` (text format, the default) or `bytes` (binary format).
Timestamps are converted to microseconds since the Unix epoch.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from connectors.postgres.compiled import compiled as _compiled
from connectors.postgres.compiled import slots_maker

# PostgreSQL timestamps count from 2000-01-01 00:00:00 UTC
PG_EPOCH_OFFSET_US = 946_684_800_000_000


class PgOutputError(ValueError):
    """A payload that is not a well-formed pgoutput message."""


class _UnchangedToast:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"


UNCHANGED_TOAST = _UnchangedToast()
ColumnValue = None | str | bytes | _UnchangedToast


# Messages are values: nothing assigns to their fields. They are not `frozen=True` because a frozen dataclass sets
# each field through object.__setattr__ (0.9 µs for five fields, 0.2 µs without), and a change makes about a dozen
# such objects between here and its event; `unsafe_hash` keeps the hash frozen would give.
@dataclass(slots=True, unsafe_hash=True)
class Begin:
    final_lsn: int
    commit_ts_us: int
    xid: int


@dataclass(slots=True, unsafe_hash=True)
class Commit:
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(slots=True, unsafe_hash=True)
class Origin:
    commit_lsn: int
    name: str


@dataclass(slots=True, unsafe_hash=True)
class RelationColumn:
    name: str
    type_oid: int
    type_modifier: int
    key: bool  # part of the replica identity


@dataclass(slots=True, unsafe_hash=True)
class Relation:
    relation_id: int
    namespace: str
    name: str
    replica_identity: str  # 'd' default, 'n' nothing, 'f' full, 'i' index
    columns: tuple[RelationColumn, ...]
    xid: int | None = None


@dataclass(slots=True, unsafe_hash=True)
class Type:
    oid: int
    namespace: str
    name: str
    xid: int | None = None


@dataclass(slots=True, unsafe_hash=True)
class Insert:
    relation_id: int
    new: tuple[ColumnValue, ...]
    xid: int | None = None


@dataclass(slots=True, unsafe_hash=True)
class Update:
    relation_id: int
    new: tuple[ColumnValue, ...]
    old: tuple[ColumnValue, ...] | None = None
    old_kind: str | None = None  # 'K': the old key (replica identity index); 'O': the whole old row (FULL)
    xid: int | None = None


@dataclass(slots=True, unsafe_hash=True)
class Delete:
    relation_id: int
    old: tuple[ColumnValue, ...]
    old_kind: str  # 'K' or 'O', as for Update
    xid: int | None = None


@dataclass(slots=True, unsafe_hash=True)
class Truncate:
    relation_ids: tuple[int, ...]
    cascade: bool
    restart_identity: bool
    xid: int | None = None


@dataclass(slots=True, unsafe_hash=True)
class LogicalMessage:
    transactional: bool
    lsn: int
    prefix: str
    content: bytes
    xid: int | None = None


@dataclass(slots=True, unsafe_hash=True)
class StreamStart:
    xid: int
    first_segment: bool


@dataclass(slots=True, unsafe_hash=True)
class StreamStop:
    pass


@dataclass(slots=True, unsafe_hash=True)
class StreamCommit:
    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(slots=True, unsafe_hash=True)
class StreamAbort:
    xid: int
    subxid: int


Message = (
    Begin | Commit | Origin | Relation | Type | Insert | Update | Delete | Truncate | LogicalMessage
    | StreamStart | StreamStop | StreamCommit | StreamAbort
)

_I8 = struct.Struct("!b")
_U8 = struct.Struct("!B")
_I16 = struct.Struct("!h")
_U32 = struct.Struct("!I")
_I32 = struct.Struct("!i")
_U64 = struct.Struct("!Q")
_I64 = struct.Struct("!q")
_BEGIN = struct.Struct("!QqI")
_COMMIT = struct.Struct("!BQQq")
_STREAM_COMMIT = struct.Struct("!IBQQq")


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int):
        self.data = data
        self.pos = pos

    def take(self, fmt: struct.Struct):
        values = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return values

    def one(self, fmt: struct.Struct):
        value = fmt.unpack_from(self.data, self.pos)[0]
        self.pos += fmt.size
        return value

    def byte(self) -> str:
        value = self.data[self.pos : self.pos + 1]
        if not value:
            raise PgOutputError("message ends early")
        self.pos += 1
        return chr(value[0])

    def cstring(self) -> str:
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            raise PgOutputError("unterminated string")
        value = self.data[self.pos : end].decode("utf-8")
        self.pos = end + 1
        return value

    def raw(self, length: int) -> bytes:
        value = self.data[self.pos : self.pos + length]
        if len(value) != length:
            raise PgOutputError("message ends early")
        self.pos += length
        return bytes(value)

    def tuple_data(self) -> tuple[ColumnValue, ...]:
        if _compiled is not None:
            values, self.pos = _compiled.tuple_data(self.data, self.pos)
            return values
        return self.python_tuple_data()

    def python_tuple_data(self) -> tuple[ColumnValue, ...]:
        data = self.data
        pos = self.pos  # a local: the loop runs once per column of every change
        count = _I16.unpack_from(data, pos)[0]
        pos += 2
        values: list[ColumnValue] = []
        append = values.append
        length_at = _I32.unpack_from
        for _ in range(count):
            kind = data[pos]
            if kind == 0x74:  # 't'
                start = pos + 5
                pos = start + length_at(data, pos + 1)[0]
                append(data[start:pos].decode("utf-8"))
            elif kind == 0x6E:  # 'n'
                pos += 1
                append(None)
            elif kind == 0x75:  # 'u'
                pos += 1
                append(UNCHANGED_TOAST)
            elif kind == 0x62:  # 'b'
                start = pos + 5
                pos = start + length_at(data, pos + 1)[0]
                append(bytes(data[start:pos]))
            else:
                raise PgOutputError(f"unknown tuple column kind {chr(kind)!r}")
        if pos > len(data):
            raise PgOutputError("tuple data ends early")
        self.pos = pos
        return tuple(values)


def _unix_us(pg_us: int) -> int:
    return pg_us + PG_EPOCH_OFFSET_US


def decode(data: bytes, in_stream: bool = False) -> Message:
    if not data:
        raise PgOutputError("empty message")
    kind = data[0]
    if kind in _ROW_CHANGES and _compiled is not None:  # most messages: tested first
        fields = _compiled.row_change(data, in_stream)  # None: malformed, refused below with its error
        if fields is not None:
            relation_id, new, old, old_kind, xid = fields
            if kind == 0x55:  # 'U'
                return _make_update(relation_id, new, old, old_kind, xid)
            if kind == 0x49:  # 'I'
                return _make_insert(relation_id, new, xid)
            return _make_delete(relation_id, old, old_kind, xid)
    r = _Reader(data, 1)
    try:
        if kind in _ROW_CHANGES:
            return _row_change(kind, r, r.one(_U32) if in_stream else None)
        return _other(chr(kind), r, in_stream)
    except struct.error as error:
        raise PgOutputError(f"{chr(kind)!r} message ends early: {error}") from None


_ROW_CHANGES = frozenset(b"IUD")
_make_update, _make_insert, _make_delete = slots_maker(Update), slots_maker(Insert), slots_maker(Delete)


def _row_change(kind: int, r: _Reader, xid: int | None) -> Message:
    relation_id = r.one(_U32)
    marker = r.byte()
    if kind == 0x55:  # 'U'
        old = old_kind = None
        if marker in ("K", "O"):
            old_kind, old = marker, r.tuple_data()
            marker = r.byte()
        if marker != "N":
            raise PgOutputError(f"Update without a new tuple (got {marker!r})")
        return Update(relation_id, r.tuple_data(), old, old_kind, xid)
    if kind == 0x49:  # 'I'
        if marker != "N":
            raise PgOutputError("Insert without a new tuple")
        return Insert(relation_id, r.tuple_data(), xid)
    if marker not in ("K", "O"):
        raise PgOutputError(f"Delete without an old key or row (got {marker!r})")
    return Delete(relation_id, r.tuple_data(), marker, xid)


def _other(kind: str, r: _Reader, in_stream: bool) -> Message:
    if kind == "B":
        final_lsn, ts, xid = r.take(_BEGIN)
        return Begin(final_lsn, _unix_us(ts), xid)
    if kind == "C":
        flags, commit_lsn, end_lsn, ts = r.take(_COMMIT)
        return Commit(flags, commit_lsn, end_lsn, _unix_us(ts))
    if kind == "O":
        lsn = r.one(_U64)
        return Origin(lsn, r.cstring())
    if kind == "S":
        xid = r.one(_U32)
        return StreamStart(xid, r.one(_U8) == 1)
    if kind == "E":
        return StreamStop()
    if kind == "c":
        xid, flags, commit_lsn, end_lsn, ts = r.take(_STREAM_COMMIT)
        return StreamCommit(xid, flags, commit_lsn, end_lsn, _unix_us(ts))
    if kind == "A":
        xid = r.one(_U32)
        return StreamAbort(xid, r.one(_U32))
    xid = r.one(_U32) if in_stream else None
    if kind == "R":
        relation_id = r.one(_U32)
        namespace, name = r.cstring(), r.cstring()
        identity = r.byte()
        columns = []
        for _ in range(r.one(_I16)):
            flags = r.one(_U8)
            column_name = r.cstring()
            type_oid, type_modifier = r.one(_U32), r.one(_I32)
            columns.append(RelationColumn(column_name, type_oid, type_modifier, bool(flags & 1)))
        return Relation(relation_id, namespace, name, identity, tuple(columns), xid)
    if kind == "Y":
        oid = r.one(_U32)
        return Type(oid, r.cstring(), r.cstring(), xid)
    if kind == "T":
        count = r.one(_U32)
        options = r.one(_U8)
        relation_ids = tuple(r.one(_U32) for _ in range(count))
        return Truncate(relation_ids, bool(options & 1), bool(options & 2), xid)
    if kind == "M":
        flags = r.one(_U8)
        lsn = r.one(_U64)
        prefix = r.cstring()
        length = r.one(_U32)
        return LogicalMessage(bool(flags & 1), lsn, prefix, r.raw(length), xid)
    raise PgOutputError(f"unknown pgoutput message type {kind!r}")


class Decoder:
    """Decodes successive payloads of one replication stream, knowing when a protocol-2 stream block is open."""

    def __init__(self) -> None:
        self.in_stream = False

    def decode(self, data: bytes) -> Message:
        message = decode(data, self.in_stream)
        if isinstance(message, StreamStart):
            self.in_stream = True
        elif isinstance(message, StreamStop):
            self.in_stream = False
        return message


def lsn_from_text(text: str) -> int:
    """'16/B374D848' → int."""
    try:
        high, low = text.split("/")
        return (int(high, 16) << 32) | int(low, 16)
    except ValueError:
        raise ValueError(f"{text!r} is not an LSN (expected two hexadecimal numbers separated by '/')") from None


def lsn_to_text(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


if _compiled is not None:
    _compiled.configure(UNCHANGED_TOAST, PgOutputError)
