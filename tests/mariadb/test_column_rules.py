"""Debezium's column rules on the MariaDB source through a real connector run (real MariaDB, real Kafka):
column.mask.hash.*, column.mask.with.N.chars and column.truncate.to.N.chars on snapshot rows and streamed changes,
keys included, and the parameters they put in the field schemas (`masked`, `truncateLength`), schemas enabled."""

from __future__ import annotations

import hashlib
import json

import pytest

from connectors.core.hashing import java_serialized
from tests.mariadb.test_source import BOOTSTRAP, InProcess, properties
from tests.type_check import records_at_least

pytestmark = pytest.mark.integration


def run_with_rules(mariadb, mariadb_db, table: str, rules: dict, changes: list[str], count: int):
    """Runs a connector with column `rules` and schemas on until its snapshot of `table` is in Kafka, then makes the
    `changes` (so they are streamed); returns the closed runner and the topic's records once it holds `count`."""
    props = properties(mariadb, mariadb_db, **rules, **{"value.converter.schemas.enable": "true",
                                                        "key.converter.schemas.enable": "true"})
    topic = f"{props['topic.prefix']}.{mariadb_db}.{table}"
    runner = InProcess(props)
    try:
        records_at_least(runner, BOOTSTRAP, topic, 1)
        mariadb.execute(*changes, database=mariadb_db)
        records = records_at_least(runner, BOOTSTRAP, topic, count)
    finally:
        runner.close()
    return runner, records


def test_column_mask_hash(mariadb, mariadb_db):
    salt1, salt2 = "s.a.l.t-ß", "other salt"
    mariadb.execute(
        "CREATE TABLE secrets (code VARCHAR(10) PRIMARY KEY, body TEXT, pin CHAR(6), "
        "latin VARCHAR(8) CHARACTER SET latin1, kind ENUM('a', 'b'), doc JSON, n INT, note VARCHAR(20), "
        "raw VARBINARY(8))",
        "INSERT INTO secrets VALUES ('A-1', 'first body', 'ab', 'été', 'a', '{\"k\": 1}', 1, 'clear', 'xy')",
        database=mariadb_db)
    # v1 on the key column, a char(n), a latin1 varchar(n) and MariaDB's JSON (a LONGTEXT, as Debezium's MariaDB
    # connector sees it: the whole hex), passing enum, int and binary columns unchanged; v2 on a text column; a
    # truncation naming hashed columns too loses to the hash
    runner, records = run_with_rules(mariadb, mariadb_db, "secrets", {
        f"column.mask.hash.SHA-256.with.salt.{salt1}": rf"{mariadb_db}\.secrets\.(CODE|pin|latin|kind|doc|n|raw)",
        f"column.mask.hash.v2.SHA-512.with.salt.{salt2}": rf"{mariadb_db}\.secrets\.body",
        "column.truncate.to.3.chars": rf"{mariadb_db}\.secrets\.(code|body|pin|note)"},
        ["INSERT INTO secrets VALUES ('B-2', 'second body', 'cd', NULL, 'b', NULL, 2, 'other', NULL)",
         "UPDATE secrets SET n = 5 WHERE code = 'A-1'", "DELETE FROM secrets WHERE code = 'B-2'"], 5)
    assert salt1 not in repr(runner.config)

    def v1(text, length):
        return hashlib.sha256(salt1.encode() + java_serialized(text)).hexdigest()[:length]

    def v2(text):
        return hashlib.sha512(salt2.encode() + text.encode()).hexdigest()

    values = [None if r.value is None else json.loads(r.value)["payload"] for r in records]
    assert [v and v["op"] for v in values] == ["r", "c", "u", "d", None]
    first = {"code": v1("A-1", 10), "body": v2("first body"), "pin": v1("ab", 6), "latin": v1("été", 8), "kind": "a",
             "doc": v1('{"k": 1}', 64), "n": 1, "note": "cle", "raw": "eHk="}
    assert values[0]["after"] == first
    assert values[1]["after"] == {"code": v1("B-2", 10), "body": v2("second body"), "pin": v1("cd", 6),
                                  "latin": None, "kind": "b", "doc": None, "n": 2, "note": "oth", "raw": None}
    assert values[2]["before"] == first and values[2]["after"] == {**first, "n": 5}
    assert values[3]["before"] == values[1]["after"]
    assert len(first["body"]) == 128  # text: the whole hex
    keys = [json.loads(r.key)["payload"] for r in records]
    assert keys == [{"code": v1("A-1", 10)}, {"code": v1("B-2", 10)}, {"code": v1("A-1", 10)},
                    {"code": v1("B-2", 10)}, {"code": v1("B-2", 10)}]
    assert not any(salt.encode() in (r.value or b"") + r.key for r in records for salt in (salt1, salt2))
    masked = {"masked": "true"}
    for record in records[:4]:  # snapshot and binlog: a hashed field's schema says so; enum, int, binary: not
        assert field_parameters(record) == {"code": masked, "body": masked, "pin": masked, "latin": masked,
                                            "kind": {"allowed": "a,b"}, "doc": masked, "n": None,
                                            "note": {"truncateLength": "3"}, "raw": None}
    # the hashed key's schema too (Debezium's key is in clear, its schema unmarked: here the key is hashed)
    assert all(json.loads(r.key)["schema"]["fields"] == [
        {"type": "string", "optional": False, "parameters": masked, "field": "code"}] for r in records)


def after_fields(record) -> list[dict]:
    """The fields of the `after` struct's schema of a schemas-enabled record (the same as `before`'s)."""
    value = json.loads(record.value)
    return next(f for f in value["schema"]["fields"] if f["field"] == "after")["fields"]


def field_parameters(record) -> dict:
    return {f["field"]: f.get("parameters") for f in after_fields(record)}


def test_masked_and_truncated_columns_mark_their_schemas(mariadb, mariadb_db):
    mariadb.execute(
        "CREATE TABLE people (login VARCHAR(12) PRIMARY KEY, bio TEXT, nick VARCHAR(4), mood ENUM('happy', 'sad'), "
        "card CHAR(16), n INT)",
        "INSERT INTO people VALUES ('ann', 'a long biography', 'an', 'happy', '4111111111111111', 1)",
        database=mariadb_db)
    # a * mask on the key column and a char(16) (and an int, which no mask changes); a truncation to 4 that can cut
    # TEXT and the ENUM (marked after its own `allowed`), not VARCHAR(4)
    _, records = run_with_rules(mariadb, mariadb_db, "people", {
        "column.mask.with.3.chars": rf"{mariadb_db}\.people\.(LOGIN|card|n)",
        "column.truncate.to.4.chars": rf"{mariadb_db}\.people\..*"},
        ["INSERT INTO people VALUES ('bob', 'short', 'bobb', 'sad', NULL, 2)",
         "UPDATE people SET n = 3 WHERE login = 'ann'"], 3)
    values = [json.loads(r.value)["payload"] for r in records]
    assert [v["op"] for v in values] == ["r", "c", "u"]
    assert values[0]["after"] == {"login": "***", "bio": "a lo", "nick": "an", "mood": "happ", "card": "***", "n": 1}
    assert values[1]["after"] == {"login": "***", "bio": "shor", "nick": "bobb", "mood": "sad", "card": None, "n": 2}
    cut = {"truncateLength": "4"}
    for record in records:
        assert field_parameters(record) == {"login": {"masked": "true"}, "bio": cut, "nick": None,
                                            "mood": {"allowed": "happy,sad", **cut}, "card": {"masked": "true"},
                                            "n": None}
        mood = next(f for f in after_fields(record) if f["field"] == "mood")
        assert list(mood["parameters"]) == ["allowed", "truncateLength"]  # Kafka Connect's insertion order
        key = json.loads(record.key)
        assert key["payload"] == {"login": "***"}
        assert key["schema"]["fields"] == [{"type": "string", "optional": False, "parameters": {"masked": "true"},
                                            "field": "login"}]
