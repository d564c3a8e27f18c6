"""The campaign's second, independent checker: the product's own Verify (`python -m connectors verify`, the same
engine the dashboard, the API and the Celery task run), on a session's connector configuration against its source
and topics, once the writer has stopped and the checker has seen every logged write delivered.

It reads what verify.py does not trust: the connector's event building (the snapshot's reads of the tables now,
built into events) against the latest state per key a read_committed consumer rebuilds from the topics. Any row
missing in a topic, extra in it or different fails the scenario, as a lost write does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from devstack import settings

WAIT_S = 120  # for the connector's committed offset to cover the position Verify reads the source at
MAX_KEYS = 20  # mismatches Verify lists (all are counted)


@dataclass
class VerifyResult:
    rows: int = 0  # source rows compared
    missing: int = 0  # in the source, not in the topic
    extra: int = 0  # in the topic, not in the source
    different: int = 0
    error: str | None = None  # Verify could not compare (the connector not keeping up, a source unreachable)
    mismatches: list[str] = field(default_factory=list)  # "kind table key {fields}", the first MAX_KEYS

    @property
    def failed(self) -> bool:
        return bool(self.missing or self.extra or self.different or self.error)


def run_verify(config_path: Path, bootstrap: str, log: Path, timeout: float = WAIT_S + 480) -> VerifyResult:
    """`python -m connectors verify CONFIG --json` against `bootstrap` (exit status 0: equal, 1: rows differ, 2: it
    could not compare), its output and time kept in `log`."""
    argv = [sys.executable, "-m", "connectors", "verify", str(config_path), "--bootstrap-servers", bootstrap,
            "--json", "--max-keys", str(MAX_KEYS), "--wait-seconds", str(WAIT_S)]
    started = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=settings.PROJECT_ROOT, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return VerifyResult(error=f"Verify did not finish within {timeout:.0f}s")
    log.write_text(f"exit status {done.returncode} after {time.monotonic() - started:.1f}s\n"
                   f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    try:
        report = json.loads(done.stdout) if done.returncode in (0, 1) else None
    except ValueError:
        report = None
    if report is None:  # an error it reported (status 2), or one it did not catch (a traceback, status 1)
        lines = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return VerifyResult(error=f"Verify could not compare (exit status {done.returncode}, see {log}): "
                                  f"{lines[-1][:400] if lines else 'no output'}")
    return VerifyResult(
        rows=report["rows"], missing=report["missing"], extra=report["extra"], different=report["different"],
        mismatches=[f"{m['kind']} {m['table']} {m['key']}" + (f" {json.dumps(m['fields'])}" if m["fields"] else "")
                    for m in report["mismatches"]])
