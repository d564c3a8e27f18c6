"""connectors/kafka is a lower layer than connectors/core: the core's pipeline, snapshots and verification use the
Kafka side, and the Kafka side imports nothing of the core (nor of a source). Both build on the shared error
vocabulary of the package itself (`connectors/__init__.py`)."""

from __future__ import annotations

import ast
import pathlib

import pytest

CONNECTORS = pathlib.Path(__file__).parents[2] / "connectors"
KAFKA = sorted((CONNECTORS / "kafka").rglob("*.py"))
ALLOWED_CONNECTORS = ("connectors.kafka",)


def error_vocabulary() -> set[str]:
    """`connectors` and its error classes (`connectors/__init__.py`, which imports nothing)."""
    tree = ast.parse((CONNECTORS / "__init__.py").read_text())
    return {"connectors"} | {f"connectors.{node.name}" for node in tree.body if isinstance(node, ast.ClassDef)}


def imported(path: pathlib.Path, root: pathlib.Path = CONNECTORS.parent) -> set[str]:
    """Every module a file imports, at its top or inside a function, with relative imports made absolute."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_the_kafka_package_has_modules():
    assert {p.name for p in KAFKA} >= {"sink.py", "offsets.py", "topics.py", "errors.py"}


@pytest.mark.parametrize("path", KAFKA, ids=lambda p: str(p.relative_to(CONNECTORS)))
def test_kafka_imports_nothing_above_it(path):
    names = imported(path)
    upward = {n for n in names if n.split(".")[0] == "connectors" and not n.startswith(ALLOWED_CONNECTORS)}
    upward -= error_vocabulary()
    assert not upward, f"{path.relative_to(CONNECTORS)} imports {sorted(upward)}"


def test_the_check_sees_an_upward_import(tmp_path):
    module = tmp_path / "connectors" / "kafka" / "probe.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    from ..core import pipeline\n    import connectors.mysql.config\n"
                      "    from connectors import ConnectorError, mongodb\n")
    names = imported(module, tmp_path)
    assert {"connectors.core", "connectors.core.pipeline", "connectors.mysql.config", "connectors.mongodb"} <= names
    assert names - error_vocabulary() >= {"connectors.mongodb"}
    assert "connectors.ConnectorError" in error_vocabulary()
