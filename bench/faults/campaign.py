"""One connector under faults (Session) and the scenarios (Campaign), for any source in sources.py."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from bench.faults.checker import Checker, Outcome, account
from bench.faults.hook import CommitHook
from bench.faults.netproxy import FaultProxy
from bench.faults.sources import wait_gone
from bench.faults.verify import Collector, verify
from bench.faults.workload import TARGETS, Workload, read_log
from bench.faults.writer import TARGET_VARIABLE, WRITE_RATE, read_acks
from devstack import settings
from devstack.private_kafka import PrivateKafka, free_ports

PRELOAD = 20_000  # rows the kill-snapshot runs snapshot
DRAIN_S = 120  # how long the checker may take to see every acknowledged write after the last fault
MAX_EXITS = 5  # unplanned runner exits in one session before the scenario is aborted
COMMIT_STALL_S = 150  # past the sink's commit deadline
NETWORK_FAULTS = ("latency", "blackhole", "reset")  # source-network, in turn
SEED_ROWS = 300  # rows per workload table before the connector starts (its snapshot reads them under writes)


class CampaignAborted(Exception):
    """A scenario cannot go on (the runner keeps exiting); reported, and the campaign fails."""


class Session:
    """One connector (fresh name and database), its runner process, the writer and the checker."""

    def __init__(self, campaign: Campaign, label: str, hooked: bool = False, **properties):
        self.campaign = campaign
        self.name = f"fc{label}{uuid.uuid4().hex[:8]}"
        self.dir = campaign.dir / self.name
        self.dir.mkdir(parents=True)
        self.config_path = self.dir / "connector.json"
        source = campaign.source
        source.prepare(self.name)
        # the mixed writer (relational sources): inserts, updates, deletes, multi-statement transactions
        self.workload_tables = source.workload_topics(self.name) if source.kind in TARGETS else {}
        self.workload_log = self.dir / "workload.jsonl"
        if self.workload_tables:
            target = TARGETS[source.kind](source.writer_target(self.name), self.name)
            target.create_tables()
            Workload(target, self.workload_log).seed(SEED_ROWS)
            properties = {"provide.transaction.metadata": True, **properties}
        self.transaction_topic = f"{self.name}.transaction"
        self.collector = Collector(campaign.kafka.bootstrap, [*self.workload_tables, self.transaction_topic])
        self.workload: subprocess.Popen | None = None
        self.workload_rows: dict | None = None
        self.config_path.write_text(json.dumps({
            "name": self.name, "topic.prefix": self.name, **source.properties(self.name),
            "offset.storage.topic": f"{self.name}.offsets", "poll.interval.ms": 50, "max.batch.size": 64,
            **properties,
        }))
        self.config_path.chmod(0o600)  # it holds the (private, throwaway) server's password
        self.acks_path = self.dir / "acks.txt"
        self.checker = Checker(campaign.kafka.bootstrap, source.topics(self.name), source.parse)
        self.runner: subprocess.Popen | None = None
        self.writer: subprocess.Popen | None = None
        self.runner_starts = 0
        self.faults: list[tuple[float, float]] = []  # (start, end) of each fault, monotonic
        self.preloaded = 0
        self.commit_hook = CommitHook(self.dir / "hook") if hooked else None  # runner started with the hook
        self.outcome = Outcome(sessions=1)

    # processes
    def start_runner(self) -> None:
        argv = ["connectors", "run", str(self.config_path)]
        if self.commit_hook is not None:
            argv = ["bench.faults", "runner", str(self.config_path), "--freeze-dir", str(self.commit_hook.directory)]
        with open(self.dir / "runner.log", "ab") as log:  # the child keeps its own copy of the descriptor
            self.runner = subprocess.Popen(
                [sys.executable, "-m", *argv, "--bootstrap-servers", self.campaign.kafka.bootstrap],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=settings.PROJECT_ROOT)
        self.runner_starts += 1

    def kill_runner(self) -> None:
        self.runner.send_signal(signal.SIGKILL)
        self.runner.wait()

    def supervise(self) -> None:
        """Restarts a runner that exited on its own (as a supervisor would) and counts it."""
        if self.runner is not None and self.runner.poll() is not None:
            self.outcome.unplanned_exits += 1
            self.outcome.notes.append(f"{self.name}: runner exited with status {self.runner.returncode}; "
                                      f"restarted (log: {self.dir / 'runner.log'})")
            if self.outcome.unplanned_exits >= MAX_EXITS:
                tail = "\n    ".join(self.log_text().splitlines()[-15:])
                raise CampaignAborted(f"{self.name}: the runner exited {MAX_EXITS} times; its last lines:\n    {tail}")
            self.start_runner()

    def start_writer(self) -> None:
        source = self.campaign.source
        with open(self.dir / "writer.log", "ab") as log:
            self.writer = subprocess.Popen(
                [sys.executable, "-m", "bench.faults", "writer", "--source", source.kind, self.name,
                 str(self.acks_path), "--rate", str(self.campaign.rate)],
                env={**os.environ, TARGET_VARIABLE: source.writer_target(self.name)},
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=settings.PROJECT_ROOT)
        if self.workload_tables:
            with open(self.dir / "workload.log", "ab") as log:
                self.workload = subprocess.Popen(
                    [sys.executable, "-m", "bench.faults", "workload", "--source", source.kind, self.name,
                     str(self.workload_log), "--rate", str(max(1.0, self.campaign.rate / 3))],
                    env={**os.environ, TARGET_VARIABLE: source.writer_target(self.name)},
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=settings.PROJECT_ROOT)

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.supervise()
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    def wait_for(self, condition, timeout: float, what: str) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                self.outcome.notes.append(f"{self.name}: gave up after {timeout:.0f}s waiting for {what}")
                return False
            self.supervise()
            time.sleep(0.05)
        return True

    def fault(self, started: float) -> None:
        """A fault that began at `started` is over now."""
        self.outcome.faults += 1
        self.faults.append((started, time.monotonic()))

    def log_text(self) -> str:
        return (self.dir / "runner.log").read_text(errors="replace")

    # the session
    def __enter__(self) -> Session:
        self.checker.start()
        if self.workload_tables:
            self.collector.start()
        self.start_runner()
        return self

    def wait_streaming(self) -> None:
        """The writer runs and its inserts come back as streamed events: the change stream is open."""
        if self.writer is None:
            self.start_writer()
        self.wait_for(lambda: self.checker.count("events", "c") > 0, 120, "the first streamed event")

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None:  # aborted: stop everything, check nothing
            self._stop_processes()
            return
        try:
            for writer in (self.writer, self.workload):
                if writer is not None:
                    writer.send_signal(signal.SIGTERM)
            for writer, timeout in ((self.writer, 30), (self.workload, 120)):
                if writer is not None:
                    writer.wait(timeout)
            self._drain()
            self._drain_workload()
        finally:
            self._stop_processes()
        self._check()

    def _stop_processes(self) -> None:
        for process in (self.writer, self.workload, self.runner):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.checker.halt.set()
        self.checker.join(10)
        self.collector.halt.set()
        if self.collector.is_alive():
            self.collector.join(10)

    def _drain(self) -> None:
        acks = read_acks(self.acks_path) if self.acks_path.exists() else {}
        preload = self.preloaded

        def complete() -> bool:
            seen = self.checker.snapshot()
            events = {s.seq for s in seen if s.kind == "events"}
            loaded = {s.seq for s in seen if s.kind == "preload"}
            return events >= set(acks) and len(loaded) >= preload

        self.wait_for(complete, DRAIN_S, "every acknowledged write to be delivered")

    def _verify_workload(self, rows):
        return verify(read_log(self.workload_log), self.collector.snapshot(), self.workload_tables,
                      self.transaction_topic, rows)

    def _drain_workload(self) -> None:
        """Waits until every logged write is delivered, then reads the tables for the final-state check."""
        if not self.workload_tables:
            return
        self.wait_for(lambda: self._verify_workload(None).lost == 0, DRAIN_S, "every workload write to be delivered")
        target = TARGETS[self.campaign.source.kind](self.campaign.source.writer_target(self.name), self.name)
        self.workload_rows = target.rows()

    def _check(self) -> None:
        acks = read_acks(self.acks_path) if self.acks_path.exists() else {}
        account(self.outcome, acks, self.checker.snapshot(), self.preloaded, self.faults)
        if self.workload_tables:
            verdict = self._verify_workload(self.workload_rows)
            self.outcome.add_verdict(verdict, self.name)
            if verdict.failed:  # what the consumer held, to look into (the work directory is kept)
                with open(self.dir / "topics.jsonl", "w") as dump:
                    for r in self.collector.snapshot():
                        dump.write(json.dumps([r.topic, r.partition, r.key, r.value, round(r.at, 3)]) + "\n")
        if self.outcome.recovery.count(None):
            self.outcome.notes.append(f"{self.name}: no event after a fault at all")
        self.outcome.recovery = [r for r in self.outcome.recovery if r is not None]


class Campaign:
    def __init__(self, kafka: PrivateKafka, source, workdir: Path, rng: random.Random, freeze_s: float,
                 rate: float = WRITE_RATE, ports: range | None = None):
        self.kafka, self.source, self.dir, self.rng = kafka, source, workdir, rng
        self.freeze_s, self.rate, self.ports = freeze_s, rate, ports

    def kill_streaming(self, runs: int) -> Outcome:
        with Session(self, "ks") as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                session.kill_runner()
                session.start_runner()
                session.fault(started)
            session.wait(2)
        return session.outcome

    def kill_snapshot(self, runs: int) -> Outcome:
        total = Outcome()
        for _ in range(runs):
            total.add(self._kill_one_snapshot())
        return total

    def _preloaded_session(self, label: str, hooked: bool = False) -> Session:
        """A session whose connector starts with a snapshot of PRELOAD rows (MongoDB: chunk reads slowed by 100 ms)."""
        chunk = self.source.chunk
        properties = {"snapshot.chunk.size": chunk, "snapshot.fetch.size": chunk, "snapshot.max.threads": 2}
        session = Session(self, label, hooked, **properties)
        self.source.preload(session.name, PRELOAD)
        session.preloaded = PRELOAD
        self.source.slow_snapshot()
        return session

    def _kill_one_snapshot(self) -> Outcome:
        session = self._preloaded_session("kn")
        rows = session.checker.count
        try:
            with session:
                session.start_writer()
                chunk = self.source.chunk
                at_least = self.rng.randint(4, PRELOAD // chunk // 2) * chunk
                if session.wait_for(lambda: rows("preload") >= at_least, 120, f"{at_least} snapshot rows"):
                    # hold every further chunk read (the final chunk's too) so the kill lands mid-snapshot
                    self.source.hold_snapshot()
                    started = time.monotonic()
                    session.kill_runner()
                    self.source.slow_snapshot()
                    if " completed: " in session.log_text():
                        session.outcome.notes.append(f"{session.name}: the snapshot ended before the kill")
                    session.start_runner()
                    session.fault(started)
                session.wait_for(lambda: rows("preload") >= PRELOAD, 180, "the snapshot")
                session.wait_streaming()
        finally:
            self.source.normal_reads()
        return session.outcome

    def broker_stop(self, runs: int) -> Outcome:
        with Session(self, "bs") as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                self.kafka.freeze()
                try:
                    session.wait(self.rng.uniform(self.freeze_s, self.freeze_s + 10))
                finally:
                    self.kafka.thaw()
                session.fault(started)
                session.wait_for(lambda n=session.checker.count("events"): session.checker.count("events") > n,
                                 180, "events after the broker came back")
            session.wait(2)
        return session.outcome

    def _freeze_at_commit(self, session: Session, low_s: float | None = None) -> bool:
        """Arms the hook, freezes the broker as the next commit goes out, thaws it low_s to low_s + 10 s later
        (default --freeze)."""
        low_s = self.freeze_s if low_s is None else low_s
        hook = session.commit_hook
        hook.arm()
        if not session.wait_for(hook.at_commit.exists, 60, "a commit to freeze the broker at"):
            hook.disarm()
            return False
        started = time.monotonic()
        self.kafka.freeze()
        hook.frozen.touch()
        try:
            session.wait(self.rng.uniform(low_s, low_s + 10))
        finally:
            self.kafka.thaw()
            hook.disarm()
        session.fault(started)
        return True

    def broker_stop_commit(self, runs: int) -> Outcome:
        with Session(self, "bc", hooked=True) as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                if self._freeze_at_commit(session):
                    session.wait_for(lambda n=session.checker.count("events"): session.checker.count("events") > n,
                                     180, "events after the broker came back")
            session.wait(2)
        return session.outcome

    def commit_stall(self, runs: int) -> Outcome:
        """A commit_transaction stalled past the sink's commit deadline (120 s by default): the broker frozen as a
        streaming batch's commit goes out, for COMMIT_STALL_S to COMMIT_STALL_S + 10 s."""
        with Session(self, "cs", hooked=True) as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                if self._freeze_at_commit(session, COMMIT_STALL_S):
                    session.wait_for(lambda n=session.checker.count("events"): session.checker.count("events") > n,
                                     240, "events after the stalled commit")
            session.wait(2)
        return session.outcome

    def broker_stop_snapshot(self, runs: int) -> Outcome:
        total = Outcome()
        for _ in range(runs):
            total.add(self._freeze_one_snapshot())
        return total

    def _freeze_one_snapshot(self) -> Outcome:
        session = self._preloaded_session("bn", hooked=True)
        rows = session.checker.count
        try:
            with session:
                session.start_writer()
                chunk = self.source.chunk
                at_least = self.rng.randint(2, PRELOAD // chunk // 4) * chunk
                if session.wait_for(lambda: rows("preload") >= at_least, 120, f"{at_least} snapshot rows"):
                    self._freeze_at_commit(session)  # a chunk's commit: at least 20 chunks are left to read
                session.wait_for(lambda: rows("preload") >= PRELOAD, 240, "the snapshot")
                session.wait_streaming()
        finally:
            self.source.normal_reads()
        return session.outcome

    def step_down(self, runs: int) -> Outcome:
        with Session(self, "sd") as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                self.source.step_down()
                session.fault(started)
            session.wait(2)
        return session.outcome

    def source_restart(self, runs: int) -> Outcome:
        with Session(self, "sr") as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                self.source.restart()  # returns once the server accepts connections again
                session.fault(started)
                session.wait_for(lambda n=session.checker.count("events"): session.checker.count("events") > n,
                                 180, "events after the server came back")
            session.wait(2)
        return session.outcome

    def source_crash(self, runs: int) -> Outcome:
        """The server crashes under the write load (PostgreSQL immediate shutdown, MariaDB kill -9), then starts."""
        with Session(self, "sc") as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                self.source.crash()
                session.fault(started)
                session.wait_for(lambda n=session.checker.count("events"): session.checker.count("events") > n,
                                 180, "events after the server crashed and came back")
            session.wait(2)
        return session.outcome

    def broker_kill(self, runs: int) -> Outcome:
        """kill -9 of the broker under the write load, then a start (log and transaction state recovery)."""
        with Session(self, "bk") as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                pid = self.kafka.pid
                os.kill(pid, signal.SIGKILL)
                wait_gone(pid)
                self.kafka.start()
                session.fault(started)
                session.wait_for(lambda n=session.checker.count("events"): session.checker.count("events") > n,
                                 240, "events after the broker was killed and came back")
            session.wait(2)
        return session.outcome

    def source_network(self, runs: int) -> Outcome:
        """The connector reaches its server through the fault proxy; faults in turn: 0.2 s latency each way for
        5-8 s, a blackhole of 20-25 s ended by a reset (as toxiproxy's timeout toxic), a reset of every connection.
        The writers go to the server directly."""
        listen = free_ports(1, self.ports)[0] if self.ports is not None else 0
        proxy = FaultProxy("127.0.0.1", self.source.server.port, listen).start()
        try:
            with Session(self, "nw", **{"database.port": proxy.port}) as session:
                session.wait_streaming()
                for run in range(runs):
                    session.wait(self.rng.uniform(0.5, 3.0))
                    fault = NETWORK_FAULTS[run % len(NETWORK_FAULTS)]
                    started = time.monotonic()
                    if fault == "latency":
                        proxy.latency(0.2)
                        session.wait(self.rng.uniform(5, 8))
                    elif fault == "blackhole":
                        proxy.blackhole()
                        session.wait(self.rng.uniform(20, 25))
                        proxy.reset()
                    else:
                        proxy.reset()
                    proxy.heal()
                    session.fault(started)
                    session.wait_for(lambda n=session.checker.count("events"): session.checker.count("events") > n,
                                     180, f"events after the network {fault}")
                session.wait(2)
        finally:
            proxy.close()
        return session.outcome
