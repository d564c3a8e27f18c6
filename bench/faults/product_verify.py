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


def run_verify(config_path: Path, bootstrap: str, timeout: float = WAIT_S + 480) -> VerifyResult:
    """`python -m connectors verify CONFIG --json` against `bootstrap` (exit status 0: equal, 1: rows differ, 2: it
    could not compare)."""
    argv = [sys.executable, "-m", "connectors", "verify", str(config_path), "--bootstrap-servers", bootstrap,
            "--json", "--max-keys", str(MAX_KEYS), "--wait-seconds", str(WAIT_S)]
    try:
        done = subprocess.run(argv, cwd=settings.PROJECT_ROOT, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return VerifyResult(error=f"Verify did not finish within {timeout:.0f}s")
    if done.returncode not in (0, 1):
        reason = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return VerifyResult(error=f"Verify could not compare (exit status {done.returncode}): "
                                  f"{reason[-1] if reason else 'no output'}")
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return VerifyResult(error=f"Verify printed no report: {done.stdout[-300:]!r} {done.stderr[-300:]!r}")
    return VerifyResult(
        rows=report["rows"], missing=report["missing"], extra=report["extra"], different=report["different"],
        mismatches=[f"{m['kind']} {m['table']} {m['key']}" + (f" {json.dumps(m['fields'])}" if m["fields"] else "")
                    for m in report["mismatches"]])
