"""`./cdc test [pytest args]`: the stack up, then pytest over several worker processes, then the stack as it was.

The services the selected tests need are started here, once, before pytest starts (workers would otherwise race to
start them), and those started here are stopped at the end (with DEVSTACK_KEEP=1 they stay), after the topics the
run created are deleted. The session fixtures find them running and leave them alone.

CDC_TEST_WORKERS=N runs the tests in N worker processes (pytest-xdist), each given whole test files
(tests/parallel.py); most tests wait (Kafka transactions, polling, servers restarting), so workers may outnumber
cores. The default is one process (0: no workers). An `-n`/`--dist` given on the command line is used as given.
A run gets a short temporary folder of its own (`--basetemp`), removed when it passes: xdist puts each worker's
folders one level deeper, and a private PostgreSQL's socket path under pytest's default one passed the 107 bytes a
Unix socket's path may have.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from devstack import stack as devstack

TESTS_DIR = Path(__file__).resolve().parent
# suites that need no service of the stack (they start what they use in-process)
STACKLESS = {"unit", "emulator"}
SERVICES = ["redis", "kafka", "mongo", "postgres", "mariadb"]
DEFAULT_WORKERS = "0"


def selected_suites(args: list[str]) -> set[str] | None:
    """The suites the path arguments name; None when no path is named (the whole of tests/)."""
    suites, named = set(), False
    for arg in args:
        if arg.startswith("-"):
            continue
        path = Path(arg.split("::", 1)[0])
        if not path.exists():
            continue  # an option's value (`-k expr`)
        named = True
        resolved = path.resolve()
        parts = resolved.relative_to(TESTS_DIR.parent).parts if resolved.is_relative_to(TESTS_DIR.parent) else ()
        if len(parts) >= 2 and parts[0] == TESTS_DIR.name:
            suites.add(parts[1])
        else:
            return None  # tests/ itself, or a path outside it: everything
    return suites if named else None


def services_needed(args: list[str]) -> list[str]:
    suites = selected_suites(args)
    return SERVICES if suites is None or suites - STACKLESS else []


def _given(args: list[str], short: str, long: str) -> bool:
    return any(a in (short, long) or a.startswith(long + "=") or (short and a.startswith(short) and len(a) > 2)
               for a in args)


def parallel_args(args: list[str]) -> list[str]:
    """The xdist options to add to the command line's: workers unless it names its own, whole files per worker."""
    if "no:xdist" in args:
        return []
    count = os.environ.get("CDC_TEST_WORKERS", DEFAULT_WORKERS)
    workers = [] if _given(args, "-n", "--numprocesses") else ["-n", count]
    return workers + ([] if _given(args, "", "--dist") else ["--dist", "loadfile"])


def main(args: list[str]) -> int:
    names = services_needed(args)
    started = devstack.up(names, echo=print) if names else []
    topics_before = None
    if "kafka" in started:
        from tests.topic_cleanup import topic_names

        topics_before = topic_names(devstack.endpoints().kafka_bootstrap)
    basetemp = [] if _given(args, "", "--basetemp") else [f"--basetemp={tempfile.mkdtemp(prefix='cdc-test-')}"]
    try:
        code = subprocess.call([sys.executable, "-m", "pytest", *parallel_args(args), *basetemp, *args])
        if code == 0 and basetemp:
            shutil.rmtree(basetemp[0].split("=", 1)[1], ignore_errors=True)
        return code
    finally:
        if topics_before is not None:
            from tests.topic_cleanup import delete_new_topics

            delete_new_topics(devstack.endpoints().kafka_bootstrap, topics_before)
        if started and not os.environ.get("DEVSTACK_KEEP"):
            devstack.down(started, echo=print)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
