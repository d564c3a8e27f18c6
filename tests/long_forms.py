"""A pytest plugin (loaded by tests/conftest.py): tests marked `long` are the long forms of checks whose short form
runs by default (one source of three, one size of several). They run with `--long` (`./cdc test --long`) or when
a `-m` expression names them; otherwise they are deselected, and the summary counts them (in a parallel run each
worker hands its count to the controller: tests/parallel.py)."""

from __future__ import annotations

import pytest

DESELECTED = pytest.StashKey[int]()
WORKER_OUTPUT_KEY = "long_forms_deselected"


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
    note_deselected(config, len(deselected))
    output = getattr(config, "workeroutput", None)  # set only in an xdist worker
    if output is not None:
        output[WORKER_OUTPUT_KEY] = len(deselected)


def note_deselected(config: pytest.Config, count: int) -> None:
    """Every worker collects the same tests, so the count is the same in each: the largest one stands."""
    config.stash[DESELECTED] = max(config.stash.get(DESELECTED, 0), count)


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    count = config.stash.get(DESELECTED, 0)
    if count:
        terminalreporter.write_line(f"{count} long forms not run (`./cdc test --long` runs them too)")
