"""Streamed schema change records and keys as Debezium's MariaDB connector writes them (compared byte for byte by
`python -m bench.compat --source mariadb`): `source.pos` where the statement's own event starts, RENAME TABLE as one
ALTER of the new name, no record for TRUNCATE, one rewritten record per table a DROP TABLE removes, column facts
from the declared type; a composite primary key's fields in the key's order. Real MariaDB, real Kafka."""

from __future__ import annotations

import json
import time

import pytest

from tests.integration.kafka_reading import read_topic
from tests.mariadb.test_event_kinds import records_of
from tests.mariadb.test_source import BOOTSTRAP, InProcess, properties

pytestmark = pytest.mark.integration

STATEMENTS = (
    "ALTER TABLE c ADD COLUMN n INT(7) UNSIGNED DEFAULT 3",
    "RENAME TABLE c TO c2",
    "TRUNCATE TABLE c2",
    "CREATE TABLE d (y YEAR, f FLOAT, t TIME, tx TEXT, b BLOB, e ENUM('a','b') DEFAULT 'b')",
    "DROP TABLE d, c2",
)


def streamed(props: dict) -> list[dict]:
    try:
        records = read_topic(BOOTSTRAP, props["topic.prefix"])
    except KeyError:
        return []
    payloads = [json.loads(r.value) for r in records]
    return [p for p in payloads if p["source"]["snapshot"] == "false"]


def test_streamed_schema_records_and_key_order(mariadb, mariadb_db):
    mariadb.execute("CREATE TABLE c (k1 INT, k2 VARCHAR(5), v TINYINT, PRIMARY KEY (k2, k1))",
                    "INSERT INTO c VALUES (1, 'a', 1)", database=mariadb_db)
    props = properties(mariadb, mariadb_db, **{"key.converter.schemas.enable": "true", "skipped.operations": "none"})
    runner = InProcess(props)
    try:
        records_of(props, mariadb_db, "c", 1, timeout=90)
        mariadb.execute("INSERT INTO c VALUES (2, 'b', 2)", database=mariadb_db)
        keys = [json.loads(r.key) for r in records_of(props, mariadb_db, "c", 2)]
        deadline = time.monotonic() + 90
        for statement, records in zip(STATEMENTS, (1, 2, 2, 3, 5), strict=True):
            mariadb.execute(statement, database=mariadb_db)
            # one at a time: a record describes the table as information_schema shows it when it is built
            while len(changes := streamed(props)) < records:
                assert time.monotonic() < deadline, changes
                time.sleep(0.3)
    finally:
        runner.close()
    events = mariadb.execute(f"SHOW BINLOG EVENTS IN '{changes[0]['source']['file']}'")
    # Info: "use `db`; <statement>"
    starts = {info.partition("; ")[2]: pos for _log, pos, kind, _server, _end, info in events if kind == "Query"}
    for key in keys:  # snapshot and stream: the key's order (k2, k1), not the columns'
        assert [f["field"] for f in key["schema"]["fields"]] == ["k2", "k1"]
    assert [c["ddl"] for c in changes] == [*STATEMENTS[:2], STATEMENTS[3], f"DROP TABLE `{mariadb_db}`.`d`",
                                           f"DROP TABLE `{mariadb_db}`.`c2`"]
    for change in changes[:3]:
        assert change["source"]["pos"] == starts[change["ddl"]], change["ddl"]
    alter, rename, create = (c["tableChanges"] for c in changes[:3])
    assert [(t["type"], t["id"]) for t in rename] == [("ALTER", f'"{mariadb_db}"."c2"')]
    assert changes[1]["source"]["table"] == "c2"
    columns = {c["name"]: c for c in alter[0]["table"]["columns"]}
    assert (columns["k1"]["length"], columns["v"]["jdbcType"], columns["v"]["length"]) == (11, 5, 4)
    assert (columns["n"]["typeExpression"], columns["n"]["length"], columns["n"]["defaultValueExpression"]) == (
        "INT UNSIGNED", 7, "3")
    columns = {c["name"]: c for c in create[0]["table"]["columns"]}
    assert [columns[n]["length"] for n in ("y", "f", "t", "tx", "b")] == [4, None, None, None, None]
    assert (columns["f"]["jdbcType"], columns["b"]["jdbcType"]) == (6, 2004)
    assert (columns["e"]["enumValues"], columns["e"]["defaultValueExpression"]) == (["'a'", "'b'"], "b")
    assert [c["tableChanges"] for c in changes[3:]] == [[{"type": "DROP", "id": f'"{mariadb_db}"."{t}"', "table": None}]
                                                       for t in ("d", "c2")]
