"""connectors/postgres and connectors/events import neither Django nor MongoDB's driver, and psycopg2 (the
replication protocol) only where the replication connection is made."""

from __future__ import annotations

import ast
import pathlib

import pytest

CONNECTORS = pathlib.Path(__file__).parents[2] / "connectors"
MODULES = sorted([*(CONNECTORS / "postgres").glob("*.py"), *(CONNECTORS / "events").glob("*.py")])
FORBIDDEN = ("django", "pymongo", "bson", "rest_framework", "celery")


def imports(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_framework_or_mongodb_imports(path):
    bad = {name for name in imports(path) if name.split(".")[0] in FORBIDDEN}
    assert not bad, f"{path.name} imports {sorted(bad)}"
    if path.name != "replication.py":
        assert not {name for name in imports(path) if name.split(".")[0] == "psycopg2"}
    if path.parent.name == "events":
        assert not {name for name in imports(path) if name.startswith("connectors.postgres")}
