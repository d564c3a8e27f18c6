"""The fault campaign (`python -m bench.faults`): its accounting, its abort path, and a short form in CI (kill -9 of
the runner in streaming and in a snapshot, a broker frozen at a commit; on a private broker and replica set) with
nothing lost, duplicated or reordered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.faults import MAX_EXITS, CampaignAborted, Outcome, Seen, Session, account
from bench.faults.sources import MongoSource

ROOT = Path(__file__).resolve().parents[2]


def _port_range() -> list[str]:
    """`--ports` from BENCH_FAULTS_PORTS (LOW-HIGH), for a machine where several stacks share the ports."""
    ports = os.environ.get("BENCH_FAULTS_PORTS")
    return ["--ports", ports] if ports else []


def _seen(kind: str, op: str, seq: int, at: float) -> Seen:
    return Seen(kind, op, seq, 0, at)


def test_accounting_counts_lost_duplicated_reordered_and_recovery():
    acks = {seq: float(seq) for seq in range(6)}  # write `seq` acknowledged at time seq
    seen = [_seen("events", "c", 0, 0.5), _seen("events", "c", 2, 2.5), _seen("events", "c", 1, 2.6),
            _seen("events", "c", 2, 2.7), _seen("events", "r", 3, 3.5), _seen("events", "c", 3, 3.6),
            _seen("events", "c", 5, 9.0),
            _seen("preload", "r", 0, 1.0), _seen("preload", "r", 0, 1.1), _seen("preload", "c", 1, 1.2)]
    out = account(Outcome(), acks, seen, preloaded=3, faults=[(1.5, 2.0), (4.5, 6.0), (9.5, 10.0)])
    assert out.writes == 6 + 3
    assert out.lost == 1 + 2  # write 4; preloaded rows 1 (streamed only, not read) and 2
    assert out.duplicated == 1 + 1  # write 2 streamed twice; preloaded row 0 read twice ("r" then "c" of 3 is fine)
    assert out.reordered == 1  # 1 after 2
    # first event of a write acknowledged since each fault began, after its end; none after the last one
    assert out.recovery == [0.5, 3.0, None]


def test_accounting_of_a_clean_run():
    acks = {seq: float(seq) for seq in range(4)}
    seen = [_seen("events", "c", seq, seq + 0.2) for seq in range(4)]
    out = account(Outcome(), acks, seen, preloaded=0, faults=[])
    assert (out.writes, out.lost, out.duplicated, out.reordered, out.recovery) == (4, 0, 0, 0, [])


def test_accounting_tells_restarted_snapshots_apart():
    """A PostgreSQL snapshot killed midway starts over under a new LSN: rows the first attempt read come again as
    "r" (re-snapshotted, not duplicated); a row read twice by one attempt is still a duplicate."""
    acks = {0: 0.0, 1: 0.1}
    seen = [Seen("preload", "r", 0, 0, 1.0, "A"), Seen("preload", "r", 1, 0, 1.1, "A"),
            Seen("events", "r", 0, 0, 1.2, "A"),
            Seen("preload", "r", 0, 0, 2.0, "B"), Seen("preload", "r", 1, 0, 2.1, "B"),
            Seen("preload", "r", 2, 0, 2.2, "B"), Seen("preload", "r", 2, 0, 2.3, "B"),
            Seen("events", "r", 0, 0, 2.4, "B"), Seen("events", "c", 1, 0, 2.5)]
    out = account(Outcome(), acks, seen, preloaded=3, faults=[])
    assert (out.lost, out.duplicated, out.resnapshotted) == (0, 1, 3)  # preload 0, 1 and write 0 read again


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_short_campaign_loses_duplicates_and_reorders_nothing(tmp_path):
    """One run each (about 100 s): kill -9 in streaming and mid-snapshot, and a 35-45 s broker freeze exactly as a
    commit goes out (the stall that duplicated a batch before issue 12.1 was fixed)."""
    figures = tmp_path / "faults.json"
    scenarios = ("kill-streaming", "kill-snapshot", "broker-stop-commit")
    result = subprocess.run(
        [sys.executable, "-m", "bench.faults", "--short", "--runs", "1", "--scenarios", ",".join(scenarios),
         "--json", str(figures), *_port_range()],
        cwd=ROOT, capture_output=True, text=True, timeout=280,
    )
    assert figures.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    outcome = json.loads(figures.read_text())
    for scenario in scenarios:
        o = outcome[scenario]
        assert o["runs"] == 1 and o["writes"] > 100, (scenario, o)
        assert (o["lost"], o["duplicated"], o["reordered"]) == (0, 0, 0), (scenario, o, result.stdout[-3000:])
        assert len(o["recovery_s"]) == 1 and o["runner_exits"] == 0 and o["notes"] == [], (scenario, o)
    assert outcome["kill-snapshot"]["writes"] > 20_000
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_short_postgres_campaign_checks_the_mixed_writer(tmp_path):
    """A kill -9 of a PostgreSQL runner (about 50 s) under the mixed writer: inserts, updates, deletes and
    multi-statement transactions over three tables, some rows read by the snapshot while they are written; the
    checker (unit-tested on hand-made topics in test_workload_checker.py) finds nothing lost, duplicated, reordered,
    no tombstone or transaction metadata error, and the topics' final state equals the tables."""
    figures = tmp_path / "faults.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.faults", "--source", "postgres", "--runs", "1", "--scenarios",
         "kill-streaming", "--json", str(figures), *_port_range()],
        cwd=ROOT, capture_output=True, text=True, timeout=220,
    )
    assert figures.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    o = json.loads(figures.read_text())["kill-streaming"]
    assert o["runs"] == 1 and o["changes"] > 100 and o["snapshot_rows"] > 100, o
    errors = ("lost", "duplicated", "reordered", "unexpected", "tombstone_errors", "transaction_errors",
              "state_mismatches", "runner_exits")
    assert {name: o[name] for name in errors} == dict.fromkeys(errors, 0), (o, result.stdout[-3000:])
    assert o["notes"] == [] and result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_a_runner_that_keeps_exiting_aborts_the_scenario(tmp_path):
    """A runner that cannot run (here: an invalid property) is restarted a few times, then the scenario is aborted
    with the runner's last lines, its processes stopped."""
    source = MongoSource(rs=SimpleNamespace(uri="mongodb://127.0.0.1:9/?replicaSet=rs0"))
    campaign = SimpleNamespace(dir=tmp_path, rate=10, source=source, kafka=SimpleNamespace(bootstrap="127.0.0.1:9"))
    session = Session(campaign, "ab", **{"snapshot.mode": "sometimes"})
    with pytest.raises(CampaignAborted, match=r"exited 5 times(.|\n)*snapshot\.mode"), session:
        session.wait(120)
    assert session.outcome.unplanned_exits == MAX_EXITS and session.runner.poll() is not None
    assert not session.checker.is_alive()


def test_a_runner_that_exited_on_its_own_fails_the_campaign():
    """A runner restarted after a crash delivered everything, but the crash itself is a failure of the run."""
    crashed = Outcome(faults=1, writes=100, unplanned_exits=1, notes=["runner exited with status 1; restarted"])
    assert crashed.failed
    assert not Outcome(faults=1, writes=100).failed


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
