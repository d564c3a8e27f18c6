"""Rows events read from the binlog stream's packets without python-mysql-replication's event objects.

The library parses every event in Python: its header, then for a rows event the table id, flags, column count and
bitmaps, about 20 µs an event (a rows event of a narrow table holds ~36 rows: 0.6 µs a row, most of the binlog
thread's CPU in a catch-up). Once the library has read a rows event of a table and the compiled module counted its
rows (binlog.BinlogReader learns its `Shape` from it), the next rows events of the same type under the same table
map are read here: the packet's header fields are unpacked in one call, and the bitmaps and rows are taken at the
offsets the library's reading showed. Every other packet goes to the library as it came: other events, a rows event
of a table not seen yet or whose table map changed (a new Table object: connectors.mysql.table_maps keeps it the same
while the definition is), a v2 rows event carrying extra data, rows the compiled module does not count (a zero date),
the end of the stream and errors.

`enabled = False` (the tests' comparison) leaves every packet to the library.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

import pymysql
from pymysqlreplication.constants import BINLOG

from connectors.mysql import compiled_rows

enabled = True
MAX_SHAPES = 1024  # rows events' shapes kept (a table gets a new id after DDL or a table-cache reload): then afresh
HEADER = 20  # the OK byte and the 19-byte event header
_HEADER_FIELDS = struct.Struct("<IxIII")  # timestamp, (type), server id, event size, end position
_V2 = frozenset({BINLOG.WRITE_ROWS_EVENT_V2, BINLOG.UPDATE_ROWS_EVENT_V2, BINLOG.DELETE_ROWS_EVENT_V2})
_UPDATES = frozenset({BINLOG.UPDATE_ROWS_EVENT_V1, BINLOG.UPDATE_ROWS_EVENT_V2})
_NO_EXTRA_DATA = b"\x02\x00"  # a v2 rows event's extra-data length when it carries none (the length counts itself)
# the server's errors for a connection gone, which the library answers by reconnecting (pymysqlreplication's
# MYSQL_EXPECTED_ERROR_CODES)
LOST_CONNECTION = frozenset({2013, 2006})


class RawRows(NamedTuple):
    """A rows event read here: what binlog.RowsRun needs of it."""

    op: str
    schema: object  # binlog.TableSchema
    layout: tuple
    body: bytes
    present: bytes
    present_after: bytes | None
    count: int
    server_id: int
    timestamp: int
    pos: int  # where the event starts
    event_size: int


@dataclass(frozen=True, slots=True)
class Shape:
    """What the library's reading of a rows event showed, for the next ones of its type and table map."""

    table: object  # the library's Table it was read under
    schema: object
    layout: tuple
    op: str
    offset: int  # where its rows start in the packet
    bitmap: int  # bytes of a columns bitmap
    count_at: int  # where its column count starts in the packet
    count: bytes  # the column count as the packet has it (a length-encoded integer)
    trailer: int  # checksum bytes after the rows


class PacketPeek:
    """Reads the stream connection's packets ahead of the library; installed once the stream is connected."""

    def __init__(self, stream, lost: type[Exception], lost_text: str):
        self.stream = stream
        self.connection = stream._stream_connection
        self.read_packet = self.connection._read_packet
        self.pending: list = []
        self.shapes: dict[tuple[int, int], Shape] = {}
        self.lost, self.lost_text = lost, lost_text
        # the library's fetchone reads its next packet through this: the one peeked at and left, if any
        self.connection._read_packet = self._library_read

    def _library_read(self, *args):
        if self.pending:
            return self.pending.pop()
        return self.read_packet(*args)

    def learn(self, event, schema, layout: tuple, op: str) -> None:
        """Records the shape of a rows event the library has read (up to its rows) and the compiled module counts."""
        if not enabled or event.event_type in _V2 and getattr(event, "extra_data_length", 2) != 2:
            return
        table = self.stream.table_map.get(event.table_id)
        if table is None:
            return
        packet = event.packet.packet
        data = packet.get_all_data()
        offset = len(data) - len(packet.read_all())
        packet.rewind(len(data) - offset)
        columns = event.number_of_columns
        bitmap = (columns + 7) // 8
        count = _length_encoded(columns)
        count_at = offset - bitmap * (2 if event.event_type in _UPDATES else 1) - len(count)
        if data[count_at:count_at + len(count)] != count:
            return
        if len(self.shapes) >= MAX_SHAPES:
            self.shapes.clear()
        self.shapes[event.table_id, event.event_type] = Shape(
            table, schema, layout, op, offset, bitmap, count_at, count,
            event.packet.event_size - (HEADER - 1) - event.event_size)

    def next(self) -> RawRows | None:
        """The next packet as RawRows when it is a rows event of a known shape; else None, the packet left for the
        library's next read."""
        try:
            packet = self.read_packet()
        except pymysql.err.OperationalError as error:
            if error.args and error.args[0] in LOST_CONNECTION:
                raise self.lost(self.lost_text) from None
            raise
        raw = self._rows(packet.get_all_data())
        if raw is None:
            self.pending.append(packet)
        return raw

    def _rows(self, data: bytes) -> RawRows | None:
        if len(data) <= HEADER + 6 or data[0] != 0:
            return None
        event_type = data[5]
        table_id = int.from_bytes(data[HEADER:HEADER + 6], "little")
        shape = self.shapes.get((table_id, event_type))
        if shape is None or self.stream.table_map.get(table_id) is not shape.table:
            return None
        if event_type in _V2 and data[HEADER + 8:HEADER + 10] != _NO_EXTRA_DATA:
            return None
        offset, bitmap, count_at = shape.offset, shape.bitmap, shape.count_at
        if data[count_at:count_at + len(shape.count)] != shape.count:
            return None
        if event_type in _UPDATES:
            present, present_after = data[offset - 2 * bitmap:offset - bitmap], data[offset - bitmap:offset]
        else:
            present, present_after = data[offset - bitmap:offset], None
        timestamp, server_id, event_size, end = _HEADER_FIELDS.unpack_from(data, 1)
        body = data[offset:1 + event_size - shape.trailer]
        count = compiled_rows.compiled.count_rows(body, shape.layout, present, present_after)
        if count is None:
            return None
        return RawRows(shape.op, shape.schema, shape.layout, body, present, present_after, count, server_id,
                       timestamp, end - event_size, event_size)


def _length_encoded(number: int) -> bytes:
    if number < 251:
        return bytes([number])
    if number < 1 << 16:
        return b"\xfc" + number.to_bytes(2, "little")
    if number < 1 << 24:
        return b"\xfd" + number.to_bytes(3, "little")
    return b"\xfe" + number.to_bytes(8, "little")
