"""connectors/core knows no database: it imports neither a database driver nor a source's package, and names no
replica set (a source's partitions are opaque to it)."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

CONNECTORS = pathlib.Path(__file__).parents[2] / "connectors"
CORE = sorted((CONNECTORS / "core").rglob("*.py"))
DRIVERS = {"pymongo", "bson", "motor", "psycopg", "psycopg2", "pymysql", "MySQLdb", "mysql", "mariadb", "django"}
# the package's own module (its error vocabulary) and secrets: leaf modules with no source and no driver
ALLOWED_CONNECTORS = ("connectors.core", "connectors.kafka", "connectors.secrets")
PACKAGE_MODULE = ast.parse((CONNECTORS / "__init__.py").read_text())
ERRORS = {"connectors"} | {f"connectors.{node.name}" for node in PACKAGE_MODULE.body if isinstance(node, ast.ClassDef)}


def imported(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import"
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def identifiers(path: pathlib.Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            found.add(node.name)
    return found


def test_the_core_has_modules():
    assert {p.name for p in CORE} >= {"pipeline.py", "source.py", "stream.py", "coordinator.py", "progress.py"}


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(CONNECTORS)))
def test_no_driver_and_no_source_package(path):
    names = imported(path)
    assert not {n for n in names if n.split(".")[0] in DRIVERS}, names
    foreign = {n for n in names if n.split(".")[0] == "connectors" and not n.startswith(ALLOWED_CONNECTORS)} - ERRORS
    assert not foreign, f"{path.name} imports {sorted(foreign)}"


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(CONNECTORS)))
def test_no_replica_set_in_the_core(path):
    assert not {name for name in identifiers(path) if "replica_set" in name.lower() or "replicaset" in name.lower()}


def test_importing_the_core_loads_no_database_driver():
    modules = [f"connectors.core.{p.relative_to(CONNECTORS / 'core').with_suffix('').as_posix().replace('/', '.')}"
               for p in CORE if p.name != "__init__.py"]
    # bson still comes in through connectors.kafka.offset_record (MongoDB's offset layout, shared by the offset API)
    drivers = sorted(DRIVERS - {"bson"})
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules)
    code += f"print(sorted(m for m in sys.modules if m.split('.')[0] in {drivers!r}))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=CONNECTORS.parent)
    assert result.stdout.strip() == "[]", result.stdout
