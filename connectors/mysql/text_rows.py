"""The rows of a SELECT read by the compiled module (csrc/textrows.c, in _binrows) straight from pymysql's
connection instead of by pymysql's per-row Python parsing, which took about half of a snapshot chunk's CPU: the
same tuples of the same values, pymysql's own converter called only for columns that are neither integers, UTF-8
text, binary strings, decimals, floats, dates nor datetimes (nor for a date's text those do not build, such as a zero
date) (tests/mariadb/test_text_rows.py compares the two over every column type).

pymysql has no public access to a result's packets: the query is sent unbuffered (`Connection.query`), and the
compiled reader reads the row packets from the connection's socket file, then hands the packet that ends them back
to pymysql's state (its sequence number, its result's end, an error packet's exception). Without the module, or
with a pymysql that lacks what this relies on, `cursor.fetchall()` reads the rows as before."""

from __future__ import annotations

import codecs
import decimal

import pymysql
from pymysql import converters as pymysql_converters
from pymysql.constants import CR
from pymysql.protocol import MysqlPacket

from connectors.mysql.compiled_rows import compiled

read_text_rows = getattr(compiled, "text_rows", None)  # (read, sequence, kinds, calls) -> (rows, last, sequence)
INTEGER, UTF8, BYTES, CALL, DATE, DATETIME, DECIMAL, FLOAT = range(8)  # textrows.c's column kinds
# pymysql's converters textrows.c makes the same values as, beside int (DATE and DATETIME: for the texts they build a
# date or datetime from; any other text, such as a zero date, goes to the converter)
_MADE = {pymysql_converters.convert_date: DATE, pymysql_converters.convert_datetime: DATETIME, decimal.Decimal: DECIMAL,
         float: FLOAT}
_CONNECTION_STATE = ("_rfile", "_next_seq_id", "_result", "_force_close", "query")


def select(connection, sql: str, params=None) -> list[tuple]:
    """The rows of `sql` (with `params` as pymysql's cursor escapes them), as `cursor.fetchall()` gives them."""
    if read_text_rows is None or not all(hasattr(connection, name) for name in _CONNECTION_STATE):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())
    with connection.cursor() as cursor:
        query = cursor.mogrify(sql, params)
    connection.query(query, unbuffered=True)
    result = connection._result  # noqa: SLF001 - pymysql's result of the query just sent
    if not result.unbuffered_active:
        return []  # no result set
    kinds, calls = _columns(result.converters)
    try:
        rows, last, sequence = read_text_rows(connection._rfile.read, connection._next_seq_id, kinds, calls)  # noqa: SLF001
    except UnicodeDecodeError:
        connection._force_close()  # noqa: SLF001 - the rest of the result is still on the socket
        raise
    except OSError as error:
        connection._force_close()  # noqa: SLF001
        raise pymysql.err.OperationalError(CR.CR_SERVER_LOST, f"Lost connection to MySQL server during query ({error})"
                                           ) from None
    except ValueError as error:
        connection._force_close()  # noqa: SLF001
        raise pymysql.err.InternalError(str(error)) from None
    connection._next_seq_id = sequence  # noqa: SLF001
    packet = MysqlPacket(last, connection.encoding)
    result.unbuffered_active = False
    result.connection = None
    if packet.is_error_packet():
        packet.raise_for_error()
    return rows


def _columns(converters: list) -> tuple[bytes, tuple]:
    """textrows.c's kind of each column and, for CALL, what pymysql does with its bytes (`converters`: a
    result's (encoding, converter) of each column)."""
    kinds = bytearray()
    calls = []
    for encoding, converter in converters:
        codec = codecs.lookup(encoding).name if encoding else None
        if converter is int and codec == "ascii":
            kinds.append(INTEGER)
            calls.append(None)
        elif converter is None and codec == "utf-8":
            kinds.append(UTF8)
            calls.append(None)
        elif converter is None and codec is None:
            kinds.append(BYTES)
            calls.append(None)
        else:
            made = _MADE.get(converter) if codec == "ascii" else None
            kinds.append(CALL if made is None else made)
            calls.append(_converted(encoding, converter))
    return bytes(kinds), tuple(calls)


def _converted(encoding: str | None, converter):
    """pymysql's reading of a column's bytes: decoded by its encoding, then converted."""
    if converter is None:
        return lambda data: data.decode(encoding)
    if encoding is None:
        return converter
    return lambda data: converter(data.decode(encoding))
