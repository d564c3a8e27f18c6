"""Table maps decoded once per table definition (connectors.mysql.table_maps): a binlog of many one-row
transactions on two tables, with ALTERs between them, reads the same with the library decoding every table map and
with the decoded maps reused; the library decodes each definition once."""

from __future__ import annotations

import pytest

from connectors.mysql import table_maps
from connectors.mysql.binlog import BinlogPosition, RowChange
from tests.mariadb.binlog_reading import binlog_status, read_to_end

pytestmark = pytest.mark.integration


def test_reused_table_maps_read_as_the_library_decodes_them(mariadb, mariadb_db, monkeypatch):
    mariadb.execute("CREATE TABLE t1 (id INT PRIMARY KEY, e ENUM('a','b'), s SET('x','y'), "
                    "v VARCHAR(10) CHARACTER SET latin1, d DECIMAL(8,2))",
                    "CREATE TABLE t2 (id INT PRIMARY KEY, b BLOB)", database=mariadb_db)
    start = binlog_status(mariadb)
    statements = []
    for i in range(30):
        if i == 10:
            statements.append("ALTER TABLE t1 ADD COLUMN w INT")
        if i == 20:
            statements.append("ALTER TABLE t1 MODIFY e ENUM('a','b','c')")
        columns = "(id, e, s, v, d)" if i < 10 else "(id, e, s, v, d, w)"
        values = f"({i}, 'b', 'x,y', 'é{i}', {i}.25)" if i < 10 else f"({i}, 'a', 'y', 'ü{i}', {i}.5, {i})"
        statements.append(f"INSERT INTO t1 {columns} VALUES {values}")  # noqa: S608 - the test's own values
        statements.append(f"INSERT INTO t2 VALUES ({i}, x'00ff{i:02x}')")  # noqa: S608
    mariadb.execute(*statements, database=mariadb_db)

    decodes = []

    def counted(self, *args, **kwargs):
        decodes.append(1)
        return library_init(self, *args, **kwargs)

    library_init = table_maps._library_init
    monkeypatch.setattr(table_maps, "_library_init", counted)
    reused = read_to_end(mariadb.cdc, 6301, BinlogPosition(gtids=start.gtids), mariadb_db)
    reused_decodes = len(decodes)
    monkeypatch.setattr(table_maps, "enabled", False)
    decoded = read_to_end(mariadb.cdc, 6302, BinlogPosition(gtids=start.gtids), mariadb_db)
    rows = [item for item in reused if isinstance(item, RowChange)]
    assert len(rows) == 60
    assert reused == decoded
    assert [row.schema for row in rows] == [row.schema for row in decoded if isinstance(row, RowChange)]
    assert {row.after["e"] for row in rows if row.schema.table == "t1"} == {"a", "b"}
    # t1 as created, after each ALTER, and t2: four definitions decoded, for 60 table maps
    assert reused_decodes == 4, reused_decodes
