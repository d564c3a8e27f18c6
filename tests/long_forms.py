"""A pytest plugin (loaded by tests/conftest.py): tests marked `long` are the long forms of checks whose short form
runs by default (one source of three, one size of several). They run with `--long` (`./cdc test --long`) or when
a `-m` expression names them; otherwise they are deselected, and pytest's closing line counts them."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true", default=False,
                     help="also run the long forms (tests marked `long`), which a default run deselects")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("long") or config.getoption("markexpr"):
        return
    kept, deselected = [], []
    for item in items:
        (deselected if item.get_closest_marker("long") else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    deselected = [item for item in terminalreporter.stats.get("deselected", []) if item.get_closest_marker("long")]
    if deselected:
        terminalreporter.write_line(f"{len(deselected)} long forms not run (`./cdc test --long` runs them too)")
