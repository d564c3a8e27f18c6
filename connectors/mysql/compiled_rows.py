"""The rows of a binlog rows event decoded by the compiled module (csrc/binrows.c, built by scripts/build_extensions.py)
instead of python-mysql-replication's per-value Python: the same values in the same dicts, for tables whose every column
is of a kind below (integers, floats, DECIMAL, YEAR, DATE, DATETIME, TIMESTAMP, TIME, strings and blobs of any character
set, ENUM, SET: a SET's values a frozenset, as binlog._values makes the library's empty set; BIT: its bits' text). Other
tables (MySQL's JSON, geometry), an event with a zero date, an ENUM index past its values, a partial JSON update, or no
module (not built, or built from older sources): the library decodes the rows, as before
(tests/mariadb/test_compiled_rows.py compares the two on real events).

`write_row` writes a row's JSON from those values as envelope.TableEvents' Python loop does: an int or a str of a
column without a rule or a logical type in C, any other value by the column's own writer; `write_event` writes a
streamed row's whole event value around its rows in one call, as TableEvents.append_streamed's f-string does, and
`write_key` a message key's bytes. `count_rows` counts a rows event's rows and checks that `decode_rows` would decode
them, without decoding them; `write_run` writes a run of such an event's rows straight into Kafka messages from its
bytes (binlog.RowsRun, envelope.TableEvents.append_run; tests/unit/test_binrows_write_run.py compares it with the
Python way)."""

from __future__ import annotations

import codecs
import dataclasses

from pymysqlreplication.constants import BINLOG, FIELD_TYPE
from pymysqlreplication.row_event import RowsEvent

from connectors.kafka.sink import OutMessage

try:
    from connectors.mysql import _binrows as compiled
except ImportError:
    compiled = None
if compiled is not None and not all(hasattr(compiled, name)
                                   for name in ("decode_rows", "write_row", "write_event", "write_key", "count_rows",
                                                "write_run", "slots_maker")):
    compiled = None
write_row = compiled.write_row if compiled is not None else None  # (values, writers) -> a row's JSON, or None
# (parts, before, after, row, writers) -> a streamed row's event value (TableEvents.append_streamed), or None
write_event = compiled.write_event if compiled is not None else None
# (values, key writers, head, tail) -> a message key's bytes (TableEvents._key_json), or None
write_key = compiled.write_key if compiled is not None else None
# (body, layout, present, present_after, first, end, op, parts, table, messages) -> the row it stopped before: a run
# of a rows event's rows written into messages (envelope.TableEvents.append_run), or None without the module
write_run = compiled.write_run if compiled is not None else None
# OutMessage(topic, key, value, headers) as write_run makes it: its slots set without its generated __init__
make_message = (compiled.slots_maker(OutMessage, tuple(field.name for field in dataclasses.fields(OutMessage)))
                if compiled is not None else OutMessage)
# write_row's column kinds (envelope.TableEvents' writers); WRITE_LONG: an int64 column wrapping values from 2^63 as
# Java's long (types.java_long); WRITE_DOUBLE a float64 (a float), WRITE_DECIMAL a Decimal field (a Decimal, its scale
# given as `WRITE_DECIMAL | scale << 8`), WRITE_DATE days from the epoch (a date), WRITE_MICROS and WRITE_MILLIS
# microseconds and milliseconds from the epoch (a naive datetime), WRITE_ZONED a TIMESTAMP's ISO text (a naive
# datetime in UTC; `WRITE_ZONED | fsp << 8`), WRITE_MICROTIME and WRITE_MILLITIME a TIME's microseconds and
# milliseconds (a timedelta), WRITE_YEAR a YEAR (an int, 1900 written 0), WRITE_FLOAT a float32 (a float): any other
# value by the column's writer
WRITE_CALL, WRITE_INTEGER, WRITE_STRING, WRITE_LONG, WRITE_DOUBLE, WRITE_DECIMAL, WRITE_DATE, WRITE_MICROS, \
    WRITE_MILLIS, WRITE_ZONED, WRITE_MICROTIME, WRITE_MILLITIME, WRITE_YEAR, WRITE_FLOAT = range(14)
WRITE_NULL = 0x80  # a kind's flag: the column's writer writes None as `null` (the compiled writer writes it itself)

# binrows.c's column kinds
(INT8, UINT8, INT16, UINT16, INT24, UINT24, INT32, UINT32, INT64, UINT64, FLOAT, DOUBLE, STRING, YEAR, DATE, DATETIME2,
 TIMESTAMP2, TIME2, NEWDECIMAL, ENUM_INDEX, SET_BITS, BIT_STRING) = range(22)
_TEMPORALS = {FIELD_TYPE.DATETIME2: DATETIME2, FIELD_TYPE.TIMESTAMP2: TIMESTAMP2, FIELD_TYPE.TIME2: TIME2}
_INTEGERS = {FIELD_TYPE.TINY: (INT8, UINT8), FIELD_TYPE.SHORT: (INT16, UINT16), FIELD_TYPE.INT24: (INT24, UINT24),
             FIELD_TYPE.LONG: (INT32, UINT32), FIELD_TYPE.LONGLONG: (INT64, UINT64)}
_ROWS_EVENTS = frozenset({BINLOG.WRITE_ROWS_EVENT_V1, BINLOG.WRITE_ROWS_EVENT_V2, BINLOG.UPDATE_ROWS_EVENT_V1,
                          BINLOG.UPDATE_ROWS_EVENT_V2, BINLOG.DELETE_ROWS_EVENT_V1, BINLOG.DELETE_ROWS_EVENT_V2})


def _encoding(charset: str | None) -> str | None:
    """The codec the library decodes a string column with (None: it keeps the bytes, its codec lookup failing)."""
    encoding = RowsEvent.charset_to_encoding(charset) if charset is not None else "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        return None
    return encoding


def _column(column) -> tuple | None:
    """(name, kind, size, encoding or scale or values) of a binlog.ColumnInfo (size: a string's length prefix, a
    temporal's fraction digits, a decimal's precision, an ENUM's or SET's bytes, a BIT's bits); None: a kind binrows.c
    does not decode."""
    kind = column.type_code
    if kind in _INTEGERS:
        return column.name, _INTEGERS[kind][column.unsigned], 0, None
    if kind == FIELD_TYPE.FLOAT:
        return column.name, FLOAT, 0, None
    if kind == FIELD_TYPE.DOUBLE:
        return column.name, DOUBLE, 0, None
    if kind == FIELD_TYPE.YEAR:
        return column.name, YEAR, 0, None
    if kind == FIELD_TYPE.DATE:
        return column.name, DATE, 0, None
    if kind in _TEMPORALS:
        return column.name, _TEMPORALS[kind], column.fsp or 0, None
    if kind == FIELD_TYPE.NEWDECIMAL and column.precision and column.scale is not None:
        return column.name, NEWDECIMAL, column.precision, column.scale
    if kind in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING) and column.max_length is not None:
        return column.name, STRING, 2 if column.max_length > 255 else 1, _encoding(column.charset)
    if kind == FIELD_TYPE.BLOB and column.length_size in (1, 2, 3, 4):
        return column.name, STRING, column.length_size, _encoding(column.charset)
    # ENUM and SET: the value's bytes follow from the count of values as the server stores them (1 or 2; 1-4 or 8)
    if kind == FIELD_TYPE.ENUM and column.enum_values:
        return column.name, ENUM_INDEX, 1 if len(column.enum_values) < 256 else 2, ("", *column.enum_values)
    if kind == FIELD_TYPE.SET and column.set_values:
        size = (len(column.set_values) + 7) // 8
        return column.name, SET_BITS, 8 if size > 4 else size, tuple(column.set_values)
    if kind == FIELD_TYPE.BIT and column.bits and 1 <= column.bits <= 64:
        return column.name, BIT_STRING, column.bits, None
    return None


def layout(schema) -> tuple | None:
    """binrows.c's description of a binlog.TableSchema's columns (None: the compiled module cannot decode its
    rows)."""
    if compiled is None:
        return None
    columns = tuple(_column(column) for column in schema.columns)
    if not columns or any(c is None or not c[0] for c in columns):
        return None  # a type it does not decode, or a column without a name (the library names it itself)
    if len({c[0] for c in columns}) != len(columns):
        return None
    return columns


def _body(event, columns: tuple):
    """The rows of `event` (a rows event the library has not read rows from yet) as a memoryview; None: another
    event type, or a layout of another column count."""
    if event.event_type not in _ROWS_EVENTS or event.number_of_columns != len(columns):
        return None
    # read from pymysql's packet under the library's reader, left where it was: when the compiled module hands the
    # event back the library reads it (the reader's `unread` would not do: it appends to what the library unreads)
    packet = event.packet.packet
    rest = packet.read_all()
    packet.rewind(len(packet.get_all_data()) - len(rest))
    return memoryview(rest)[:event.event_size - event.packet.read_bytes]  # not the checksum after it


def undecoded_rows(event, columns: tuple) -> tuple[bytes, int] | None:
    """(the rows' bytes, how many rows) of `event`, when `decoded_rows` would decode them (nothing is decoded: the
    compiled module checks and counts them); None: the library is to read them."""
    body = _body(event, columns)
    if body is None:
        return None
    count = compiled.count_rows(body, columns, event.columns_present_bitmap,
                                getattr(event, "columns_present_bitmap2", None))
    return None if count is None else (bytes(body), count)


def decoded_rows(event, columns: tuple) -> list | None:
    """The rows of `event` (a rows event the library has not read rows from yet): a dict per row for writes and
    deletes, a (before, after) pair per row for updates. None: the library is to read them (another event type)."""
    body = _body(event, columns)
    if body is None:
        return None
    try:
        return compiled.decode_rows(body, columns, event.columns_present_bitmap,
                                    getattr(event, "columns_present_bitmap2", None))
    except ValueError:
        return None  # a value the library is to decode (a zero date), or an event it will say is malformed
