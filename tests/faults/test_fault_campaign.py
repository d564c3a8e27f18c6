"""The fault campaign (`python -m bench.faults`): its abort path, and a short form in CI (kill -9 of the runner in
streaming and in a snapshot, a broker frozen at a commit; on a private broker and replica set, then PostgreSQL) with
nothing lost, duplicated or reordered. Its checker is tested on hand-made topics in test_workload_checker.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.faults import MAX_EXITS, CampaignAborted, Outcome, Session
from bench.faults.sources import MongoSource

ROOT = Path(__file__).resolve().parents[2]
ERRORS = ("lost", "duplicated", "reordered", "unexpected", "tombstone_errors", "transaction_errors",
          "state_mismatches", "runner_exits", "slow_recoveries")
VERIFY_ERRORS = ("missing", "extra", "different", "errors")


def _port_range() -> list[str]:
    """`--ports` from BENCH_FAULTS_PORTS (LOW-HIGH), for a machine where several stacks share the ports."""
    ports = os.environ.get("BENCH_FAULTS_PORTS")
    return ["--ports", ports] if ports else []


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("scenarios", [
    ("kill-streaming", "broker-stop-commit"),
    # a kill -9 mid-snapshot is also tests/faults/test_snapshot_kill9.py's, without the campaign's writer
    pytest.param(("kill-snapshot",), marks=pytest.mark.long),
], ids=["streaming", "snapshot"])
def test_short_campaign_loses_duplicates_and_reorders_nothing(tmp_path, scenarios):
    """One run each: kill -9 in streaming, and a 35-45 s broker freeze exactly as a commit goes out (the stall that
    once duplicated a batch); kill -9 mid-snapshot in the long form; under the writer's inserts, updates, deletes and
    multi-document transactions."""
    figures = tmp_path / "faults.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.faults", "--short", "--runs", "1", "--scenarios", ",".join(scenarios),
         "--json", str(figures), *_port_range()],
        cwd=ROOT, capture_output=True, text=True, timeout=560,
    )
    assert figures.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    outcome = json.loads(figures.read_text())
    for scenario in scenarios:
        o = outcome[scenario]
        assert o["runs"] == 1 and o["changes"] > 100 and o["snapshot_rows"] > 100, (scenario, o)
        assert {name: o[name] for name in ERRORS} == dict.fromkeys(ERRORS, 0), (scenario, o, result.stdout[-3000:])
        assert len(o["recovery_s"]) == 1 and o["notes"] == [], (scenario, o)
        assert o["verify"]["rows"] > 100, (scenario, o)
        assert {name: o["verify"][name] for name in VERIFY_ERRORS} == dict.fromkeys(VERIFY_ERRORS, 0), (scenario, o)
    if "kill-snapshot" in outcome:
        assert outcome["kill-snapshot"]["snapshot_rows"] > 19_000
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(660)
def test_short_postgres_campaign_checks_the_mixed_writer(tmp_path):
    """Two kill -9s of a PostgreSQL runner, then two of the broker (about 3 minutes), under the mixed writer: inserts,
    updates, deletes and multi-statement transactions over three tables, some rows read by the snapshot while they
    are written; the checker (unit-tested on hand-made topics in test_workload_checker.py) finds nothing lost,
    duplicated, reordered, no tombstone or transaction metadata error, and the topics' final state equals the tables;
    the product's Verify, run after it, finds every row of the tables in the topics and nothing else.

    Seed 42 puts the second runner kill 0.56 s after the first fault: it must wait for the restarted runner to stream
    (each runner started logs its pipeline's start before it is killed). The broker, killed twice, comes back each
    time, and holds no topic of a session already checked."""
    figures = tmp_path / "faults.json"
    kept = Path(tempfile.mkdtemp(prefix="cf-"))  # a short path: the private server's Unix socket lives below it
    try:
        result = subprocess.run(
            [sys.executable, "-m", "bench.faults", "--source", "postgres", "--runs", "2", "--scenarios",
             "kill-streaming,broker-kill", "--seed", "42", "--keep", "--json", str(figures), *_port_range()],
            cwd=ROOT, capture_output=True, text=True, timeout=640, env={**os.environ, "TMPDIR": str(kept)},
        )
        _check_kills_and_broker_kills(figures, kept, result)
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def _check_kills_and_broker_kills(figures: Path, kept: Path, result) -> None:
    assert figures.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    outcome = json.loads(figures.read_text())
    for scenario in ("kill-streaming", "broker-kill"):
        o = outcome[scenario]
        assert o["runs"] == 2 and len(o["recovery_s"]) == 2, (scenario, o, result.stdout[-3000:])
        assert o["changes"] > 100 and o["snapshot_rows"] > 100, (scenario, o)
        assert {name: o[name] for name in ERRORS} == dict.fromkeys(ERRORS, 0), (scenario, o, result.stdout[-3000:])
        # the second checker, the product's Verify, compared the tables with the topics after the scenario
        assert o["verify"]["rows"] > 100, (scenario, o)
        assert {name: o["verify"][name] for name in VERIFY_ERRORS} == dict.fromkeys(VERIFY_ERRORS, 0), (scenario, o)
        assert o["notes"] == [], (scenario, o)
    workdir = next(kept.glob("cdc-faults-*"))
    runner_log = next(workdir.glob("fcks*/runner.log")).read_text(errors="replace")
    assert runner_log.count(" starting: ") == 3, runner_log[-3000:]  # the first runner and both restarts
    session_logs = [path.name for path in (workdir / "stack" / "kafka" / "data").iterdir()
                    if path.name.startswith("fc") and not path.name.endswith("-delete")]
    assert session_logs == [], session_logs
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_a_runner_that_keeps_exiting_aborts_the_scenario(tmp_path):
    """A runner that cannot run (here: an invalid property) is restarted a few times, then the scenario is aborted
    with the runner's last lines, its processes stopped."""
    source = MongoSource(rs=SimpleNamespace(uri="mongodb://127.0.0.1:9/?replicaSet=rs0"))
    campaign = SimpleNamespace(dir=tmp_path, rate=10, source=source, kafka=SimpleNamespace(bootstrap="127.0.0.1:9"))
    session = Session(campaign, "ab", **{"snapshot.mode": "sometimes"})
    with pytest.raises(CampaignAborted, match=r"exited 5 times(.|\n)*snapshot\.mode"), session:
        session.wait(120)
    assert session.outcome.unplanned_exits == MAX_EXITS and session.runner.poll() is not None
    assert not session.collector.is_alive()


def test_a_runner_that_exited_on_its_own_fails_the_campaign():
    """A runner restarted after a crash delivered everything, but the crash itself is a failure of the run."""
    crashed = Outcome(faults=1, changes=100, unplanned_exits=1, notes=["runner exited with status 1; restarted"])
    assert crashed.failed
    assert not Outcome(faults=1, changes=100).failed


def test_a_row_verify_finds_different_fails_the_campaign():
    """Verify's mismatches (and a session it could not compare) fail a scenario as a lost write does."""
    assert Outcome(faults=1, changes=100, verify_rows=100, verify_different=1).failed
    assert Outcome(faults=1, changes=100, verify_errors=1).failed
    assert not Outcome(faults=1, changes=100, verify_rows=100).failed


def test_a_slow_or_missing_recovery_fails_the_campaign():
    """Everything delivered in the end is not enough: a pipeline must recover within 30 s of a fault."""
    assert Outcome(faults=2, changes=100, recovery=[1.2, 31.0]).failed
    assert Outcome(faults=2, changes=100, recovery=[1.2], unrecovered=1).failed
    assert not Outcome(faults=2, changes=100, recovery=[1.2, 29.0]).failed


def test_ports_come_from_the_range_given(tmp_path):
    from bench.faults.cli import port_range
    from devstack.private_kafka import PrivateKafka, free_ports

    ports = port_range("45300-45309")
    assert ports == range(45300, 45310)
    first = free_ports(3, ports)
    assert first == list(range(first[0], first[0] + 3)) and set(first) <= set(ports)
    assert PrivateKafka(tmp_path, ports).port in ports
    with pytest.raises(Exception, match="LOW-HIGH"):
        port_range("58000")
