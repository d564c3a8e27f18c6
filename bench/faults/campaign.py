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

from bench.faults.hook import CommitHook
from bench.faults.netproxy import FaultProxy
from bench.faults.platform import PrivatePlatform
from bench.faults.product_verify import run_verify
from bench.faults.report import Outcome
from bench.faults.sources import wait_gone
from bench.faults.verify import Collector, recovery, verify
from bench.faults.workload import TARGET_VARIABLE, TARGETS, WORKLOAD_RATE, Workload, read_log
from devstack import settings
from devstack.private_kafka import PrivateKafka, free_ports

DRAIN_S = 120  # how long the checker may take to see every logged write after the last fault
MAX_EXITS = 5  # unplanned runner exits in one session before the scenario is aborted
COMMIT_STALL_S = 150  # past the sink's commit deadline
NETWORK_FAULTS = ("latency", "blackhole", "reset")  # source-network, in turn
RECOVERY_WAIT_S = 180  # a fault's recovery awaited before the next fault
SEED_ROWS = 300  # rows per workload table before the connector starts (its snapshot reads them under writes)


class CampaignAborted(Exception):
    """A scenario cannot go on (the runner keeps exiting); reported, and the campaign fails."""


class Session:
    """One connector (fresh name and database), its runner process, the writer and the checker's consumer."""

    def __init__(self, campaign: Campaign, label: str, hooked: bool = False, bootstrap: str | None = None,
                 **properties):
        """`bootstrap`: where the runner reaches Kafka (default the broker itself; the consumer always does)."""
        self.campaign = campaign
        self.bootstrap = bootstrap or campaign.kafka.bootstrap
        self.name = f"fc{label}{uuid.uuid4().hex[:8]}"
        self.dir = campaign.dir / self.name
        self.dir.mkdir(parents=True)
        self.config_path = self.dir / "connector.json"
        source = campaign.source
        self.tables = source.workload_topics(self.name)  # topic -> table
        self.workload_log = self.dir / "workload.jsonl"
        self.transaction_topic = f"{self.name}.transaction"
        self.collector = Collector(campaign.kafka.bootstrap, [*self.tables, self.transaction_topic])
        self.workload: subprocess.Popen | None = None
        self.workload_rows: dict | None = None
        self.seeded = 0  # rows per table written before the connector starts
        self.config_path.write_text(json.dumps({
            "name": self.name, "topic.prefix": self.name, **source.properties(self.name),
            "offset.storage.topic": f"{self.name}.offsets", "poll.interval.ms": 50, "max.batch.size": 64,
            "provide.transaction.metadata": True, **properties,
        }))
        self.config_path.chmod(0o600)  # it holds the (private, throwaway) server's password
        self.runner: subprocess.Popen | None = None
        self.runner_starts = 0
        self.faults: list[tuple[float, float]] = []  # (start, end) of each fault, monotonic
        self.commit_hook = CommitHook(self.dir / "hook") if hooked else None  # runner started with the hook
        self.outcome = Outcome(sessions=1)

    def setup(self, rows_per_table: int = SEED_ROWS) -> Session:
        """The session's database and tables, with rows that exist before the connector starts (its snapshot reads
        them while the writer changes them)."""
        source = self.campaign.source
        source.prepare(self.name)
        target = self._target()
        target.create_tables()
        Workload(target, self.workload_log).seed(rows_per_table)
        self.seeded = rows_per_table
        return self

    def _target(self):
        return TARGETS[self.campaign.source.kind](self.campaign.source.writer_target(self.name), self.name)

    # processes
    def start_runner(self) -> None:
        argv = ["connectors", "run", str(self.config_path)]
        if self.commit_hook is not None:
            argv = ["bench.faults", "runner", str(self.config_path), "--freeze-dir", str(self.commit_hook.directory)]
        with open(self.dir / "runner.log", "ab") as log:  # the child keeps its own copy of the descriptor
            self.runner = subprocess.Popen(
                [sys.executable, "-m", *argv, "--bootstrap-servers", self.bootstrap],
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
        with open(self.dir / "workload.log", "ab") as log:
            self.workload = subprocess.Popen(
                [sys.executable, "-m", "bench.faults", "workload", "--source", source.kind, self.name,
                 str(self.workload_log), "--rate", str(self.campaign.rate)],
                env={**os.environ, TARGET_VARIABLE: source.writer_target(self.name)},
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=settings.PROJECT_ROOT)

    # what the consumer received so far
    def changes(self) -> int:
        return self.collector.count("c", "u", "d")

    def snapshot_rows(self) -> int:
        return self.collector.count("r")

    def snapshot_done(self) -> bool:
        """Every seeded row is read, but those the writer deleted (a row deleted before its chunk's read is not)."""
        deleted = sum(1 for entry in read_log(self.workload_log) for _, key, op, _ in entry["ops"]
                      if op == "d" and key < self.seeded)
        return self.snapshot_rows() >= self.seeded * len(self.tables) - deleted

    def wait_for_changes(self, what: str, timeout: float = 180) -> None:
        """After a fault: until its recovery (wait_recovered). The next fault must not begin before: a recovery
        still to come would then count the next fault's whole length (an event of a write held back by the last
        fault, delivered meanwhile, is no recovery). Before any fault: until a new change event arrives."""
        if self.faults:
            self.wait_recovered(timeout, what)
            return
        before = self.changes()
        self.wait_for(lambda: self.changes() > before, timeout, what)

    def wait_recovered(self, timeout: float, what: str = "the runner to stream again after the fault") -> bool:
        """Until the consumer has an event of a write logged since the last fault began (its recovery)."""
        start, end = self.faults[-1]

        def recovered() -> bool:
            return recovery(read_log(self.workload_log), self.collector.snapshot(), self.tables,
                            [(start, end)])[0] is not None

        return self.wait_for(recovered, timeout, what, interval=0.5)

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.supervise()
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    def wait_for(self, condition, timeout: float, what: str, interval: float = 0.05) -> bool:
        """`interval`: between two looks (longer for a condition that reads the whole log and topics)."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                self.outcome.notes.append(f"{self.name}: gave up after {timeout:.0f}s waiting for {what}")
                return False
            self.supervise()
            time.sleep(interval)
        return True

    def fault(self, started: float) -> None:
        """A fault that began at `started` is over now."""
        self.outcome.faults += 1
        self.faults.append((started, time.monotonic()))

    def log_text(self) -> str:
        return (self.dir / "runner.log").read_text(errors="replace")

    # the session
    def __enter__(self) -> Session:
        self.collector.start()
        self.start_runner()
        return self

    def wait_streaming(self) -> None:
        """The writer runs and its writes come back as streamed events: the change stream is open."""
        if self.workload is None:
            self.start_writer()
        self.wait_for(lambda: self.changes() > 0, 120, "the first streamed event")

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None:  # aborted: stop everything, check nothing
            self._stop_processes()
            return
        try:
            if self.workload is not None:
                self.workload.send_signal(signal.SIGTERM)
                self.workload.wait(120)
            self._drain()
            self._product_verify()
        finally:
            self._stop_processes()
        self._check()
        if not self.outcome.failed:
            self._delete_topics()

    def _delete_topics(self) -> None:
        """The session's topics, once checked: a broker killed later recovers only the logs it still holds (each
        partition's takes tens of milliseconds, ten times that on a loaded machine) and the campaign's broker does
        not grow with every session. A failed session's stay, to look into."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.campaign.kafka.bootstrap, "log_level": 0})
        names = [topic for topic in admin.list_topics(timeout=30).topics
                 if topic == self.name or topic.startswith(f"{self.name}.")]
        for future in admin.delete_topics(names, operation_timeout=30).values():
            future.result()

    def _stop_processes(self) -> None:
        for process in (self.workload, self.runner):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.collector.halt.set()
        if self.collector.is_alive():
            self.collector.join(10)

    def _verify(self, rows):
        return verify(read_log(self.workload_log), self.collector.snapshot(), self.tables, self.transaction_topic,
                      rows)

    def _drain(self) -> None:
        """Waits until every logged write is delivered, then reads the tables for the final-state check."""
        self.wait_for(lambda: self._verify(None).lost == 0, DRAIN_S, "every write to be delivered", interval=1.0)
        self.workload_rows = self._target().rows()

    def _product_verify(self) -> None:
        """The product's Verify as a second checker, while the connector still runs (Verify compares the source at a
        position the connector's committed offset must reach) and the writer is stopped."""
        self.campaign.source.normal_reads()  # the snapshot is over: its slowed reads would only slow Verify's
        self.outcome.add_verify(run_verify(self.config_path, self.campaign.kafka.bootstrap, self.dir / "verify.log"),
                                self.name)

    def _check(self) -> None:
        verdict = self._verify(self.workload_rows)
        self.outcome.add_verdict(verdict, self.name)
        if verdict.failed:  # what the consumer held, to look into (the work directory is kept)
            with open(self.dir / "topics.jsonl", "w") as dump:
                for r in self.collector.snapshot():
                    dump.write(json.dumps([r.topic, r.partition, r.key, r.value, round(r.at, 3)]) + "\n")
        recoveries = recovery(read_log(self.workload_log), self.collector.snapshot(), self.tables, self.faults)
        if None in recoveries:
            self.outcome.unrecovered += recoveries.count(None)
            self.outcome.notes.append(f"{self.name}: no event after a fault at all")
        self.outcome.recovery += [r for r in recoveries if r is not None]


class WorkerSession(Session):
    """A session whose connector runs as deployed: created through the platform's service layer, its pipeline run by
    one of the platform's Celery workers under a lease (platform.py), not by `python -m connectors run`."""

    def __init__(self, campaign: Campaign, label: str, platform: PrivatePlatform, **properties):
        super().__init__(campaign, label, **properties)
        self.platform = platform

    def start_runner(self) -> None:
        if self.runner_starts == 0:
            self.platform.create_connector(json.loads(self.config_path.read_text()))
        self.runner_starts += 1

    def supervise(self) -> None:
        gone = self.platform.exited()
        if gone:
            self.outcome.unplanned_exits += len(gone)
            tail = "\n    ".join(self.log_text().splitlines()[-15:])
            raise CampaignAborted(f"{self.name}: {', '.join(gone)} exited; the workers' last lines:\n    {tail}")

    def log_text(self) -> str:
        return self.platform.log_text()


class Campaign:
    def __init__(self, kafka: PrivateKafka, source, workdir: Path, rng: random.Random, freeze_s: float,
                 rate: float = WORKLOAD_RATE, ports: range | None = None, kafka_proxy: FaultProxy | None = None):
        """`kafka_proxy`: bound in front of the broker's proxied listener (broker-network), not started yet."""
        self.kafka, self.source, self.dir, self.rng = kafka, source, workdir, rng
        self.freeze_s, self.rate, self.ports, self.kafka_proxy = freeze_s, rate, ports, kafka_proxy

    def kill_streaming(self, runs: int) -> Outcome:
        """Each kill lands on a runner that streams again: the next comes 0.5-3 s after the previous fault's
        recovery (a kill of a runner still starting would measure two restarts as one recovery)."""
        with Session(self, "ks").setup() as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                session.kill_runner()
                session.start_runner()
                session.fault(started)
                session.wait_recovered(RECOVERY_WAIT_S)
            session.wait(2)
        return session.outcome

    def kill_snapshot(self, runs: int) -> Outcome:
        total = Outcome()
        for _ in range(runs):
            total.add(self._kill_one_snapshot())
        return total

    def _preloaded_session(self, label: str, hooked: bool = False) -> Session:
        """A session whose connector starts with a snapshot of the source's preload (MongoDB: chunk reads slowed by
        100 ms)."""
        chunk = self.source.chunk
        properties = {"snapshot.chunk.size": chunk, "snapshot.fetch.size": chunk, "snapshot.max.threads": 2}
        session = Session(self, label, hooked, **properties).setup(self.source.preload // 3)
        self.source.slow_snapshot()
        return session

    def _kill_one_snapshot(self) -> Outcome:
        session = self._preloaded_session("kn")
        try:
            with session:
                session.start_writer()
                chunk = self.source.chunk
                at_least = self.rng.randint(4, self.source.preload // chunk // 2) * chunk
                if session.wait_for(lambda: session.snapshot_rows() >= at_least, 120, f"{at_least} snapshot rows"):
                    # hold every further chunk read (the final chunk's too) so the kill lands mid-snapshot
                    self.source.hold_snapshot()
                    started = time.monotonic()
                    session.kill_runner()
                    self.source.slow_snapshot()
                    if " completed: " in session.log_text():
                        session.outcome.notes.append(f"{session.name}: the snapshot ended before the kill")
                    session.start_runner()
                    session.fault(started)
                session.wait_for(session.snapshot_done, 180, "the snapshot", interval=0.5)
                session.wait_streaming()
        finally:
            self.source.normal_reads()
        return session.outcome

    def broker_stop(self, runs: int) -> Outcome:
        with Session(self, "bs").setup() as session:
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
                session.wait_for_changes("events after the broker came back", 180)
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
        with Session(self, "bc", hooked=True).setup() as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                if self._freeze_at_commit(session):
                    session.wait_for_changes("events after the broker came back", 180)
            session.wait(2)
        return session.outcome

    def commit_stall(self, runs: int) -> Outcome:
        """A commit_transaction stalled past the sink's commit deadline (120 s by default): the broker frozen as a
        streaming batch's commit goes out, for COMMIT_STALL_S to COMMIT_STALL_S + 10 s."""
        with Session(self, "cs", hooked=True).setup() as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                if self._freeze_at_commit(session, COMMIT_STALL_S):
                    session.wait_for_changes("events after the stalled commit", 240)
            session.wait(2)
        return session.outcome

    def broker_stop_snapshot(self, runs: int) -> Outcome:
        total = Outcome()
        for _ in range(runs):
            total.add(self._freeze_one_snapshot())
        return total

    def _freeze_one_snapshot(self) -> Outcome:
        session = self._preloaded_session("bn", hooked=True)
        try:
            with session:
                session.start_writer()
                chunk = self.source.chunk
                at_least = self.rng.randint(2, self.source.preload // chunk // 4) * chunk
                if session.wait_for(lambda: session.snapshot_rows() >= at_least, 120, f"{at_least} snapshot rows"):
                    self._freeze_at_commit(session)  # a chunk's commit: at least 20 chunks are left to read
                session.wait_for(session.snapshot_done, 240, "the snapshot", interval=0.5)
                session.wait_streaming()
        finally:
            self.source.normal_reads()
        return session.outcome

    def step_down(self, runs: int) -> Outcome:
        with Session(self, "sd").setup() as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                self.source.step_down()
                session.fault(started)
            session.wait(2)
        return session.outcome

    def source_restart(self, runs: int) -> Outcome:
        with Session(self, "sr").setup() as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                self.source.restart()  # returns once the server accepts connections again
                session.fault(started)
                session.wait_for_changes("events after the server came back", 180)
            session.wait(2)
        return session.outcome

    def source_crash(self, runs: int) -> Outcome:
        """The server crashes under the write load (PostgreSQL immediate shutdown, MariaDB kill -9), then starts."""
        with Session(self, "sc").setup() as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                self.source.crash()
                session.fault(started)
                session.wait_for_changes("events after the server crashed and came back", 180)
            session.wait(2)
        return session.outcome

    def broker_kill(self, runs: int) -> Outcome:
        """kill -9 of the broker under the write load, then a start (log and transaction state recovery)."""
        with Session(self, "bk").setup() as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                pid = self.kafka.pid
                os.kill(pid, signal.SIGKILL)
                wait_gone(pid)
                self.kafka.start()
                session.fault(started)
                session.wait_for_changes("events after the broker was killed and came back", 240)
            session.wait(2)
        return session.outcome

    def source_network(self, runs: int) -> Outcome:
        """The connector reaches its server through the fault proxy (network_faults); the writer goes to the server
        directly."""
        listen = free_ports(1, self.ports)[0] if self.ports is not None else 0
        proxy = FaultProxy("127.0.0.1", self.source.server.port, listen).start()
        try:
            with Session(self, "nw", **{"database.port": proxy.port}).setup() as session:
                self._network_faults(session, proxy, runs)
        finally:
            proxy.close()
        return session.outcome

    def broker_network(self, runs: int) -> Outcome:
        """The runner reaches Kafka through the fault proxy in front of the broker's second listener, which
        advertises the proxy's port (so every connection the clients open after the bootstrap goes through it too);
        the checker's consumer reads the broker directly."""
        proxy = self.kafka_proxy.start()
        with Session(self, "kw", bootstrap=f"127.0.0.1:{proxy.port}").setup() as session:
            self._network_faults(session, proxy, runs)
        return session.outcome

    def zombie_worker(self, runs: int) -> Outcome:
        """Two Celery workers and beat (the supervisor); the worker whose pipeline holds the connector's lease is
        stopped with SIGSTOP (it and its pipeline process) until the other one has taken the pipeline over (the
        lease expired), then continued with SIGCONT: a zombie that wakes up in the middle of what it was doing, its
        lease gone and its producer fenced, and must not write."""
        platform = PrivatePlatform(self.dir / "platform", self.kafka.bootstrap, self.ports).start()
        try:
            platform.start_worker("wa")
            platform.start_worker("wb")
            platform.start_beat()
            with WorkerSession(self, "zw", platform).setup() as session:
                session.wait_streaming()
                for _ in range(runs):
                    session.wait(self.rng.uniform(0.5, 3.0))
                    if not session.wait_for(lambda: platform.holder(session.name) in platform.workers, 60,
                                            "a worker to hold the pipeline's lease"):
                        break
                    holder = platform.holder(session.name)
                    started = time.monotonic()
                    frozen = platform.freeze(holder)
                    try:
                        session.wait_for(lambda h=holder: platform.holder(session.name) not in (None, h), 120,
                                         "the other worker to take the pipeline over")
                        session.fault(started)
                        session.wait_for_changes("events from the worker that took over", 120)
                    finally:
                        platform.thaw(frozen)  # the zombie wakes up
                    session.wait(self.rng.uniform(5, 10))
                session.wait(2)
                self._check_stored_state(session, platform)
        finally:
            platform.stop()
        return session.outcome

    @staticmethod
    def _check_stored_state(session: WorkerSession, platform: PrivatePlatform) -> None:
        """What the dashboard shows once the zombies woke: every partition streaming on the worker that holds its
        lease (a fenced zombie's late reports must not have overwritten it). Reports come every few seconds: 30 s
        for them to settle."""
        def settled():
            holder = platform.holder(session.name)
            states = platform.stored_state(session.name)
            return bool(states) and all(phase == "streaming" and worker == holder for _, phase, worker in states)

        if not session.wait_for(settled, 30, "every partition to show streaming on its lease holder", interval=1.0):
            session.outcome.status_errors += 1
            session.outcome.notes.append(
                f"{session.name}: the control plane shows {platform.stored_state(session.name)}, not streaming on "
                f"the lease holder {platform.holder(session.name)}")

    def _network_faults(self, session: Session, proxy: FaultProxy, runs: int) -> None:
        """In turn: 0.2 s latency each way for 5-8 s, a blackhole of 20-25 s ended by a reset (as toxiproxy's timeout
        toxic), a reset of every connection."""
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
            session.wait_for_changes(f"events after the network {fault}", 180)
        session.wait(2)
