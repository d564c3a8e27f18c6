"""PostgreSQL's geometric types on the real server, through the slot: `point` becomes Debezium's
io.debezium.data.geometry.Point; line, lseg, box, path, polygon, circle (and pg_lsn) have no Debezium schema and
are left out with a warning naming the column, unless include.unknown.datatypes carries their text as bytes; a
type Debezium maps and this connector cannot (PostGIS, pgvector) stops the connector naming the column."""

from __future__ import annotations

import base64
import json
import struct

import pytest

from connectors.events.json_converter import value_json
from connectors.postgres import pgoutput as p
from connectors.postgres.catalog import table_columns
from connectors.postgres.replication import ReplicationStream
from connectors.postgres.rows import RowColumn, RowMapper
from connectors.postgres.types import ColumnType, TypeMappingError, TypeSettings, column_mapping
from tests.postgres.test_types_live import read_transactions

GEOMETRIC = {"c_line": "line", "c_lseg": "lseg", "c_box": "box", "c_path": "path", "c_polygon": "polygon",
             "c_circle": "circle", "c_lsn": "pg_lsn"}
DDL = (f"CREATE TABLE shapes (id int PRIMARY KEY, c_point point, c_far point NOT NULL, "
       f"{', '.join(f'{c} {t}' for c, t in GEOMETRIC.items())}); CREATE PUBLICATION pub FOR TABLE shapes")
ROW = ("INSERT INTO shapes VALUES (1, '(-1.5,2.25)', '(1e300,-0)', '{1,-1,0}', '[(0,0),(1,1)]', '(2,2),(0,0)', "
       "'[(0,0),(1,1),(2,0)]', '((0,0),(1,1),(2,0))', '<(1,1),2>', '0/16B3748')")


def point(x: float, y: float) -> dict:
    return {"x": x, "y": y, "wkb": base64.b64encode(struct.pack("<BIdd", 1, 1, x, y)).decode(), "srid": None}


@pytest.fixture
def shapes(pg_db):
    """(mapper columns, the inserted tuple) of one row of `shapes` read from the slot."""
    pg_db.execute(DDL)
    stream = ReplicationStream(pg_db.dsn, pg_db.name + "_shapes", ["pub"])
    try:
        stream.start(stream.create_slot(export_snapshot=False).consistent_point)
        pg_db.execute(ROW)
        messages = read_transactions(stream, 1)
    finally:
        stream.close()
    relation = next(m for m in messages if isinstance(m, p.Relation))
    conn = pg_db.connect()
    with conn.cursor() as cur:
        columns = [RowColumn(c.name, c.type, not c.not_null) for c in table_columns(cur, relation.relation_id)]
    conn.close()
    return columns, next(m for m in messages if isinstance(m, p.Insert)).new


def test_point_is_debeziums_point_and_the_others_are_left_out_with_a_warning(shapes, caplog):
    columns, row = shapes
    with caplog.at_level("WARNING", logger="connectors.postgres.rows"):
        rows = RowMapper("t.public.shapes.Value", columns, TypeSettings(), table="public.shapes")
    assert rows.column_names == ["id", "c_point", "c_far"]
    warned = [r.getMessage() for r in caplog.records]
    assert warned == [f"column public.shapes.{c} of type {t} is left out of the change events: set "
                      "include.unknown.datatypes=true to carry its text as bytes, or name it in column.exclude.list "
                      "to leave it out without this warning" for c, t in GEOMETRIC.items()]
    payload = json.loads(value_json(rows.schema, rows.value(row)))
    assert payload == {"id": 1, "c_point": point(-1.5, 2.25), "c_far": point(1e300, -0.0)}
    schema = {f.name: f.schema for f in rows.schema.fields}
    assert (schema["c_point"].name, schema["c_point"].optional, schema["c_far"].optional) == (
        "io.debezium.data.geometry.Point", True, False)


def test_excluded_columns_are_not_warned_about_and_unknown_types_can_be_included(shapes, caplog):
    from connectors.core.columns import ColumnRules

    columns, row = shapes
    excluded = ColumnRules(exclude=tuple(rf"public\.shapes\.{c}" for c in GEOMETRIC))
    with caplog.at_level("WARNING", logger="connectors.postgres.rows"):
        RowMapper("t.public.shapes.Value", columns, TypeSettings(), column_rules=excluded, table="public.shapes")
    assert caplog.records == []
    rows = RowMapper("t.public.shapes.Value", columns, TypeSettings(include_unknown_datatypes=True))
    value = rows.value(row)
    assert value["c_box"] == b"(2,2),(0,0)" and value["c_circle"] == b"<(1,1),2>"


def test_a_type_debezium_maps_and_this_connector_cannot_names_the_column():
    for name in ("geometry", "geography", "vector"):
        with pytest.raises(TypeMappingError, match=f"column place has type {name}.*column.exclude.list"):
            column_mapping(ColumnType(91000, name=name), TypeSettings(), column="place")
