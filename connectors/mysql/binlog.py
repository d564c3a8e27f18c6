"""Read the binlog as a replica does (python-mysql-replication), from a GTID position or a file/position.

The reader turns the library's events into row changes, transaction commits and DDL statements, each with the
position to restart from. A position names the start of a transaction (its GTID event) plus how much of it was
already handed out: `event` whole rows events and then `row` rows of the next one, as Debezium's MySQL offset
does. Opening at a position with event/row > 0 skips exactly that part of the first transaction.

The library reconnects by itself when the connection drops, from the position it was opened at; that would
hand out changes twice, so a second stream connection raises BinlogConnectionLost instead and the caller reopens
from the last position it stored.
"""

from __future__ import annotations

import codecs
import datetime
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from itertools import repeat
from typing import NamedTuple

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.event import (
    GtidEvent,
    HeartbeatLogEvent,
    MariadbAnnotateRowsEvent,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    XidEvent,
)
from pymysqlreplication.row_event import DeleteRowsEvent, RowsEvent, TableMapEvent, UpdateRowsEvent, WriteRowsEvent

from connectors import ConnectorError, HistoryLost, SourceUnreachable
from connectors.core.stream import ChangeSpan
from connectors.mysql import compiled_rows, rows_packets, table_maps  # noqa: F401 - table_maps: decoded once per table definition
from connectors.mysql.connection import ConnectionSettings, connect, connection_error
from connectors.mysql.gtid import MariaGtidPosition, MysqlGtidSet
from connectors.mysql.status import show_binlog_status

log = logging.getLogger(__name__)

# MariaDB GTID event flag: the group is one statement without BEGIN/COMMIT (DDL)
_FL_STANDALONE = 0x01
# Server errors when the requested position is no longer in the binlog (purged) or not valid
_HISTORY_LOST = {1236}
# The least silence of a binlog stream with heartbeats taken as a lost connection (stream_silence_seconds)
STREAM_SILENCE_MIN_SECONDS = 30.0
STREAM_READ_BUFFER = 128 * 1024  # bytes the stream connection reads from its socket at once, at most
MAX_WANTED_TABLES = 4096  # tables whose `wanted` answer a reader keeps (then it asks afresh)


class BinlogConnectionLost(SourceUnreachable):
    pass


# The values below are made per binlog event or row: nothing assigns to their fields, but they are not
# `frozen=True`, which sets each field through object.__setattr__ (a ColumnInfo took 2.5 µs, a rows event's
# TableSchema 12 µs); `unsafe_hash` keeps the hash frozen would give.
@dataclass(slots=True, unsafe_hash=True)
class BinlogPosition:
    """Debezium's MySQL offset fields: where a transaction starts and how much of it was handed out."""

    file: str | None = None
    pos: int | None = None
    gtids: str | None = None  # completed before this transaction: MariaDB `0-1-42,...` / MySQL `uuid:1-5,...`
    event: int = 0
    row: int = 0

    def to_offset(self) -> dict:
        offset = {"file": self.file, "pos": self.pos, "event": self.event, "row": self.row}
        if self.gtids:
            offset["gtids"] = self.gtids
        return offset

    @classmethod
    def from_offset(cls, offset: dict) -> BinlogPosition:
        return cls(file=offset.get("file"), pos=offset.get("pos"), gtids=offset.get("gtids") or None,
                   event=int(offset.get("event", 0)), row=int(offset.get("row", 0)))


@dataclass(slots=True, unsafe_hash=True)
class ColumnInfo:
    """What the binlog's table map (with binlog_row_metadata=FULL) says about a column."""

    name: str
    type_code: int  # pymysqlreplication.constants.FIELD_TYPE
    nullable: bool
    unsigned: bool = False
    charset: str | None = None  # None for numbers and temporals; "binary" for BINARY/VARBINARY/BLOB
    # its prefix names the character set; the binlog's `charset` is a Python codec (utf8 for utf8mb3 and utf8mb4), and
    # None there when the reader does not know the collation's id
    collation: str | None = None
    max_length: int | None = None  # bytes, for CHAR/VARCHAR
    precision: int | None = None  # DECIMAL
    scale: int | None = None  # DECIMAL
    fsp: int | None = None  # TIME/DATETIME/TIMESTAMP fractional digits
    bits: int | None = None  # BIT(n)
    length_size: int | None = None  # BLOB/TEXT family: 1 tiny, 2 plain, 3 medium, 4 long
    enum_values: tuple[str, ...] = ()
    set_values: tuple[str, ...] = ()
    primary: bool = False
    geometry_type: int | None = None  # spatial columns: 0 GEOMETRY, 1 POINT, 2 LINESTRING, … (MySQL's codes)
    # the declared type, when information_schema told it (the binlog does not): for error messages only
    type_name: str | None = field(default=None, compare=False)
    # its DEFAULT as information_schema.COLUMNS.COLUMN_DEFAULT shows it (the table map has none; see defaults_known)
    default: str | None = None
    # MariaDB's UUID, INET4, INET6: information_schema's DATA_TYPE ("uuid", …), where the table map shows BINARY(16)
    # or BINARY(4); None for every other column
    data_type: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class TableSchema:
    database: str
    table: str
    columns: tuple[ColumnInfo, ...]
    key_order: tuple[str, ...] = ()  # the primary key's columns in its own order, when known
    defaults_known: bool = False  # the columns' defaults were read (information_schema); a table map has none

    @property
    def primary_key(self) -> tuple[str, ...]:
        """In the key's order (Debezium's key fields), else in column order."""
        return self.key_order or tuple(c.name for c in self.columns if c.primary)


@dataclass(slots=True, unsafe_hash=True)
class RowChange:
    op: str  # "c", "u" or "d"
    schema: TableSchema
    before: dict | None
    after: dict | None
    gtid: str | None  # of this transaction
    file: str  # where the rows event is
    pos: int
    row: int  # index of this row in its rows event
    server_id: int
    ts_sec: int
    thread: int | None
    query: str | None  # the statement, when the server annotates rows events
    position: BinlogPosition  # restart here to continue after this row
    # when the reader read its rows event (ms since the epoch; 0: unknown): binlog times are whole seconds, the lag
    # is measured from this while it is within the change's second (source.lag_source_time)
    arrived_ms: int = field(default=0, compare=False)


class RowsRun:
    """A rows event whose rows the compiled module writes straight into Kafka messages (compiled_rows.write_run): its
    body and how to decode it, kept undecoded; what the RowChange of each of its rows would hold is computed from it
    (`row_change`, `position_after`). The change reader queues its rows as a RowsSpan; a single row `r` of it is the
    tuple `(run, r)`. Compared by identity."""

    __slots__ = ("op", "schema", "body", "layout", "present", "present_after", "count", "first", "gtid", "file", "pos",
                 "server_id", "ts_sec", "thread", "query", "start", "index", "arrived_ms", "_changes")

    def __init__(self, op, schema, body, layout, present, present_after, count, first, gtid, file, pos, server_id,
                 ts_sec, thread, query, start, index, arrived_ms):
        self.op, self.schema, self.body, self.layout = op, schema, body, layout
        self.present, self.present_after, self.count, self.first = present, present_after, count, first
        self.gtid, self.file, self.pos, self.server_id, self.ts_sec = gtid, file, pos, server_id, ts_sec
        self.thread, self.query, self.start, self.index, self.arrived_ms = thread, query, start, index, arrived_ms
        self._changes = None

    def position_after(self, row: int) -> BinlogPosition:
        """Where to restart to continue after row `row` (as RowChange.position)."""
        start = self.start
        if row == self.count - 1:
            return BinlogPosition(start.file, start.pos, start.gtids, self.index + 1, 0)
        return BinlogPosition(start.file, start.pos, start.gtids, self.index, row + 1)

    def row_change(self, row: int) -> RowChange:
        """Row `row` as the reader's RowChange (its rows decoded by compiled_rows.decode_rows, once)."""
        if self._changes is None:
            rows = compiled_rows.compiled.decode_rows(self.body, self.layout, self.present, self.present_after)
            if self.op == "c":
                images = [(None, values) for values in rows]
            elif self.op == "d":
                images = [(values, None) for values in rows]
            else:
                images = rows
            self._changes = [
                RowChange(self.op, self.schema, before, after, self.gtid, self.file, self.pos, number, self.server_id,
                          self.ts_sec, self.thread, self.query, self.position_after(number), self.arrived_ms)
                for number, (before, after) in enumerate(images)]
        return self._changes[row]


class RowsSpan(ChangeSpan):
    """Rows `first`..`end - 1` of a RowsRun, queued as one item (core.stream.ChangeSpan); each of its rows is the
    tuple `(run, row)`."""

    __slots__ = ("run", "first", "end")

    def __init__(self, run: RowsRun, first: int, end: int):
        self.run, self.first, self.end = run, first, end

    def __len__(self) -> int:
        return self.end - self.first

    def __iter__(self):
        return zip(repeat(self.run), range(self.first, self.end))

    def split(self, count: int) -> tuple[RowsSpan, RowsSpan]:
        middle = self.first + count
        return RowsSpan(self.run, self.first, middle), RowsSpan(self.run, middle, self.end)

    def __eq__(self, other) -> bool:
        return type(other) is RowsSpan and (self.run, self.first, self.end) == (other.run, other.first, other.end)

    def __hash__(self) -> int:
        return hash((id(self.run), self.first, self.end))

    def __repr__(self) -> str:
        return f"RowsSpan(rows {self.first}..{self.end - 1} of the rows event at {self.run.file}:{self.run.pos})"


def row_change(item) -> RowChange:
    """A queued `(run, row)` as its RowChange; any other item as it is."""
    return item[0].row_change(item[1]) if type(item) is tuple else item


def resume_position(item) -> BinlogPosition:
    """Where to read on after a queued item: for a `(run, row)` RowsRun.position_after (nothing decoded), for a
    RowsSpan that of its last row, for any other item its `position`."""
    if type(item) is tuple:
        return item[0].position_after(item[1])
    if type(item) is RowsSpan:
        return item.run.position_after(item.end - 1)
    return item.position


@dataclass(slots=True, unsafe_hash=True)
class TransactionCommit:
    gtid: str | None
    position: BinlogPosition  # the next transaction starts here (event = row = 0)
    ts_sec: int
    arrived_ms: int = field(default=0, compare=False)  # as RowChange's


@dataclass(slots=True, unsafe_hash=True)
class SchemaStatement:
    """A statement logged as a query outside BEGIN/COMMIT (DDL)."""

    database: str
    ddl: str
    gtid: str | None
    position: BinlogPosition  # after the statement
    ts_sec: int
    server_id: int
    start: BinlogPosition | None = None  # where the statement's own event starts: Debezium's source.pos
    arrived_ms: int = field(default=0, compare=False)  # as RowChange's


@dataclass(slots=True, unsafe_hash=True)
class Heartbeat:
    position: BinlogPosition


# Zero dates/datetimes ('0000-00-00') decode to None in the library; the reader marks them with this value so
# the type mapping can tell them from SQL NULL (Debezium writes epoch 0 for NOT NULL columns, null otherwise).
class _ZeroDate:
    def __repr__(self) -> str:
        return "ZERO_DATE"


ZERO_DATE = _ZeroDate()
_ZERO_SOURCES = {"out of date range", "out of datetime range", "out of datetime2 range"}


def _read_time2(self, column) -> datetime.timedelta:
    """TIME(fsp) as the server packs it (a signed fixed-point number of `hh:mm:ss` bit fields and a fraction).

    python-mysql-replication 1.0.17 decodes negative values with a fraction wrongly ('-838:59:59.000001' comes
    out 20 minutes off), so the reader installs this decoder in its place.
    """
    fsp = column.fsp or 0
    frac_bytes = (fsp + 1) // 2
    raw = self.packet.read(3 + frac_bytes)
    intpart = int.from_bytes(raw[:3], "big") - 0x800000
    if frac_bytes == 3:
        packed = int.from_bytes(raw, "big") - 0x800000000000
    else:
        frac = int.from_bytes(raw[3:], "big") if frac_bytes else 0
        if intpart < 0 and frac:
            intpart += 1
            frac -= 1 << (8 * frac_bytes)
        packed = (intpart << 24) + frac * (10_000 if frac_bytes == 1 else 100 if frac_bytes == 2 else 0)
    negative, magnitude = packed < 0, abs(packed)
    hms, micros = magnitude >> 24, magnitude % (1 << 24)
    value = datetime.timedelta(hours=(hms >> 12) % (1 << 10), minutes=(hms >> 6) % 64, seconds=hms % 64,
                               microseconds=micros)
    return -value if negative else value


RowsEvent._RowsEvent__read_time2 = _read_time2  # see _read_time2

# MySQL's utf16, utf32 and ucs2 are big-endian without a byte order mark; the library decodes a column with the Python
# codec of the same name, which reads them little-endian (utf16, utf32: wrong text, or a failure) or does not exist
# (ucs2: the raw bytes came through). Its latin1 is cp1252, whose five unassigned bytes MySQL's latin1 maps to the C1
# controls of the same number (the library's cp1252 failed on them).
_MYSQL_LATIN1 = "".join(bytes([b]).decode("cp1252", "ignore") or chr(b) for b in range(256))
_MYSQL_LATIN1_CODEC = codecs.CodecInfo(
    name="mysql-latin1",
    encode=lambda text, errors="strict": codecs.charmap_encode(text, errors, codecs.charmap_build(_MYSQL_LATIN1)),
    decode=lambda data, errors="strict": codecs.charmap_decode(data, errors, _MYSQL_LATIN1),
)
codecs.register(lambda name: _MYSQL_LATIN1_CODEC if name == "mysql_latin1" else None)
# (the library names latin1 columns by its codec, cp1252: MySQL has no cp1252 of its own)
_CODECS = {"utf16": "utf-16-be", "utf32": "utf-32-be", "ucs2": "utf-16-be", "utf16le": "utf-16-le",
           "latin1": "mysql-latin1", "cp1252": "mysql-latin1"}
_library_codec = RowsEvent.charset_to_encoding


def _codec(charset_name: str) -> str:
    return _CODECS.get(charset_name) or _library_codec(charset_name)


RowsEvent.charset_to_encoding = staticmethod(_codec)


@dataclass
class _Transaction:
    start: BinlogPosition
    gtid: str | None
    thread: int | None = None
    query: str | None = None
    events_done: int = 0
    standalone: bool = False


def stream_silence_seconds(heartbeat_seconds: float | None) -> float | None:
    """How long the binlog stream may stay silent before it is taken as lost (and reopened); None (never) without
    heartbeats, when an idle server sends nothing."""
    if not heartbeat_seconds:
        return None
    return max(STREAM_SILENCE_MIN_SECONDS, 20 * heartbeat_seconds)


@dataclass
class BinlogReader:
    """Iterate a server's binlog from `start` (None: from the current end). Blocks waiting for new events."""

    settings: ConnectionSettings
    server_id: int
    start: BinlogPosition | None = None
    only_schemas: list[str] | None = None
    only_tables: list[str] | None = None
    heartbeat_seconds: float | None = None
    blocking: bool = True
    # (database, table) -> whether its rows are wanted; the others' rows are never decoded, so a table the
    # connector does not capture cannot fail it (a value its decoder does not know) nor cost it CPU
    wanted: Callable[[str, str], bool] | None = None
    # MariaDB's annotate rows events (a rows event's statement: RowChange.query), asked of the server only when
    # wanted (include.query): each is one more event per transaction to send and decode
    annotations: bool = True
    # rows events of tables the compiled module decodes come out as RowsRun (one per event), not as RowChanges
    runs: bool = False
    _stream: BinLogStreamReader | None = field(default=None, init=False, repr=False)
    _tables: dict[int, TableFacts] = field(default_factory=dict, init=False, repr=False)
    # table id -> (the library's column list it was built from, the schema)
    _schemas: dict[int, tuple[list, TableSchema]] = field(default_factory=dict, init=False, repr=False)
    # table id -> (the schema, the compiled decoder's layout of its columns; None: the library decodes its rows)
    _layouts: dict[int, tuple[TableSchema, tuple | None]] = field(default_factory=dict, init=False, repr=False)
    # the bytes of the rows event whose rows are being handed out (its header and checksum included)
    rows_event_bytes: int = field(default=0, init=False, repr=False)
    # reads the rows events of known tables from the packets, when runs are wanted (rows_packets)
    _peek: rows_packets.PacketPeek | None = field(default=None, init=False, repr=False)
    # (database, table) -> `wanted`'s answer, asked once per table (its patterns cost about a microsecond a rows event)
    _wanted_tables: dict[tuple[str, str], bool] = field(default_factory=dict, init=False, repr=False)

    def __iter__(self) -> Iterator[RowChange | TransactionCommit | SchemaStatement | Heartbeat]:
        start = self._resolve_start()
        self._mariadb, self._file = start.mariadb, start.position.file
        self._gtids = start.position.gtids or ""
        self._stream = self._open(start)
        skip_events, skip_rows = start.position.event, start.position.row
        txn: _Transaction | None = None
        try:
            for event in self._events():
                if type(event) is rows_packets.RawRows:
                    if txn is None:
                        continue
                    schema = event.schema
                    index = self._counted(txn, skip_events, schema.database, schema.table)
                    if index is None:
                        continue
                    self.rows_event_bytes = event.event_size
                    run = RowsRun(event.op, schema, event.body, event.layout, event.present, event.present_after,
                                  event.count, skip_rows if index == skip_events else 0, txn.gtid, self._file,
                                  event.pos, event.server_id, event.timestamp, txn.thread, txn.query, txn.start,
                                  index, _now_ms())
                    if run.first < run.count:
                        yield run
                    continue
                if isinstance(event, RotateEvent):
                    self._file = event.next_binlog
                    continue
                if isinstance(event, TableMapEvent):
                    self._tables[event.table_id] = _table_facts(event)
                    continue
                if isinstance(event, MariadbGtidEvent | GtidEvent):
                    txn = _Transaction(start=self._here(event, at_start=True), gtid=event.gtid,
                                       standalone=bool(getattr(event, "flags", 0) & _FL_STANDALONE))
                    continue
                if isinstance(event, HeartbeatLogEvent):
                    yield Heartbeat(position=BinlogPosition(file=self._file, pos=event.packet.log_pos,
                                                            gtids=self._gtids or None))
                    continue
                if txn is None:
                    continue  # the middle of a transaction we did not see begin (only when opened at a raw pos)
                if isinstance(event, MariadbAnnotateRowsEvent):
                    txn.query = _text(event.sql_statement)
                    continue
                if isinstance(event, QueryEvent):
                    query = event.query.strip()
                    if query.upper() == "BEGIN":
                        txn.thread = event.slave_proxy_id
                        continue
                    if query.upper() != "COMMIT" and (txn.standalone or not self._mariadb):
                        self._complete(txn)
                        yield SchemaStatement(
                            database=_text(event.schema), ddl=query, gtid=txn.gtid,
                            position=self._here(event), ts_sec=event.timestamp, server_id=event.packet.server_id,
                            start=self._here(event, at_start=True), arrived_ms=_now_ms(),
                        )
                        txn = None
                        skip_events = skip_rows = 0
                        continue
                    if query.upper() == "COMMIT":
                        yield self._commit(txn, event)
                        txn = None
                        skip_events = skip_rows = 0
                    continue
                if isinstance(event, XidEvent):
                    yield self._commit(txn, event)
                    txn = None
                    skip_events = skip_rows = 0
                    continue
                if isinstance(event, WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent):
                    index = self._counted(txn, skip_events, event.schema, event.table)
                    if index is None:
                        continue
                    skip = skip_rows if index == skip_events else 0
                    run = self._run(event, txn, index, skip) if self.runs else None
                    if run is None:
                        yield from self._rows(event, txn, index, skip)
                    elif run.first < run.count:
                        yield run
        except pymysql.err.OperationalError as error:
            code = error.args[0] if error.args else None
            if code in _HISTORY_LOST:
                raise HistoryLost(
                    f"the server no longer has the binlog at {start.position.to_offset()}: {error.args[1]}. "
                    "Its binlogs were purged past the stored position; take a new snapshot "
                    "(snapshot.mode=when_needed does it on its own) or reset the offsets"
                ) from None
            raise connection_error(self.settings, error) from None
        finally:
            self.close()

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    # --- internals --------------------------------------------------------------------------------------------

    @dataclass(frozen=True)
    class _Start:
        position: BinlogPosition
        mariadb: bool

    def _resolve_start(self) -> BinlogReader._Start:
        connection = connect(self.settings)
        try:
            mariadb = "mariadb" in connection.get_server_info().lower()
            with connection.cursor() as cursor:
                position = self.start
                if position is None or (position.gtids is None and position.file is None):
                    position = _binlog_end(cursor)
                if mariadb and position.gtids is None and position.file is not None:
                    # file/pos alone: learn the GTID position there so every later position carries both
                    cursor.execute("SELECT BINLOG_GTID_POS(%s, %s)", (position.file, position.pos))
                    gtids = cursor.fetchone()[0]
                    position = replace(position, gtids=gtids if gtids is not None else None)
        finally:
            connection.close()
        return BinlogReader._Start(position=position, mariadb=mariadb)

    def _open(self, start: BinlogReader._Start) -> BinLogStreamReader:
        position = start.position
        # MariaDB: GTIDs survive failover and binlog renames, so they win over file/pos; an empty GTID position
        # (nothing logged with a GTID yet) only says "from the start of history" when there is no file/pos
        use_gtid = start.mariadb and (bool(position.gtids) or (position.gtids == "" and position.file is None))
        connections = {"stream": 0}

        def connect_once(**kwargs):
            if kwargs.get("db") != "information_schema":  # the library's control connection uses that database
                connections["stream"] += 1
                if connections["stream"] > 1:
                    raise BinlogConnectionLost(self._lost_text())
                # the server sends a heartbeat when it has nothing else to send: silence this long is a connection
                # gone without a word (a peer or middlebox that vanished, a half-open TCP connection)
                kwargs["read_timeout"] = stream_silence_seconds(self.heartbeat_seconds)
                connection = pymysql.connect(**kwargs)
                # pymysql reads through an 8 KiB buffer: a recv (and a hand-over of the interpreter lock) per rows
                # event. Nothing is buffered once connected, so the reader can be swapped for a larger one.
                connection._rfile = connection._sock.makefile("rb", buffering=STREAM_READ_BUFFER)
                return connection
            return pymysql.connect(**kwargs)

        kwargs = dict(
            connection_settings={**self.settings.pymysql_kwargs(), "charset": "utf8mb4"},
            server_id=self.server_id,
            blocking=self.blocking,
            only_events=[MariadbGtidEvent, GtidEvent, QueryEvent, XidEvent, RotateEvent, TableMapEvent,
                         WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, HeartbeatLogEvent,
                         *([MariadbAnnotateRowsEvent] if self.annotations else [])],
            only_schemas=self.only_schemas,
            only_tables=self.only_tables,
            pymysql_wrapper=connect_once,
            slave_heartbeat=self.heartbeat_seconds,
            enable_logging=False,
        )
        if use_gtid:
            self._file = None  # learnt from the server's first (fake) rotate event
            return BinLogStreamReader(**kwargs, is_mariadb=True, auto_position=position.gtids,
                                      annotate_rows_event=self.annotations)
        if not start.mariadb and position.gtids:
            return BinLogStreamReader(**kwargs, auto_position=position.gtids)
        return BinLogStreamReader(**kwargs, resume_stream=True, log_file=position.file, log_pos=position.pos)

    def _counted(self, txn: _Transaction, skip_events: int, database: str, table: str) -> int | None:
        """Counts a rows event into its transaction (Debezium's `event`); its index there, or None when it is one
        a resumed position already handed out or of a table whose rows are not wanted."""
        index = txn.events_done
        txn.events_done += 1
        if index < skip_events:
            return None
        if self.wanted is not None:
            wanted = self._wanted_tables.get((database, table))
            if wanted is None:
                if len(self._wanted_tables) >= MAX_WANTED_TABLES:
                    self._wanted_tables.clear()
                wanted = self._wanted_tables[database, table] = self.wanted(database, table)
            if not wanted:
                return None
        return index

    def _lost_text(self) -> str:
        return f"the binlog connection to {self.settings.describe()} dropped; reopen from the last stored position"

    def _events(self):
        self._peek = None
        peek_wanted = self.runs and compiled_rows.compiled is not None and rows_packets.enabled
        while True:
            if self._peek is not None:
                raw = self._peek.next()
                if raw is not None:
                    yield raw
                    continue
            event = self._stream.fetchone()
            if event is None:
                return
            if peek_wanted and self._peek is None:  # the stream is connected now
                self._peek = rows_packets.PacketPeek(self._stream, BinlogConnectionLost, self._lost_text())
            yield event
            # Handled. The library's event and its packet wrapper refer to each other (`event.packet`,
            # `packet.event`): unlinked, both and the event's bytes are freed now by reference counting instead of
            # waiting for the cyclic collector, which the streaming pipeline runs rarely (core.collector). Left
            # linked, a catch-up held thousands of rows events' packets (~27 MB of 5 kB events) in the collector's
            # older generations.
            packet = getattr(event, "packet", None)
            if packet is not None:
                packet.event = None

    def _here(self, event, at_start: bool = False) -> BinlogPosition:
        end = event.packet.log_pos
        pos = end - event.packet.event_size if at_start else end
        return BinlogPosition(file=self._file, pos=pos, gtids=self._gtids or None)

    def _complete(self, txn: _Transaction) -> None:
        if txn.gtid is None:
            return
        if self._mariadb:
            self._gtids = str(MariaGtidPosition.parse(self._gtids).advance(txn.gtid))
        else:
            self._gtids = str(MysqlGtidSet.parse(self._gtids).add(txn.gtid))

    def _commit(self, txn: _Transaction, event) -> TransactionCommit:
        self._complete(txn)
        return TransactionCommit(gtid=txn.gtid, position=self._here(event), ts_sec=event.timestamp,
                                 arrived_ms=_now_ms())

    def _schema_of(self, event) -> TableSchema:
        """The rows event's table, built once per table map (a transaction's rows events share it), and the same
        object as last time while the table is unchanged (so what is looked up by it is found by identity)."""
        cached = self._schemas.get(event.table_id)
        if cached is not None and cached[0] is event.columns:
            return cached[1]
        schema = _schema(event, self._tables.get(event.table_id, TableFacts((), ())))
        if cached is not None and cached[1] == schema:
            schema = cached[1]
        self._schemas[event.table_id] = (event.columns, schema)
        return schema

    def _rows(self, event, txn: _Transaction, index: int, skip: int) -> Iterator[RowChange]:
        schema = self._schema_of(event)
        if isinstance(event, WriteRowsEvent):
            op = "c"
        elif isinstance(event, UpdateRowsEvent):
            op = "u"
        else:
            op = "d"
        images = self._images(event, schema, op)
        start, file, packet = txn.start, self._file, event.packet
        pos, server_id, ts_sec = packet.log_pos - packet.event_size, packet.server_id, event.timestamp
        self.rows_event_bytes = packet.event_size
        arrived_ms = _now_ms()
        last = len(images) - 1
        for number in range(skip, len(images)):
            before, after = images[number]
            position = (BinlogPosition(start.file, start.pos, start.gtids, index + 1, 0) if number == last
                        else BinlogPosition(start.file, start.pos, start.gtids, index, number + 1))
            # positional: thirteen keywords cost a rows event's row about 0.3 µs more
            yield RowChange(op, schema, before, after, txn.gtid, file, pos, number, server_id, ts_sec, txn.thread,
                            txn.query, position, arrived_ms)

    def _run(self, event, txn: _Transaction, index: int, skip: int) -> RowsRun | None:
        """The rows event as a RowsRun, when the compiled module decodes all of its rows; else None."""
        if compiled_rows.compiled is None:
            return None
        schema = self._schema_of(event)
        columns = self._layout(event, schema)
        if columns is None:
            return None
        undecoded = compiled_rows.undecoded_rows(event, columns)
        if undecoded is None:
            return None
        body, count = undecoded
        packet = event.packet
        self.rows_event_bytes = packet.event_size
        op = "c" if isinstance(event, WriteRowsEvent) else "u" if isinstance(event, UpdateRowsEvent) else "d"
        if self._peek is not None:
            self._peek.learn(event, schema, columns, op)
        return RowsRun(op, schema, body, columns, event.columns_present_bitmap,
                       getattr(event, "columns_present_bitmap2", None) if op == "u" else None, count, skip, txn.gtid,
                       self._file, packet.log_pos - packet.event_size, packet.server_id, event.timestamp, txn.thread,
                       txn.query, txn.start, index, _now_ms())

    def _layout(self, event, schema: TableSchema) -> tuple | None:
        laid_out = self._layouts.get(event.table_id)
        if laid_out is None or laid_out[0] is not schema:
            laid_out = self._layouts[event.table_id] = (schema, compiled_rows.layout(schema))
        return laid_out[1]

    def _images(self, event, schema: TableSchema, op: str) -> list[tuple[dict | None, dict | None]]:
        """(before, after) of each row of the rows event: decoded by the compiled module when it can, else by the
        library."""
        columns = self._layout(event, schema) if compiled_rows.compiled is not None else None
        rows = compiled_rows.decoded_rows(event, columns) if columns is not None else None
        if rows is not None:
            if op == "u":
                return rows
            return [(None, row) for row in rows] if op == "c" else [(row, None) for row in rows]
        if op == "u":
            return [(_values(row["before_values"], row["before_none_sources"], schema),
                     _values(row["after_values"], row["after_none_sources"], schema)) for row in event.rows]
        if op == "c":
            return [(None, _values(row["values"], row["none_sources"], schema)) for row in event.rows]
        return [(_values(row["values"], row["none_sources"], schema), None) for row in event.rows]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


class TableFacts(NamedTuple):
    """What a table map tells beyond the columns python-mysql-replication keeps."""

    nullable: tuple[bool, ...]
    key_indexes: tuple[int, ...]  # the primary key's columns in the key's order (binlog_row_metadata=FULL)
    geometry_types: tuple[int, ...] = ()  # the spatial columns' own types, in column order


def _table_facts(event: TableMapEvent) -> TableFacts:
    bitmap = event.null_bitmask
    metadata = getattr(event, "optional_metadata", None)
    key = tuple(getattr(metadata, "simple_primary_key_list", None) or ()) \
        or tuple(getattr(metadata, "primary_keys_with_prefix", None) or ())
    return TableFacts(tuple(bool(bitmap[i // 8] & (1 << (i % 8))) for i in range(event.column_count)), key,
                      tuple(getattr(metadata, "geometry_type_list", None) or ()))


def _schema(event, facts: TableFacts) -> TableSchema:
    nullable = facts.nullable
    geometry_types = iter(facts.geometry_types)
    columns = []
    for i, column in enumerate(event.columns):
        columns.append(ColumnInfo(
            name=column.name,
            type_code=column.type,
            nullable=nullable[i] if i < len(nullable) else True,
            unsigned=bool(getattr(column, "unsigned", False)),
            charset=getattr(column, "character_set_name", None),
            collation=getattr(column, "collation_name", None),
            max_length=getattr(column, "max_length", None),
            precision=getattr(column, "precision", None),
            scale=getattr(column, "decimals", None),
            fsp=getattr(column, "fsp", None),
            bits=getattr(column, "bits", None),
            length_size=getattr(column, "length_size", None),
            enum_values=tuple(column.enum_values or ())[1:],  # the library puts "" (index 0, invalid) first
            set_values=tuple(column.set_values or ()),
            primary=bool(getattr(column, "is_primary", False)),
            geometry_type=next(geometry_types, None) if column.type == FIELD_TYPE.GEOMETRY else None,
        ))
    key_order = tuple(columns[i].name for i in facts.key_indexes if i < len(columns))
    return TableSchema(database=event.schema, table=event.table, columns=tuple(columns), key_order=key_order)


def _values(values: dict, none_sources: dict, schema: TableSchema) -> dict:
    if none_sources:
        values = dict(values)
        for name, source in none_sources.items():
            if source in _ZERO_SOURCES:
                values[name] = ZERO_DATE
            elif source == "empty set":
                values[name] = frozenset()
    return values


def reader_error(error: Exception) -> ConnectorError:
    """For callers that catch what the library raises outside iteration."""
    if isinstance(error, ConnectorError):
        return error
    return ConnectorError(f"reading the binlog failed: {error}")


def current_position(settings: ConnectionSettings) -> BinlogPosition:
    """Where the server's binlog ends now: a reader opened there reads every transaction committed after this call."""
    connection = connect(settings)
    try:
        with connection.cursor() as cursor:
            return _binlog_end(cursor)
    except pymysql.err.MySQLError as error:
        raise connection_error(settings, error) from None
    finally:
        connection.close()


def _binlog_end(cursor) -> BinlogPosition:
    status = show_binlog_status(cursor)
    return BinlogPosition(file=status.file, pos=status.position, gtids=status.gtids or None)
