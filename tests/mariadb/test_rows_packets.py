"""Rows events read from the packets (connectors.mysql.rows_packets) against the library's reading of the same binlog:
inserts, updates and deletes of many rows (several rows events a statement), two tables, an ALTER between them (a new
table map), a zero date (rows the compiled module leaves to the library) and a resume in the middle of a rows event
give the same runs, rows and positions with the packets read ahead as with every event read by the library; and the
packets did read most rows events."""

from __future__ import annotations

import pytest

from connectors.mysql import rows_packets
from connectors.mysql.binlog import BinlogPosition, RowsRun
from tests.mariadb.binlog_reading import binlog_status, read_to_end

pytestmark = pytest.mark.integration


def _flattened(items: list) -> list:
    """Each run as its rows' RowChanges and the run's own fields; other items as they are."""
    out = []
    for item in items:
        if isinstance(item, RowsRun):
            out.append(("run", item.op, item.schema, item.body, item.present, item.present_after, item.count,
                        item.first, item.gtid, item.file, item.pos, item.server_id, item.ts_sec, item.index))
            out.extend(item.row_change(row) for row in range(item.first, item.count))
        else:
            out.append(item)
    return out


def _read(mariadb, server_id: int, start: BinlogPosition, database: str, monkeypatch, packets: bool) -> list:
    monkeypatch.setattr(rows_packets, "enabled", packets)
    return read_to_end(mariadb.cdc, server_id, start, database, runs=True)


@pytest.fixture
def counted_packet_rows(monkeypatch):
    read = []
    library_next = rows_packets.PacketPeek.next

    def counted(self):
        raw = library_next(self)
        if raw is not None:
            read.append(raw)
        return raw

    monkeypatch.setattr(rows_packets.PacketPeek, "next", counted)
    return read


def test_rows_read_from_the_packets_are_those_the_library_reads(mariadb, mariadb_db, monkeypatch,
                                                                counted_packet_rows):
    mariadb.execute("CREATE TABLE t1 (id INT PRIMARY KEY, n INT, v VARCHAR(120))",
                    "CREATE TABLE t2 (id BIGINT PRIMARY KEY, at DATETIME(3), amount DECIMAL(12,2), d DATE)",
                    database=mariadb_db)
    start = binlog_status(mariadb)
    statements = []
    for batch in range(4):
        if batch == 2:
            statements.append("ALTER TABLE t1 ADD COLUMN w INT")
        rows = ", ".join(f"({batch * 300 + i}, {i}, '{'v' * 100}{i}')" for i in range(300))
        statements.append(f"INSERT INTO t1 (id, n, v) VALUES {rows}")  # noqa: S608 - the test's own values
        rows = ", ".join(f"({batch * 300 + i}, '2026-11-{1 + i % 28:02d} 10:00:{i % 60:02d}.{i:03d}', -{i}.25, "
                         f"'1969-12-{1 + i % 28:02d}')" for i in range(300))
        statements.append(f"INSERT INTO t2 VALUES {rows}")  # noqa: S608
        statements.append(f"UPDATE t1 SET n = n + 1, v = CONCAT(v, 'u') WHERE id >= {batch * 300}")  # noqa: S608
        statements.append(f"DELETE FROM t2 WHERE id % 3 = 0 AND id >= {batch * 300}")  # noqa: S608
    statements += ["SET SESSION sql_mode = ''", "INSERT INTO t2 VALUES (100000, '2026-01-01', 1, '0000-00-00')",
                   "INSERT INTO t2 VALUES (100001, '2026-01-01', 1, '2026-01-01')"]
    mariadb.execute(*statements, database=mariadb_db)

    from_packets = _read(mariadb, 6401, BinlogPosition(gtids=start.gtids), mariadb_db, monkeypatch, True)
    packet_rows = len(counted_packet_rows)
    by_library = _read(mariadb, 6402, BinlogPosition(gtids=start.gtids), mariadb_db, monkeypatch, False)
    assert len(counted_packet_rows) == packet_rows  # the library read every event the second time
    runs = [item for item in by_library if isinstance(item, RowsRun)]
    assert sum(run.count for run in runs) > 3_000 and {run.op for run in runs} == {"c", "u", "d"}
    assert _flattened(from_packets) == _flattened(by_library)
    # every rows event but the first of each table map and operation, and the zero date's, came from the packets
    assert packet_rows >= len(runs) - 20, (packet_rows, len(runs))
    assert {raw.op for raw in counted_packet_rows} == {"c", "u", "d"}

    # resumed in the middle of a rows event the packets read: the same rows from there
    middle = next(run for run in runs[len(runs) // 2:] if run.count > 2)
    resume = middle.position_after(middle.count // 2)
    assert resume.row > 0
    from_packets = _read(mariadb, 6403, resume, mariadb_db, monkeypatch, True)
    by_library = _read(mariadb, 6404, resume, mariadb_db, monkeypatch, False)
    assert _flattened(from_packets) == _flattened(by_library)
    first = next(item for item in by_library if isinstance(item, RowsRun))
    assert (first.pos, first.first) == (middle.pos, middle.count // 2 + 1)
