"""Spatial columns as Debezium's MySQL/MariaDB connector writes them: `io.debezium.data.geometry.Geometry`, a struct
of the value's WKB and its SRID (null for SRID 0), and for POINT columns `io.debezium.data.geometry.Point` (its x and
y first), the same from the snapshot and from the binlog. A column of a
type the connector cannot map fails the pipeline with an error that names it and how to leave it out. Real MariaDB,
real Kafka."""

from __future__ import annotations

import base64
import json

import pytest

from tests.mariadb.test_event_kinds import records_of
from tests.mariadb.test_source import InProcess, properties

pytestmark = pytest.mark.integration

SPATIAL = ("p", "geo", "ls", "n")
POINTS = ("p", "n")


def insert(mariadb, database: str, key: int, x: int) -> None:
    statement = (f"INSERT INTO g VALUES ({key}, POINT({x}, 2), ST_GeomFromText('POINT({x} 3)', 4326), "  # noqa: S608
                 f"ST_GeomFromText('LINESTRING(0 0, {x} 1)'), NULL)")
    mariadb.execute(statement, database=database)


def expected(mariadb, database: str, key: int) -> dict:
    columns = ", ".join(f"ST_AsBinary({c}), ST_SRID({c})" for c in SPATIAL)
    row = mariadb.execute(f"SELECT {columns} FROM g WHERE id = {key}", database=database)[0]  # noqa: S608
    out = {}
    for index, name in enumerate(SPATIAL):
        wkb, srid = row[2 * index], row[2 * index + 1]
        out[name] = None if wkb is None else {"wkb": base64.b64encode(wkb).decode(), "srid": srid or None}
        if name in POINTS and wkb is not None:
            x, y = mariadb.execute(f"SELECT ST_X({name}), ST_Y({name}) FROM g WHERE id = {key}",  # noqa: S608
                                   database=database)[0]
            out[name] = {"x": x, "y": y, **out[name]}
    return out


def test_spatial_columns_are_geometry_structs_in_the_snapshot_and_the_stream(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE g (id INT PRIMARY KEY, p POINT NOT NULL, geo GEOMETRY, ls LINESTRING, n POINT)",
                    database=mariadb_db)
    insert(mariadb, mariadb_db, 1, 10)
    props = properties(mariadb, mariadb_db, **{"value.converter.schemas.enable": "true"})
    runner = InProcess(props)
    try:
        records_of(props, mariadb_db, "g", 1, timeout=90)
        insert(mariadb, mariadb_db, 2, 20)
        read, created = records_of(props, mariadb_db, "g", 2)
    finally:
        runner.close()
    assert not runner.runner.errors, runner.runner.errors
    for record, key in ((read, 1), (created, 2)):
        value = json.loads(record.value)
        after = value["payload"]["after"]
        assert {name: after[name] for name in SPATIAL} == expected(mariadb, mariadb_db, key)
    assert json.loads(created.value)["payload"]["after"]["geo"]["srid"] == 4326
    row_schema = {f["field"]: f for f in json.loads(created.value)["schema"]["fields"][1]["fields"]}
    assert row_schema["p"] == {"type": "struct", "fields": [{"type": "double", "optional": False, "field": "x"},
                                                           {"type": "double", "optional": False, "field": "y"},
                                                           {"type": "bytes", "optional": True, "field": "wkb"},
                                                           {"type": "int32", "optional": True, "field": "srid"}],
                               "optional": False, "name": "io.debezium.data.geometry.Point", "version": 1,
                               "doc": "Geometry (POINT)", "field": "p"}
    assert row_schema["ls"]["name"] == "io.debezium.data.geometry.Geometry"
    assert row_schema["geo"]["optional"] is True and row_schema["geo"]["name"] == "io.debezium.data.geometry.Geometry"


def test_a_type_without_a_mapping_fails_naming_the_column_and_the_workaround(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE x (id INT PRIMARY KEY, address INET6)", "INSERT INTO x VALUES (1, '::1')",
                    database=mariadb_db)
    props = properties(mariadb, mariadb_db)
    runner = InProcess(props)
    runner.thread.join(90)
    assert not runner.thread.is_alive()
    (error,) = runner.runner.errors.values()
    assert f"column {mariadb_db}.x.address" in str(error) and "inet6" in str(error)
    assert f"column.exclude.list={mariadb_db}.x.address" in str(error)
    props = properties(mariadb, mariadb_db, **{"column.exclude.list": f"{mariadb_db}.x.address"})
    runner = InProcess(props)
    try:
        (record,) = records_of(props, mariadb_db, "x", 1)
    finally:
        runner.close()
    assert json.loads(record.value)["after"] == {"id": 1}
