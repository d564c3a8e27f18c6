"""`python -m connectors validate`: every source's problems, each printed once, regexes quoted as typed."""

from __future__ import annotations

import json

from connectors.__main__ import main


def run_validate(tmp_path, capsys, properties: dict) -> tuple[int, list[str]]:
    path = tmp_path / "connector.json"
    path.write_text(json.dumps(properties))
    status = main(["validate", str(path)])
    return status, capsys.readouterr().out.splitlines()


def test_a_bad_regex_is_quoted_as_typed_and_named_once(tmp_path, capsys):
    status, lines = run_validate(tmp_path, capsys, {
        "name": "x", "topic.prefix": "x", "mongodb.connection.string": "mongodb://h/?replicaSet=rs0",
        "collection.include.list": "inventory\\.(orders"})
    assert status == 1
    assert lines == ['collection.include.list: "inventory\\.(orders" is not a valid regular expression '
                     "(missing ), unterminated subpattern at position 11)"]


def test_relational_sources_are_judged_by_their_own_validator(tmp_path, capsys):
    status, lines = run_validate(tmp_path, capsys, {"name": "x", "connector.class": "postgres"})
    assert status == 1
    assert lines == ["topic.prefix is required", "database.hostname is required", "database.user is required",
                     "database.dbname is required"]
    status, lines = run_validate(tmp_path, capsys, {"name": "x", "connector.class": "nope"})
    assert status == 1 and lines[0].startswith("connector.class 'nope' is not a connector this platform runs")
    status, lines = run_validate(tmp_path, capsys, {
        "name": "x", "connector.class": "mariadb", "topic.prefix": "x", "database.hostname": "h",
        "database.user": "u", "database.server.id": 5})
    assert (status, lines) == (0, [])
