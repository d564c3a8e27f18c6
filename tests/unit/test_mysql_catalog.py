"""catalog.binlog_form: values as pymysql returns them from a snapshot's SELECT, turned into the forms the binlog
reader decodes, so that snapshot rows and streamed rows map alike."""

from __future__ import annotations

import datetime

from pymysqlreplication.constants import FIELD_TYPE

from connectors.mysql.binlog import ZERO_DATE, ColumnInfo
from connectors.mysql.catalog import binlog_form


def column(type_code: int, **rest) -> ColumnInfo:
    return ColumnInfo(name="c", type_code=type_code, nullable=True, **rest)


def test_dates_pymysql_cannot_build_are_the_zero_date():
    # pymysql gives their text; the binlog reader decodes them (and the all-zero date) as ZERO_DATE
    for code, text in ((FIELD_TYPE.DATE, "0000-00-00"), (FIELD_TYPE.DATE, "2020-00-00"),
                       (FIELD_TYPE.DATE, "2020-01-00"), (FIELD_TYPE.DATETIME2, "0000-00-00 00:00:00"),
                       (FIELD_TYPE.DATETIME2, "2020-01-00 10:00:00.50"),
                       (FIELD_TYPE.TIMESTAMP2, "0000-00-00 00:00:00")):
        assert binlog_form(column(code), text) is ZERO_DATE, text


def test_other_values_keep_their_form():
    day = datetime.date(2024, 2, 29)
    assert binlog_form(column(FIELD_TYPE.DATE), day) == day
    assert binlog_form(column(FIELD_TYPE.DATE), None) is None
    assert binlog_form(column(FIELD_TYPE.VARCHAR), "0000-00-00") == "0000-00-00"  # a string that looks like one
    assert binlog_form(column(FIELD_TYPE.BIT, bits=4), b"\x05") == "0101"
    assert binlog_form(column(FIELD_TYPE.SET), "a,c") == frozenset({"a", "c"})
