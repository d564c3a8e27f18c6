"""The broker-kill scenario on a private 3-broker cluster (`python -m bench.faults.cluster`): kill -9 of the broker
leading the pipeline's offsets partition, then of its transaction coordinator, while the writers write; nothing is
lost, duplicated or reordered, and the pipeline goes on with two brokers (recovery printed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PORTS = os.environ.get("BENCH_FAULTS_PORTS", "45040-45099")  # this suite's own; the shared stack uses others

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ERRORS = ("lost", "duplicated", "reordered", "unexpected", "tombstone_errors", "transaction_errors",
          "state_mismatches", "runner_exits")


@pytest.mark.timeout(1200)
# the brokers' faults are the same whichever source feeds the pipeline: PostgreSQL's run is the short form
@pytest.mark.parametrize("source", ["postgres", pytest.param("mongodb", marks=pytest.mark.long)])
def test_killing_the_offsets_leader_and_the_transaction_coordinator_loses_and_repeats_nothing(tmp_path, source):
    figures = tmp_path / "cluster.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.faults.cluster", "--source", source, "--runs", "1", "--json", str(figures),
         "--ports", PORTS],
        cwd=ROOT, capture_output=True, text=True, timeout=1150,
    )
    assert figures.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    o = json.loads(figures.read_text())["cluster-broker-kill"]
    assert not o["aborted"] and o["faults"] == 2 and o["writes"] > 100, (o, result.stdout[-3000:])
    assert {name: o[name] for name in ERRORS} == dict.fromkeys(ERRORS, 0), (o, result.stdout[-3000:])
    assert len(o["recovery_s"]) == 2 and o["notes"] == [], o
    if source == "postgres":
        assert o["changes"] > 100, o  # the mixed writer's updates, deletes and transactions were checked
    assert "recovery p50/max" in result.stdout and result.returncode == 0, result.stdout[-3000:]
