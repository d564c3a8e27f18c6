"""A pytest plugin (registered by tests/conftest.py when xdist is on): how `CDC_TEST_WORKERS=N ./cdc test` spreads
the run over several worker processes (`-n N --dist loadfile`).

A test file is the unit of work, so module fixtures (a replica set per module) start once. The suites whose session
fixtures are heavy go to one worker as a whole (spark: a local Spark JVM; browser: a whole platform and a browser).
These and the other slow suites are handed out first, so the run does not end waiting for one long file. (Each
worker running MariaDB suite files starts a MariaDB server of its own: tests/mariadb/conftest.py.)
The controller gathers what the summary prints from the workers' outputs (tests/run_summary.py, tests/long_forms.py).
"""

from __future__ import annotations

import os

import pytest
from xdist.scheduler import LoadFileScheduling

from tests import long_forms, run_summary

# suites run by one worker each, whole
ONE_WORKER = ("spark", "browser")
# handed out first, in this order: the longest units of work (measured with --durations); the rest keep their order
FIRST = ("spark", "browser", "faults", "compat", "mariadb", "postgres", "integration")


class SuiteOrFileScheduling(LoadFileScheduling):
    def _split_scope(self, nodeid: str) -> str:
        suite = run_summary.suite_of(nodeid)
        return suite if suite in ONE_WORKER else super()._split_scope(nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadfile":
        return SuiteOrFileScheduling(config, log)
    return None


def _rank(item: pytest.Item) -> int:
    suite = run_summary.suite_of(item.nodeid)
    return FIRST.index(suite) if suite in FIRST else len(FIRST)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Only in a worker (the schedule follows the collection's order); a serial run keeps pytest's order.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=_rank)  # stable: files stay whole and in order within a suite


def pytest_testnodedown(node, error) -> None:
    output = getattr(node, "workeroutput", None) or {}
    run_summary.mark_seen_running(output.get(run_summary.WORKER_OUTPUT_KEY, ()))
    long_forms.note_deselected(node.config, output.get(long_forms.WORKER_OUTPUT_KEY, 0))
