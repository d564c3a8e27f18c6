"""The binlog reader decodes the rows of the tables it is asked for only (`BinlogReader.wanted`): another table's
rows, in the same transactions, are skipped undecoded, and resuming inside a transaction still counts them."""

from __future__ import annotations

import pytest
from pymysqlreplication.row_event import RowsEvent

from connectors.mysql import compiled_rows
from connectors.mysql.binlog import BinlogPosition, RowChange, TransactionCommit
from connectors.mysql.connection import connect
from tests.mariadb.binlog_reading import binlog_status, read_to_end
from tests.mariadb.test_binlog_reader import ids

pytestmark = pytest.mark.integration


def read(mariadb, database, start):
    return read_to_end(mariadb.cdc, 6202, start, database, wanted=lambda db, table: (db, table) == (database, "t"))


def test_rows_of_unwanted_tables_are_never_decoded_and_resume_still_counts_them(mariadb, mariadb_db, monkeypatch):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE other (id INT PRIMARY KEY)",
                    database=mariadb_db)
    start = binlog_status(mariadb)
    connection = connect(mariadb.admin.with_database(mariadb_db))
    try:
        with connection.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("INSERT INTO other VALUES (1), (2)")  # rows event 0, not wanted
            cursor.execute("INSERT INTO t VALUES (1), (2), (3)")  # rows event 1
            cursor.execute("INSERT INTO other VALUES (3)")  # rows event 2, not wanted
            cursor.execute("INSERT INTO t VALUES (4), (5)")  # rows event 3
            cursor.execute("COMMIT")
    finally:
        connection.close()
    decoded = []
    fetch = RowsEvent._fetch_rows

    def recording(event):
        decoded.append(event.table)
        fetch(event)

    monkeypatch.setattr(RowsEvent, "_fetch_rows", recording)
    decode = compiled_rows.decoded_rows

    def recording_compiled(event, columns):  # the compiled decoder, where it decodes the table's rows
        decoded.append(event.table)
        return decode(event, columns)

    monkeypatch.setattr(compiled_rows, "decoded_rows", recording_compiled)
    changes = read(mariadb, mariadb_db, BinlogPosition(gtids=start.gtids))
    rows = [c for c in changes if isinstance(c, RowChange)]
    assert ids(rows) == [("c", n) for n in range(1, 6)]
    assert set(decoded) == {"t"}, decoded
    assert [c for c in changes if isinstance(c, TransactionCommit)]
    for done in range(1, 5):  # resuming after each row handed out: the unwanted events still count
        rest = read(mariadb, mariadb_db, rows[done - 1].position)
        assert ids(rest) == [("c", n) for n in range(done + 1, 6)], rows[done - 1].position
