"""Debezium's column rules on the PostgreSQL source, each through a real connector run (real PostgreSQL, real Kafka):
column.include.list, column.exclude.list, column.mask.with.N.chars, column.mask.hash.*, column.truncate.to.N.chars and
message.key.columns apply alike to snapshot rows (op r) and streamed changes (c/u/d, before and after, unchanged
TOASTed values), and to the key and value schemas."""

from __future__ import annotations

import hashlib
import json
import time

import pytest

from connectors.core.hashing import java_serialized
from tests.postgres.test_source import Running, events, payloads, pg_config

pytestmark = [pytest.mark.integration]

BIG = "".join(chr(65 + (i * 7919) % 26) for i in range(20_000))  # incompressible enough to be TOASTed
PLACEHOLDER = "__debezium_unavailable_value"


def connector_name(unique_name: str) -> str:
    return "pg" + unique_name.replace("-", "")[-12:]


def row_fields(value: dict) -> dict[str, dict]:
    """The `after` struct's fields of a schemas-enabled envelope, by name."""
    after = next(f for f in value["schema"]["fields"] if f["field"] == "after")
    return {f["field"]: f for f in after["fields"]}


def test_column_include_list(pg_db, stack, unique_name):
    bootstrap, name = stack.kafka_bootstrap, connector_name(unique_name)
    pg_db.execute("CREATE TABLE people (id int PRIMARY KEY, name text, email text, note text)")
    pg_db.execute("ALTER TABLE people REPLICA IDENTITY FULL")
    pg_db.execute("INSERT INTO people VALUES (1, 'ann', 'a@example.com', 'n1')")
    # whole-name, case-insensitive regexes: `NAME` matches column name; `public\.people\.i` matches no column
    include = r"public\.people\.id,PUBLIC\.people\.NAME,public\.people\.i"
    config = pg_config(pg_db, name, **{"column.include.list": include, "schemas.enable": "true"})
    running = Running(config, bootstrap)
    try:
        events(bootstrap, f"{name}.public.people", 1)  # the snapshot is read: what follows is streamed
        pg_db.execute("INSERT INTO people VALUES (2, 'bob', 'b@example.com', 'n2')")
        pg_db.execute("UPDATE people SET name = 'bobby', email = 'c@example.com' WHERE id = 2")
        pg_db.execute("DELETE FROM people WHERE id = 1")
        records = events(bootstrap, f"{name}.public.people", 5)
    finally:
        running.stop()
    values = payloads(records)
    assert [v and v["payload"]["op"] for v in values] == ["r", "c", "u", "d", None]
    assert values[0]["payload"]["after"] == {"id": 1, "name": "ann"}
    assert values[1]["payload"]["after"] == {"id": 2, "name": "bob"}
    assert values[2]["payload"]["before"] == {"id": 2, "name": "bob"}
    assert values[2]["payload"]["after"] == {"id": 2, "name": "bobby"}
    assert values[3]["payload"]["before"] == {"id": 1, "name": "ann"}
    assert all(list(row_fields(v)) == ["id", "name"] for v in values[:4])
    assert [json.loads(r.key)["payload"] for r in records] == [{"id": 1}, {"id": 2}, {"id": 2}, {"id": 1}, {"id": 1}]


def test_column_exclude_list(pg_db, stack, unique_name):
    bootstrap, name = stack.kafka_bootstrap, connector_name(unique_name)
    pg_db.execute("CREATE TABLE accounts (id int PRIMARY KEY, login text, password text, avatar bytea, n int)")
    pg_db.execute("ALTER TABLE accounts REPLICA IDENTITY FULL")
    pg_db.execute("INSERT INTO accounts VALUES (1, 'ann', 'pw1', '\\x0102', 10)")
    pg_db.execute("CREATE TABLE other (id int PRIMARY KEY, password text)")  # same column name, another table
    pg_db.execute("INSERT INTO other VALUES (1, 'kept')")
    config = pg_config(pg_db, name, **{"column.exclude.list": r"public\.accounts\.(password|AVATAR)",
                                       "schemas.enable": "true"})
    running = Running(config, bootstrap)
    try:
        events(bootstrap, f"{name}.public.accounts", 1)
        events(bootstrap, f"{name}.public.other", 1)
        pg_db.execute("INSERT INTO accounts VALUES (2, 'bob', 'pw2', '\\x03', 20)")
        pg_db.execute("UPDATE accounts SET password = 'pw3', n = 21 WHERE id = 2")
        pg_db.execute("DELETE FROM accounts WHERE id = 2")
        accounts = payloads(events(bootstrap, f"{name}.public.accounts", 5))
        other = payloads(events(bootstrap, f"{name}.public.other", 1))
    finally:
        running.stop()
    assert [v and v["payload"]["op"] for v in accounts] == ["r", "c", "u", "d", None]
    assert accounts[0]["payload"]["after"] == {"id": 1, "login": "ann", "n": 10}
    assert accounts[1]["payload"]["after"] == {"id": 2, "login": "bob", "n": 20}
    assert accounts[2]["payload"]["before"] == {"id": 2, "login": "bob", "n": 20}
    assert accounts[2]["payload"]["after"] == {"id": 2, "login": "bob", "n": 21}
    assert accounts[3]["payload"]["before"] == {"id": 2, "login": "bob", "n": 21}
    assert all(list(row_fields(v)) == ["id", "login", "n"] for v in accounts[:4])
    assert other[0]["payload"]["after"] == {"id": 1, "password": "kept"}


def test_column_mask_with_n_chars(pg_db, stack, unique_name):
    bootstrap, name = stack.kafka_bootstrap, connector_name(unique_name)
    pg_db.execute("CREATE TABLE cards (id int PRIMARY KEY, holder text, doc json, note text, n int, big text)")
    pg_db.execute("ALTER TABLE cards ALTER COLUMN big SET STORAGE EXTERNAL")
    pg_db.execute("""INSERT INTO cards VALUES (1, 'ann', '{"pan": "4111"}', NULL, 7, %s)""", (BIG,))
    # n is an int: a mask applies to string columns only, as Debezium's
    config = pg_config(pg_db, name, **{"column.mask.with.4.chars": r"public\.cards\.(holder|doc|note|n)",
                                       "column.mask.with.2.chars": r"public\.cards\.big", "schemas.enable": "true"})
    running = Running(config, bootstrap)
    try:
        events(bootstrap, f"{name}.public.cards", 1)
        pg_db.execute("INSERT INTO cards VALUES (2, 'bob', '[1, 2]', 'x', 8, 'short')")
        pg_db.execute("UPDATE cards SET n = 9 WHERE id = 1")  # DEFAULT identity: `big` is not sent (TOASTed)
        values = payloads(events(bootstrap, f"{name}.public.cards", 3))
    finally:
        running.stop()
    assert [v["payload"]["op"] for v in values] == ["r", "c", "u"]
    masked = {"holder": "****", "doc": "****", "big": "**"}
    assert values[0]["payload"]["after"] == {"id": 1, **masked, "note": None, "n": 7}
    assert values[1]["payload"]["after"] == {"id": 2, **masked, "note": "****", "n": 8}
    # the unchanged TOASTed value reads masked too (not the placeholder)
    assert values[2]["payload"]["after"] == {"id": 1, **masked, "note": None, "n": 9}
    for value in values:  # snapshot and stream: a masked field's schema says so (Debezium's MaskStrings)
        fields = row_fields(value)
        # no longer io.debezium.data.Json
        assert fields["doc"] == {"type": "string", "optional": True, "parameters": {"masked": "true"}, "field": "doc"}
        assert fields["holder"] == {"type": "string", "optional": True, "parameters": {"masked": "true"},
                                    "field": "holder"}
        assert fields["n"] == {"type": "int32", "optional": True, "field": "n"}  # not changed: not marked


def test_column_truncate_to_n_chars(pg_db, stack, unique_name):
    bootstrap, name = stack.kafka_bootstrap, connector_name(unique_name)
    pg_db.execute("CREATE DOMAIN label AS varchar(30)")
    pg_db.execute("CREATE TABLE notes (id int PRIMARY KEY, title varchar(40), body text, n int, big text, "
                  "code char(8), tag label, doc json, ref uuid)")
    pg_db.execute("ALTER TABLE notes ALTER COLUMN big SET STORAGE EXTERNAL")
    pg_db.execute("ALTER TABLE notes REPLICA IDENTITY FULL")
    pg_db.execute("INSERT INTO notes VALUES (1, 'a long title', 'ab', 123456, %s, 'ABCDEFGH', 'a domain value', "
                  """'{"k": "value"}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')""", (BIG,))
    pg_db.execute("CREATE TABLE dflt (id int PRIMARY KEY, big text, n int, short varchar(5))")
    pg_db.execute("ALTER TABLE dflt ALTER COLUMN big SET STORAGE EXTERNAL")
    pg_db.execute("INSERT INTO dflt VALUES (1, %s, 0, 'abcde')", (BIG,))
    # json, uuid (and int) columns are not character ones; dflt.short's varchar(5) is never cut
    truncated = r"public\.notes\..*,public\.dflt\.(big|short)"
    config = pg_config(pg_db, name, **{"column.truncate.to.5.chars": truncated, "schemas.enable": "true"})
    running = Running(config, bootstrap)
    try:
        events(bootstrap, f"{name}.public.notes", 1)
        events(bootstrap, f"{name}.public.dflt", 1)
        pg_db.execute("INSERT INTO notes (id, title, body, n, big) VALUES (2, 'another title', 'abcdefgh', 7, 'tiny')")
        pg_db.execute("UPDATE notes SET title = 'changed title' WHERE id = 2")
        pg_db.execute("DELETE FROM notes WHERE id = 1")
        pg_db.execute("UPDATE dflt SET n = 1")  # DEFAULT identity: `big` is not sent (TOASTed)
        notes = payloads(events(bootstrap, f"{name}.public.notes", 5))
        dflt = payloads(events(bootstrap, f"{name}.public.dflt", 2))
    finally:
        running.stop()
    assert [v and v["payload"]["op"] for v in notes] == ["r", "c", "u", "d", None]
    first = {"id": 1, "title": "a lon", "body": "ab", "n": 123456, "big": BIG[:5], "code": "ABCDE", "tag": "a dom",
             "doc": '{"k": "value"}', "ref": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"}
    assert notes[0]["payload"]["after"] == first
    unset = {"code": None, "tag": None, "doc": None, "ref": None}
    assert notes[1]["payload"]["after"] == {"id": 2, "title": "anoth", "body": "abcde", "n": 7, "big": "tiny", **unset}
    assert notes[2]["payload"]["before"] == notes[1]["payload"]["after"]
    assert notes[2]["payload"]["after"] == {"id": 2, "title": "chang", "body": "abcde", "n": 7, "big": "tiny", **unset}
    assert notes[3]["payload"]["before"] == first
    for value in notes[:4]:  # snapshot and stream: a field a truncation can cut says so (Debezium's TruncateStrings)
        fields = row_fields(value)
        assert {f: fields[f].get("parameters") for f in fields} == {
            "id": None, "title": {"truncateLength": "5"}, "body": {"truncateLength": "5"}, "n": None,
            "big": {"truncateLength": "5"}, "code": {"truncateLength": "5"}, "tag": {"truncateLength": "5"},
            "doc": None, "ref": None}
        assert fields["doc"]["name"] == "io.debezium.data.Json" and fields["ref"]["name"] == "io.debezium.data.Uuid"
    assert dflt[0]["payload"]["after"] == {"id": 1, "big": BIG[:5], "n": 0, "short": "abcde"}
    # an unchanged TOASTed value keeps the whole placeholder: a cut one would read as data
    assert dflt[1]["payload"]["after"] == {"id": 1, "big": PLACEHOLDER, "n": 1, "short": "abcde"}
    for value in dflt:  # varchar(5) is never longer than 5: no truncateLength, as Debezium's
        assert {f: s.get("parameters") for f, s in row_fields(value).items()} == {
            "id": None, "big": {"truncateLength": "5"}, "n": None, "short": None}


def test_column_mask_hash(pg_db, stack, unique_name):
    bootstrap, name = stack.kafka_bootstrap, connector_name(unique_name)
    salt1, salt2 = "s.a.l.t-ß", "other salt"
    pg_db.execute("CREATE DOMAIN tag12 AS varchar(12)")
    pg_db.execute("CREATE TABLE secrets (code varchar(10) PRIMARY KEY, body text, pin char(6), tag tag12, doc json, "
                  "n int, note text, big text)")
    pg_db.execute("ALTER TABLE secrets ALTER COLUMN big SET STORAGE EXTERNAL")
    pg_db.execute("""INSERT INTO secrets VALUES ('A-1', 'first body', 'ab', 'tagged', '{"k": 1}', 1, 'clear', %s)""",
                  (BIG,))
    # v1 on the key column, a char(n), a domain over varchar(n) and (passed unchanged) a json and an int column;
    # v2 on text columns; the truncation also names every column, but a hash wins over it
    config = pg_config(pg_db, name, **{
        f"column.mask.hash.SHA-256.with.salt.{salt1}": r"public\.secrets\.(CODE|pin|tag|doc|n)",
        f"column.mask.hash.v2.SHA-512.with.salt.{salt2}": r"public\.secrets\.(body|big)",
        "column.truncate.to.3.chars": r"public\.secrets\..*", "schemas.enable": "true"})
    assert salt1 not in repr(config) and salt1 not in json.dumps(config.redacted())
    running = Running(config, bootstrap)
    try:
        events(bootstrap, f"{name}.public.secrets", 1)  # the snapshot is read: what follows is streamed
        pg_db.execute("INSERT INTO secrets VALUES ('B-2', 'second body', 'cd', NULL, NULL, 2, 'other', 'tiny')")
        pg_db.execute("UPDATE secrets SET n = 5 WHERE code = 'A-1'")  # DEFAULT identity: `big` is not sent (TOASTed)
        pg_db.execute("DELETE FROM secrets WHERE code = 'B-2'")
        records = events(bootstrap, f"{name}.public.secrets", 5)
    finally:
        running.stop()

    def v1(text, length):
        return hashlib.sha256(salt1.encode() + java_serialized(text)).hexdigest()[:length]

    def v2(text):
        return hashlib.sha512(salt2.encode() + text.encode()).hexdigest()

    values = payloads(records)
    assert [v and v["payload"]["op"] for v in values] == ["r", "c", "u", "d", None]
    first = {"code": v1("A-1", 10), "body": v2("first body"), "pin": v1("ab    ", 6), "tag": v1("tagged", 12),
             "doc": '{"k": 1}', "n": 1, "note": "cle", "big": v2(BIG)}
    assert values[0]["payload"]["after"] == first
    assert values[1]["payload"]["after"] == {"code": v1("B-2", 10), "body": v2("second body"), "pin": v1("cd    ", 6),
                                             "tag": None, "doc": None, "n": 2, "note": "oth", "big": v2("tiny")}
    # the unchanged TOASTed value: the placeholder, hashed as Debezium's
    assert values[2]["payload"]["after"] == {**first, "n": 5, "big": v2(PLACEHOLDER)}
    assert values[3]["payload"]["before"]["code"] == v1("B-2", 10)
    assert len(first["body"]) == 128 and len(first["big"]) == 128  # text: the whole hex
    keys = [json.loads(r.key)["payload"] for r in records]
    assert keys == [{"code": v1("A-1", 10)}, {"code": v1("B-2", 10)}, {"code": v1("A-1", 10)},
                    {"code": v1("B-2", 10)}, {"code": v1("B-2", 10)}]
    masked, cut = {"masked": "true"}, {"truncateLength": "3"}
    for value in values[:4]:  # snapshot and stream: the rule applied marks the field (a hash: masked)
        fields = row_fields(value)
        assert {f: fields[f].get("parameters") for f in fields} == {
            "code": masked, "body": masked, "pin": masked, "tag": masked, "doc": None, "n": None, "note": cut,
            "big": masked}  # json and int: named by the hash (and the truncation) but unchanged, so not marked
        assert fields["doc"]["name"] == "io.debezium.data.Json"
    # the hashed key's schema too (Debezium's key is in clear, its schema unmarked: here the key is hashed)
    key_schemas = [json.loads(r.key)["schema"] for r in records]
    assert all(k == {"type": "struct", "optional": False, "name": f"{name}.public.secrets.Key", "fields": [
        {"type": "string", "optional": False, "parameters": masked, "field": "code"}]} for k in key_schemas)
    assert not any(salt.encode() in (r.value or b"") + r.key for r in records for salt in (salt1, salt2))


def test_message_key_columns(pg_db, stack, unique_name):
    bootstrap, name = stack.kafka_bootstrap, connector_name(unique_name)
    pg_db.execute("CREATE TABLE log (line text, at int, extra text)")  # no primary key
    pg_db.execute("ALTER TABLE log REPLICA IDENTITY FULL")
    pg_db.execute("INSERT INTO log VALUES ('first', 1, 'x')")
    pg_db.execute("CREATE TABLE people (id int PRIMARY KEY, code text, name text)")
    pg_db.execute("ALTER TABLE people REPLICA IDENTITY FULL")
    pg_db.execute("INSERT INTO people VALUES (1, 'A1', 'ann')")
    pg_db.execute("CREATE TABLE plain (id int PRIMARY KEY, v text)")  # no rule: its primary key
    pg_db.execute("INSERT INTO plain VALUES (1, 'v')")
    config = pg_config(pg_db, name, **{"message.key.columns": r"public\.log:AT,line;public\.PEOPLE:code",
                                       "schemas.enable": "true"})
    running = Running(config, bootstrap)
    try:
        for table in ("log", "people", "plain"):
            events(bootstrap, f"{name}.public.{table}", 1)
        pg_db.execute("INSERT INTO log VALUES ('second', 2, 'y')")
        pg_db.execute("UPDATE log SET extra = 'z' WHERE at = 2")
        pg_db.execute("DELETE FROM log WHERE at = 1")
        pg_db.execute("UPDATE people SET name = 'anna' WHERE id = 1")
        pg_db.execute("UPDATE people SET code = 'B2' WHERE id = 1")  # the key changes: delete + tombstone + create
        log = events(bootstrap, f"{name}.public.log", 5)
        people = events(bootstrap, f"{name}.public.people", 5)
        plain = events(bootstrap, f"{name}.public.plain", 1)
    finally:
        running.stop()
    keys = [json.loads(r.key) for r in log]
    assert [k["payload"] for k in keys] == [{"at": 1, "line": "first"}, {"at": 2, "line": "second"},
                                           {"at": 2, "line": "second"}, {"at": 1, "line": "first"},
                                           {"at": 1, "line": "first"}]
    assert keys[0]["schema"] == {"type": "struct", "optional": False, "name": f"{name}.public.log.Key", "fields": [
        {"type": "int32", "optional": True, "field": "at"}, {"type": "string", "optional": True, "field": "line"}]}
    assert [v and v["payload"]["op"] for v in payloads(log)] == ["r", "c", "u", "d", None]
    assert payloads(log)[3]["payload"]["before"] == {"line": "first", "at": 1, "extra": "x"}
    assert [json.loads(r.key)["payload"] for r in people] == [{"code": "A1"}, {"code": "A1"}, {"code": "A1"},
                                                             {"code": "A1"}, {"code": "B2"}]
    assert [v and v["payload"]["op"] for v in payloads(people)] == ["r", "u", "d", None, "c"]
    assert [json.loads(r.key)["payload"] for r in plain] == [{"id": 1}]


def test_message_key_columns_naming_a_column_not_captured_fails_clearly(pg_db, stack, unique_name):
    from connectors.postgres.preflight import problems

    bootstrap, name = stack.kafka_bootstrap, connector_name(unique_name)
    pg_db.execute("CREATE TABLE people (id int PRIMARY KEY, code text, secret text)")
    pg_db.execute("INSERT INTO people VALUES (1, 'A1', 's')")
    expected = "message.key.columns names nickname, secret for public.people, which has no such captured column"
    # `nickname` does not exist, `secret` is not captured: refused before saving, and at start-up
    config = pg_config(pg_db, f"{name}a", **{"message.key.columns": r"public\.people:code,nickname,secret",
                                             "column.exclude.list": r".*\.secret", "slot.name": f"{pg_db.name}_a"})
    assert [(prop, message[:len(expected)]) for prop, message in problems(config)] == [
        ("message.key.columns", expected)]
    running = Running(config, bootstrap)
    running.thread.join(180)  # the failure ends the run by itself (generous: the machine is shared)
    assert not running.thread.is_alive()
    assert list(running.outcomes.values()) == ["failed"]
    (error,) = running.runner.errors.values()
    assert str(error).startswith(expected), error
    assert not pg_db.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (f"{pg_db.name}_a",))

    # a column dropped while streaming: the table's next change fails naming it
    slot = f"{pg_db.name}_b"
    config = pg_config(pg_db, f"{name}b", **{"message.key.columns": r"public\.people:code,secret",
                                             "snapshot.mode": "no_data", "slot.name": slot})
    running = Running(config, bootstrap)
    # the slot shows (active) while it is being created, before its consistent point: a change committed then is
    # never decoded; confirmed_flush_lsn is set once the point is reached, so what follows is streamed
    deadline = time.monotonic() + 120
    while not pg_db.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND confirmed_flush_lsn IS NOT "
                            "NULL", (slot,)):
        assert time.monotonic() < deadline, "the slot never reached its consistent point"
        time.sleep(0.1)
    pg_db.execute("ALTER TABLE people DROP COLUMN secret")
    pg_db.execute("INSERT INTO people VALUES (2, 'B2')")
    running.thread.join(180)
    assert not running.thread.is_alive()
    assert list(running.outcomes.values()) == ["failed"]
    (error,) = running.runner.errors.values()
    assert str(error).startswith("message.key.columns names secret for public.people, which has no such captured "
                                 "column"), error


def test_column_rule_properties_are_checked_by_name():
    from connectors.postgres.config import validate

    base = {"name": "x", "topic.prefix": "x", "database.hostname": "h", "database.user": "u", "database.dbname": "d"}
    problems = {p.property: p.message for p in validate({
        **base, "column.include.list": "a.b.c", "column.exclude.list": "a.b.d", "column.mask.with.3.chars": "(",
        "message.key.columns": "public.t", "column.mask.hash.SHA-257.with.salt.x": "a.b.c"})}
    assert set(problems) == {"column.exclude.list", "column.mask.with.3.chars", "message.key.columns",
                             "column.mask.hash.SHA-257.with.salt.********"}, problems
    assert "cannot both be set" in problems["column.exclude.list"]
    assert "not a valid regular expression" in problems["column.mask.with.3.chars"]
    assert "<table>:<column>" in problems["message.key.columns"]
    assert "unknown hash algorithm 'SHA-257'" in problems["column.mask.hash.SHA-257.with.salt.********"]
    assert validate({**base, "column.truncate.to.10.chars": r"public\.t\.c", "message.key.columns": "public.t:c",
                     "column.exclude.list": r"public\.t\.x"}) == []
