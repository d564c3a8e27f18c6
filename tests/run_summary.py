"""A pytest plugin (loaded by tests/conftest.py): before pytest's closing line, what the run ran against (the
devstack's services as the devstack reports them, Chromium) and how many tests of each suite under tests/ passed,
failed and were skipped — so a reader sees at once whether anything was skipped for a missing service.

pytest's own summary line stays the last line of the output (CI reads it).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
# tests/browser/conftest.py reads the same variable with the same default
CHROMIUM = os.environ.get("CDC_CHROMIUM", "/usr/bin/chromium")
_seen_running: set[str] = set()
WORKER_OUTPUT_KEY = "services_seen_running"  # what an xdist worker hands the controller (tests/parallel.py)


def _services():
    from devstack import stack

    return [s for s in stack.services() if s.long_running]


def _external(service) -> bool:
    """Whether the devstack points this service at a server it does not run (MONGODB_URI, POSTGRES_DSN, ...)."""
    for name in ("uses_external_server", "uses_real_mongodb"):
        check = getattr(service.module, name, None)
        if callable(check) and check():
            return True
    return False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    # Sampled while a test runs (its fixtures are up): services the run started are stopped again by the time the
    # summary prints. A service is only looked at until it has been seen running once.
    try:
        for service in _services():
            if service.name not in _seen_running and service.module.process.is_running():
                _seen_running.add(service.name)
    except Exception:  # noqa: S110 - the summary must never change a test's outcome
        pass
    return (yield)


def mark_seen_running(names) -> None:
    """Services a worker of a parallel run saw running; the controller prints the summary."""
    _seen_running.update(names)


def pytest_sessionfinish(session) -> None:
    output = getattr(session.config, "workeroutput", None)  # set only in an xdist worker
    if output is not None:
        output[WORKER_OUTPUT_KEY] = sorted(_seen_running)


def redact(endpoint: str) -> str:
    """An endpoint without its password (URL user info or a libpq `password=` keyword)."""
    endpoint = re.sub(r"(//[^:/@\s]*):[^@/\s]*@", r"\1:***@", endpoint)
    return re.sub(r"(password=)\S+", r"\1***", endpoint, flags=re.IGNORECASE)


def service_lines() -> list[str]:
    lines = []
    for service in _services():
        if _external(service):
            state = "external server"
        else:
            kind = "emulator" if service.name == "mongo" else "devstack"
            used = service.name in _seen_running or service.module.process.is_running()
            state = f"{kind}, {'running' if used else 'NOT running'}"
        lines.append(_line(service.name, state, redact(service.endpoint)))
    return lines


def chromium_line() -> str:
    if not os.access(CHROMIUM, os.X_OK):
        return _line("chromium", "NOT installed", CHROMIUM)
    try:
        out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=30).stdout
        match = re.search(r"\d+(\.\d+)+", out)
        version = match.group() if match else "version unknown"
    except (OSError, subprocess.SubprocessError):
        version = "version unknown"
    return _line("chromium", version, CHROMIUM)


def spec_tests_line() -> str:
    from tests.emulator import spec_source

    missing = [m for m in map(spec_source.missing_message, spec_source.SUITES) if m]
    if missing:
        return _line("mongo-spec", "MISSING", missing[0])
    source = f"pymongo {spec_source.pinned_pymongo()} sdist"
    if os.environ.get("MONGODB_SPEC_TESTS"):
        source = "MONGODB_SPEC_TESTS"
    return _line("mongo-spec", source, str(spec_source.root()))


def _line(name: str, state: str, where: str) -> str:
    return f"{name:<11} {state:<24} {where}"


def suite_of(nodeid: str) -> str:
    parts = Path(nodeid.split("::", 1)[0]).parts
    if len(parts) > 2 and parts[0] == TESTS_DIR.name:
        return parts[1]
    return parts[0] if parts else "?"


def suites_on_disk() -> list[str]:
    return sorted(p.name for p in TESTS_DIR.iterdir() if p.is_dir() and any(p.rglob("test_*.py")))


def suite_lines(stats: dict) -> list[str]:
    counts: dict[str, Counter] = {}
    for outcome in OUTCOMES:
        for report in stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", "")
            if nodeid:
                counts.setdefault(suite_of(nodeid), Counter())[outcome] += 1
    lines = [f"{'suite':<14} {'passed':>7} {'failed':>7} {'errors':>7} {'skipped':>8} {'xfailed':>8}"]
    for suite in sorted(set(suites_on_disk()) | set(counts)):
        c = counts.get(suite)
        if c is None:
            lines.append(f"{suite:<14} {'not selected':>7}")
            continue
        lines.append(f"{suite:<14} {c['passed'] + c['xpassed']:>7} {c['failed']:>7} {c['error']:>7} "
                     f"{c['skipped']:>8} {c['xfailed']:>8}")
    return lines


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    # Outermost wrapper: the part after `yield` runs after pytest's "short test summary info" and before its final
    # "N passed, M skipped in Ts" line, which is printed once every terminal_summary hook has returned.
    result = yield
    if hasattr(config, "workerinput"):  # an xdist worker: the controller prints the summary, once
        return result
    if not any(terminalreporter.stats.get(outcome) for outcome in OUTCOMES):
        return result
    try:
        lines = [*service_lines(), chromium_line(), spec_tests_line()]
    except Exception as exc:  # the summary must never turn a green run red
        lines = [f"(could not read the devstack's services: {exc})"]
    terminalreporter.write_sep("=", "what this run ran against")
    for line in lines:
        terminalreporter.write_line(line)
    terminalreporter.write_sep("=", "tests per suite")
    for line in suite_lines(terminalreporter.stats):
        terminalreporter.write_line(line)
    return result
