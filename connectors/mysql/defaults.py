"""A column's DEFAULT as Debezium's MySQL / MariaDB connector reads it: the text its DDL parser keeps from the
clause, then that text in the form the column's value converter reads (BinlogDefaultValueConverter).

The clause comes from `information_schema.COLUMNS.COLUMN_DEFAULT`, which MariaDB writes as SHOW CREATE TABLE does
(the text Debezium's parser reads during a snapshot): a quoted literal (`'x''y'`), a number, a bit literal (`b'101'`),
`current_timestamp()`, `NULL`, or an expression. The parser keeps a literal without its quotes (inner quotes stay
doubled), a bit literal's digits, CURRENT_TIMESTAMP as `1970-01-01 00:00:00`, and no default for NULL or an
expression. The converter then reads, per type:

- integers, YEAR: the number; FLOAT / DOUBLE: a double; DECIMAL: the number at the column's scale (half up);
- BIT(1): true unless the digits are 0; BIT(n): the bits as the column's bytes;
- DATE / DATETIME: the date (and time); a zero date (`0000-00-00`, a zero month or day, `0`) is no default when the
  column is nullable, else the epoch; TIMESTAMP: the same, in UTC, where the epoch itself (so CURRENT_TIMESTAMP) also
  counts as zero; TIME: the (possibly negative) duration;
- ENUM / SET and the string types: the text; BINARY, VARBINARY and BLOB: its UTF-8 bytes;
- spatial types and MySQL's JSON: no default.

A text the converter cannot read gives no default, as in Debezium.
"""

from __future__ import annotations

import datetime
import decimal
import re

from pymysqlreplication.constants import FIELD_TYPE

from connectors.mysql.binlog import ColumnInfo

EPOCH_TEXT = "1970-01-01 00:00:00"
_NOW = re.compile(r"^(?:current_timestamp|now|localtime|localtimestamp)\s*(?:\(\s*\d*\s*\))?$", re.I)
_QUOTED = re.compile(r"^'((?:[^']|'')*)'$", re.S)
_INTRODUCED = re.compile(r"^_[A-Za-z0-9]+'((?:[^']|'')*)'$", re.S)
_BITS = re.compile(r"^b'([01]*)'$", re.I)
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_ZERO_DATE = re.compile(r"^(?:\d{4}-\d{2}-00|\d{4}-00-\d{2}|0000-\d{2}-\d{2})$")
_ZERO_TIMESTAMP = re.compile(r"^(?:\d{4}-\d{2}-00|\d{4}-00-\d{2}|0000-\d{2}-\d{2}) 00:00:00(?:\.\d{1,6})?$")
_DATE_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?)?$")
_TIME = re.compile(r"^(-?\d*):(\d*)(?::(\d*))?(?:\.(\d*))?$")
_DATE_AND_TIME = re.compile(r"^[0-9]*-[0-9]*-[0-9]* ([0-9]*:[0-9]*:[0-9]*(?:\.[0-9]*)?)$")

_INTEGERS = (FIELD_TYPE.TINY, FIELD_TYPE.SHORT, FIELD_TYPE.INT24, FIELD_TYPE.LONG, FIELD_TYPE.LONGLONG,
             FIELD_TYPE.YEAR)
_TEXTS = (FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING, FIELD_TYPE.BLOB, FIELD_TYPE.ENUM)


def default_expression(column_default: str | None) -> str | None:
    """The text Debezium's DDL parser keeps of a DEFAULT clause as `information_schema` shows it (None: none)."""
    if column_default is None or column_default.upper() == "NULL":
        return None
    text = column_default.strip()
    if _NOW.match(text):
        return EPOCH_TEXT
    for literal in (_QUOTED, _INTRODUCED, _BITS):
        found = literal.match(text)
        if found:
            return found.group(1)
    if _NUMBER.match(text):
        return text
    return None  # an expression: Debezium's parser keeps no default


def default_value(column: ColumnInfo, expression: str) -> object:
    """`expression` (from `default_expression`) in the form the column's binlog values take (what
    `types.mapping(column).value` converts); None when the column gets no default."""
    try:
        return _value(column, expression)
    except (ValueError, ArithmeticError, OverflowError):
        return None


def _value(column: ColumnInfo, text: str) -> object:
    code = column.type_code
    if code in _INTEGERS:
        return int(text.strip())
    if code in (FIELD_TYPE.FLOAT, FIELD_TYPE.DOUBLE):
        return float(text.strip())
    if code == FIELD_TYPE.NEWDECIMAL:
        number = decimal.Decimal(text.strip())
        return number.quantize(decimal.Decimal(1).scaleb(-(column.scale or 0)), rounding=decimal.ROUND_HALF_UP)
    if code == FIELD_TYPE.BIT:
        return _bits(column, text.strip())
    if code in (FIELD_TYPE.DATE, FIELD_TYPE.NEWDATE):
        return _date(column, text.strip())
    if code in (FIELD_TYPE.DATETIME, FIELD_TYPE.DATETIME2):
        return _datetime(column, text.strip())
    if code in (FIELD_TYPE.TIMESTAMP, FIELD_TYPE.TIMESTAMP2):
        return _timestamp(column, text.strip())
    if code in (FIELD_TYPE.TIME, FIELD_TYPE.TIME2):
        return _time(text.strip())
    if code == FIELD_TYPE.SET:
        return frozenset(member for member in text.split(",") if member)
    if code in _TEXTS:
        return text
    return None  # spatial types, MySQL's JSON


def _bits(column: ColumnInfo, digits: str) -> str | None:
    """The bit string the column's converter reads (BIT(1): "1" or "0")."""
    if (column.bits or 1) == 1:
        try:
            return "1" if int(digits) != 0 else "0"  # Short.parseShort(…) != 0
        except ValueError:
            return "1" if digits.lower() == "true" else "0"
    return digits if digits else None


def _epoch_or_none(column: ColumnInfo, epoch):
    """A zero date's default: none when the column is nullable, else the epoch."""
    return None if column.nullable else epoch


def _date(column: ColumnInfo, text: str) -> datetime.date | None:
    if _ZERO_DATE.match(text) or _ZERO_TIMESTAMP.match(text) or text == "0":
        return _epoch_or_none(column, datetime.date(1970, 1, 1))
    found = _DATE_TIME.match(text)
    if not found:
        return _epoch_or_none(column, datetime.date(1970, 1, 1))
    try:
        return datetime.date(int(found.group(1)), int(found.group(2)), int(found.group(3)))
    except ValueError:
        return _epoch_or_none(column, datetime.date(1970, 1, 1))


def _parsed_datetime(text: str) -> datetime.datetime:
    found = _DATE_TIME.match(text)
    if not found:
        raise ValueError(text)
    year, month, day, hour, minute, second, fraction = found.groups()
    micros = int((fraction or "0").ljust(6, "0")[:6])
    return datetime.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                             micros)


def _datetime(column: ColumnInfo, text: str) -> datetime.datetime | None:
    epoch = datetime.datetime(1970, 1, 1)
    if _ZERO_TIMESTAMP.match(text) or text == "0":
        return _epoch_or_none(column, epoch)
    try:
        return _parsed_datetime(text)
    except ValueError:
        return _epoch_or_none(column, epoch)


def _timestamp(column: ColumnInfo, text: str) -> datetime.datetime | None:
    if _ZERO_TIMESTAMP.match(text) or text in ("0", EPOCH_TEXT):
        # the epoch is the column's converter's zero value: "1970-01-01T00:00:00Z" for a NOT NULL column
        return _epoch_or_none(column, datetime.datetime(1970, 1, 1))
    return _parsed_datetime(text)  # read in the JVM's zone by Debezium: UTC here, as the server's


def _time(text: str) -> datetime.timedelta:
    within = _DATE_AND_TIME.match(text)
    if within:
        text = within.group(1)
    found = _TIME.match(text)
    if not found:
        raise ValueError(text)
    hours, minutes, seconds, fraction = found.groups()
    negative = hours.startswith("-")
    magnitude = datetime.timedelta(hours=int(hours.lstrip("-") or 0), minutes=int(minutes or 0),
                                   seconds=int(seconds or 0),
                                   microseconds=int((fraction or "0").ljust(6, "0")[:6]))
    return -magnitude if negative else magnitude
