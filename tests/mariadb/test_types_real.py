"""Every type on the real MariaDB, written by SQL, read back through the binlog reader and mapped as Debezium
documents it (MySQL connector data type mappings, default modes unless a test says otherwise)."""

from __future__ import annotations

import pytest

from connectors.mysql import catalog
from connectors.mysql.binlog import BinlogPosition, RowChange
from connectors.mysql.connection import connect
from connectors.mysql.status import show_binlog_status
from connectors.mysql.types import TypeOptions, mapping
from tests.mariadb.all_types import (
    COLUMNS,
    DEFAULTS,
    DOUBLE_EXPECTED,
    EXPECTED,
    NOT_NULL,
    OTHER_MODES,
    OTHER_MODES_EXPECTED,
    OUT_OF_RANGE_UNDER_OTHER_MODES,
    insert_rows,
)
from tests.mariadb.binlog_reading import read_to_end

pytestmark = pytest.mark.integration


def read_rows(mariadb, database, start, options=TypeOptions()):
    """The rows' columns mapped with the table's defaults from information_schema, as the connector maps them."""
    changes = read_to_end(mariadb.cdc, 6101, start, database)
    rows = []
    connection = connect(mariadb.admin)
    try:
        defaults = catalog.column_catalog(connection, database, "all_types")
    finally:
        connection.close()
    for change in changes:
        if isinstance(change, RowChange):
            schema = catalog.with_catalog(change.schema, defaults)
            maps = {c.name: mapping(c, options) for c in schema.columns}
            rows.append({name: (m.schema, m.json_value(change.after[name])) for name, m in maps.items()})
    return rows


@pytest.fixture
def written(mariadb, mariadb_db):
    mariadb.execute(f"CREATE TABLE all_types ({COLUMNS})", database=mariadb_db)
    connection = connect(mariadb.admin)
    try:
        with connection.cursor() as cursor:
            start = show_binlog_status(cursor)
    finally:
        connection.close()
    insert_rows(mariadb, mariadb_db, 1)
    return BinlogPosition(gtids=start.gtids)


def test_every_type_as_debezium_maps_it(mariadb, mariadb_db, written):
    full, nulls = read_rows(mariadb, mariadb_db, written)
    assert set(full) == set(EXPECTED)
    for name, (type_, logical, parameters, value) in EXPECTED.items():
        schema, actual = full[name]
        assert (schema.type, schema.name, schema.parameters, actual) == (type_, logical, parameters, value), name
        if logical:
            assert schema.version == 1
        assert schema.optional is (name not in NOT_NULL)
    # the second row: NULL everywhere a column allows it, the defaults elsewhere
    assert {n: v for n, (_, v) in nulls.items()} == {n: 2 if n == "id" else DEFAULTS.get(n) for n in EXPECTED}


def test_other_modes(mariadb, mariadb_db, written):
    for modes, changed, not_compared in ((OTHER_MODES, OTHER_MODES_EXPECTED, OUT_OF_RANGE_UNDER_OTHER_MODES),
                                         ({"decimal.handling.mode": "double"}, DOUBLE_EXPECTED, set())):
        options = TypeOptions(**{name.replace(".", "_"): value for name, value in modes.items()})
        full, _ = read_rows(mariadb, mariadb_db, written, options)
        for name, (type_, logical, parameters, value) in {**EXPECTED, **changed}.items():
            schema, actual = full[name]
            assert (schema.type, schema.name, schema.parameters) == (type_, logical, parameters), name
            if name not in not_compared:
                assert actual == value, name
