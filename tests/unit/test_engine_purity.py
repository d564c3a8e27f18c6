"""The engine stays free of the web framework, and its transformer modules free of I/O."""

from __future__ import annotations

import ast
import pathlib

import pytest

CONNECTORS = pathlib.Path(__file__).parents[2] / "connectors"
PURE_MODULES = [
    "config/types",
    "config/values",
    "mongodb/config",
    "mongodb/config_checks",
    "mongodb/config_values",
    "mongodb/connect_schemas",
    "mongodb/envelopes",
    "mongodb/events",
    "mongodb/extjson",
    "mongodb/field_rules",
    "mongodb/filters",
    "mongodb/rawjson",
    "mongodb/records",
    "secrets",
    "core/transactions",
    "mongodb/transformer",
]
# What a pure module may import from outside the standard library: BSON types, pymongo's URI parser and a JSON
# encoder.
ALLOWED_THIRD_PARTY = {"bson", "pymongo.uri_parser", "pymongo.errors", "orjson"}


def imported_modules(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("path", sorted(CONNECTORS.rglob("*.py")), ids=lambda p: str(p.relative_to(CONNECTORS)))
def test_no_django_in_the_engine(path):
    assert not any(name == "django" or name.startswith("django.") for name in imported_modules(path))


@pytest.mark.parametrize("module", PURE_MODULES)
def test_transformer_modules_do_no_io(module):
    for name in imported_modules(CONNECTORS / f"{module}.py"):
        root = name.split(".")[0]
        if root in {"connectors", "__future__"} or root in __import__("sys").stdlib_module_names:
            assert root not in {"socket", "subprocess", "http", "ssl", "select", "asyncio", "threading"}, name
            continue
        assert any(
            name == allowed or name.startswith(allowed + ".") or allowed.startswith(name)
            for allowed in ALLOWED_THIRD_PARTY
        ), f"{module} imports {name}"
        if root == "connectors":  # the engine's I/O: Kafka, MongoDB's client, streams and snapshots
            pure = tuple(f"connectors.{m.replace('/', '.')}" for m in PURE_MODULES)
            assert not name.startswith(("connectors.kafka", "connectors.mongodb")) or name.startswith(pure), (
                f"{module} imports {name}")
