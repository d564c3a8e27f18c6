"""Fault campaign: exactly-once evidence under crashes, broker stalls and elections.

    python -m bench.faults [--short] [--runs N] [--scenarios kill-streaming,kill-snapshot,broker-stop,step-down]
                           [--freeze 35] [--rate 150] [--seed N] [--json PATH] [--keep]

Everything runs on a private stack so faults disturb nobody: its own Kafka broker (started with `python -m devstack
up kafka` in a temporary DEVSTACK_HOME on free ports, so it can be SIGSTOPped) and its own emulated replica set
(`devstack.mongo.start_replica_set`, so the primary can be stepped down). The connector is the real runner,
`python -m connectors run cfg.json`, in its own process. An independent writer process inserts documents whose
`_id` is a sequence number and records each acknowledged write; a read_committed consumer reads the topics while the
faults happen. Per scenario it prints: faults injected (runs), writes checked, lost (acknowledged, never delivered),
duplicated (delivered twice as the same kind of event), reordered (a streamed event after a later one) and the
recovery time (from the end of a fault to the next event a read_committed consumer receives).

Scenarios:
  kill-streaming  kill -9 of the runner while it streams, then a restart
  kill-snapshot   kill -9 of the runner during an initial snapshot (slowed chunk reads, held while it dies),
                  then a restart
  broker-stop     SIGSTOP of the broker for --freeze to --freeze + 10 seconds (the sink gives up after 30 s), then
                  SIGCONT, at a random moment
  broker-stop-commit    the same freeze, exactly as a streaming batch's commit_transaction goes out (the runner is
                        started through `python -m bench.faults runner`, which hooks the sink's producer)
  broker-stop-snapshot  the same freeze as a snapshot chunk's commit goes out
  step-down       replSetStepDown of the primary under the write load

Exit status 1 when anything was lost, duplicated or reordered.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from devstack import settings
from devstack.private_kafka import PrivateKafka

SCENARIOS = ("kill-streaming", "kill-snapshot", "broker-stop", "broker-stop-commit", "broker-stop-snapshot",
             "step-down")
SHORT_RUNS = {"kill-streaming": 3, "kill-snapshot": 2, "broker-stop": 1, "broker-stop-commit": 1,
              "broker-stop-snapshot": 1, "step-down": 2}
FULL_RUNS = {"kill-streaming": 10, "kill-snapshot": 5, "broker-stop": 3, "broker-stop-commit": 3,
             "broker-stop-snapshot": 2, "step-down": 6}
WRITE_RATE = 150  # acknowledged inserts per second
PRELOAD = 20_000  # documents the kill-snapshot runs snapshot
CHUNK = 500
DRAIN_S = 120  # how long the checker may take to see every acknowledged write after the last fault
MAX_EXITS = 5  # unplanned runner exits in one session before the scenario is aborted


class CampaignAborted(Exception):
    """A scenario cannot go on (the runner keeps exiting); reported, and the campaign fails."""


# -- the private stack ------------------------------------------------------------------------------------------------

# -- the writer (its own process) -------------------------------------------------------------------------------------

def writer_main(argv: list[str]) -> int:
    """Inserts {_id: seq} for seq = 0, 1, 2… at a steady rate; appends "seq monotonic-time" per acknowledged write."""
    import pymongo
    from pymongo.errors import DuplicateKeyError, PyMongoError

    parser = argparse.ArgumentParser(prog="python -m bench.faults writer")
    parser.add_argument("uri")
    parser.add_argument("database")
    parser.add_argument("acks")
    parser.add_argument("--rate", type=float, default=WRITE_RATE)
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    collection = pymongo.MongoClient(args.uri, serverSelectionTimeoutMS=30_000)[args.database].events
    seq = 0
    next_at = time.monotonic()
    with open(args.acks, "a") as acks:
        while not stop.is_set():
            while True:
                try:
                    collection.insert_one({"_id": seq, "seq": seq})
                    break
                except DuplicateKeyError:
                    break  # the driver's retry found the first attempt applied
                except PyMongoError:
                    if stop.wait(0.05):
                        return 0  # this write's outcome is unknown: it is not counted as acknowledged
            acks.write(f"{seq} {time.monotonic():.6f}\n")
            acks.flush()
            seq += 1
            next_at += 1 / args.rate
            delay = next_at - time.monotonic()
            if delay > 0:
                stop.wait(delay)
            else:
                next_at = time.monotonic()
    return 0


def _read_acks(path: Path) -> dict[int, float]:
    acks = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            acks[int(parts[0])] = float(parts[1])
    return acks


# -- a freeze in the middle of a commit (broker-stop-commit, broker-stop-snapshot) -----------------------------------

class CommitHook:
    """Files through which the campaign and a hooked runner meet at a commit: the campaign arms the hook, the
    runner's next `commit_transaction` reports that it is about to go out and waits until the campaign has frozen
    the broker, then goes out to the frozen broker. A broker stall in the middle of a commit, every time."""

    def __init__(self, directory: Path):
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.armed, self.at_commit, self.frozen = (directory / n for n in ("armed", "at-commit", "frozen"))

    def arm(self) -> None:
        for path in (self.at_commit, self.frozen):
            path.unlink(missing_ok=True)
        self.armed.touch()

    def disarm(self) -> None:
        self.armed.unlink(missing_ok=True)

    def install(self) -> None:
        """In the runner's process: every producer the sink creates from now on goes through the hook."""
        import confluent_kafka

        from connectors.kafka import sink

        if not isinstance(getattr(sink, "Producer", None), type):
            raise SystemExit("bench.faults: connectors.kafka.sink creates no confluent_kafka.Producer any more; "
                             "the commit hook of the broker-stop-commit scenarios needs updating")
        hook = self

        class HookedProducer(confluent_kafka.Producer):
            def commit_transaction(self, *args):
                if hook.armed.exists() and not hook.at_commit.exists():
                    hook.at_commit.touch()
                    deadline = time.monotonic() + 30
                    while not hook.frozen.exists() and time.monotonic() < deadline:
                        time.sleep(0.005)
                return super().commit_transaction(*args)

        sink.Producer = HookedProducer


def runner_main(argv: list[str]) -> int:
    """`python -m connectors run`, with the commit hook installed."""
    parser = argparse.ArgumentParser(prog="python -m bench.faults runner")
    parser.add_argument("config")
    parser.add_argument("--freeze-dir", type=Path, required=True)
    parser.add_argument("--bootstrap-servers", required=True)
    args = parser.parse_args(argv)
    CommitHook(args.freeze_dir).install()
    from connectors.__main__ import main as connectors_main

    return connectors_main(["run", args.config, "--bootstrap-servers", args.bootstrap_servers])


# -- the read_committed checker ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Seen:
    kind: str  # "events" (the writer's) or "preload" (what a snapshot reads)
    op: str
    seq: int
    partition: int
    at: float


class Checker(threading.Thread):
    """Reads the given topics from their beginning with isolation.level=read_committed as they appear."""

    def __init__(self, bootstrap: str, topics: dict[str, str]):
        super().__init__(daemon=True)
        self.bootstrap, self.topics = bootstrap, topics
        self.seen: list[Seen] = []
        self.halt = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": f"faults-{uuid.uuid4().hex}",
            "enable.auto.commit": False, "isolation.level": "read_committed", "fetch.wait.max.ms": 50,
            "log_level": 0,
        })
        kinds = {topic: kind for kind, topic in self.topics.items()}
        assigned: set[str] = set()
        next_lookup = 0.0
        try:
            while not self.halt.is_set():
                if len(assigned) < len(kinds) and time.monotonic() >= next_lookup:
                    next_lookup = time.monotonic() + 0.5
                    try:
                        metadata = consumer.list_topics(timeout=2).topics
                    except Exception:  # noqa: BLE001 - the broker may be frozen; look again later
                        metadata = {}
                    for topic in set(kinds) - assigned:
                        if topic in metadata and metadata[topic].partitions:
                            consumer.incremental_assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                                                         for p in metadata[topic].partitions])
                            assigned.add(topic)
                if not assigned:
                    self.halt.wait(0.2)
                    continue
                for message in consumer.consume(500, 0.2):
                    if message.error() is not None or message.value() is None:
                        continue
                    event = json.loads(message.value())
                    document = json.loads(event["after"]) if event.get("after") else {}
                    if not isinstance(document.get("_id"), int):
                        continue
                    with self._lock:
                        self.seen.append(Seen(kinds[message.topic()], event["op"], document["_id"],
                                              message.partition(), time.monotonic()))
        finally:
            consumer.close()

    def snapshot(self) -> list[Seen]:
        with self._lock:
            return list(self.seen)

    def count(self, kind: str, op: str | None = None) -> int:
        return sum(1 for s in self.snapshot() if s.kind == kind and (op is None or s.op == op))


# -- one connector under faults ---------------------------------------------------------------------------------------

@dataclass
class Outcome:
    faults: int = 0
    writes: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    recovery: list = field(default_factory=list)  # seconds per fault (None: nothing came after it)
    unplanned_exits: int = 0
    notes: list[str] = field(default_factory=list)
    aborted: bool = False

    @property
    def failed(self) -> bool:
        return bool(self.lost or self.duplicated or self.reordered or self.aborted)

    def add(self, other: Outcome) -> None:
        for name in ("faults", "writes", "lost", "duplicated", "reordered", "unplanned_exits"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.aborted = self.aborted or other.aborted
        self.recovery += other.recovery
        self.notes += other.notes


class Session:
    """One connector (fresh name and database), its runner process, the writer and the checker."""

    def __init__(self, campaign: Campaign, label: str, hooked: bool = False, **properties):
        self.campaign = campaign
        self.name = f"fc{label}{uuid.uuid4().hex[:8]}"
        self.dir = campaign.dir / self.name
        self.dir.mkdir(parents=True)
        self.config_path = self.dir / "connector.json"
        self.config_path.write_text(json.dumps({
            "name": self.name, "topic.prefix": self.name, "mongodb.connection.string": campaign.rs.uri,
            "database.include.list": self.name, "offset.storage.topic": f"{self.name}.offsets",
            "poll.interval.ms": 50, "max.batch.size": 64, **properties,
        }))
        self.acks_path = self.dir / "acks.txt"
        self.checker = Checker(campaign.kafka.bootstrap, {kind: f"{self.name}.{self.name}.{kind}"
                                                          for kind in ("events", "preload")})
        self.runner: subprocess.Popen | None = None
        self.writer: subprocess.Popen | None = None
        self.runner_starts = 0
        self.faults: list[tuple[float, float]] = []  # (start, end) of each fault, monotonic
        self.preloaded = 0
        self.commit_hook = CommitHook(self.dir / "hook") if hooked else None  # runner started with the hook
        self.outcome = Outcome()

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
        self.writer = subprocess.Popen(
            [sys.executable, "-m", "bench.faults", "writer", self.campaign.rs.uri, self.name, str(self.acks_path),
             "--rate", str(self.campaign.rate)],
            stdin=subprocess.DEVNULL, cwd=settings.PROJECT_ROOT)

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
            if self.writer is not None:
                self.writer.send_signal(signal.SIGTERM)
                self.writer.wait(30)
            self._drain()
        finally:
            self._stop_processes()
        self._check()

    def _stop_processes(self) -> None:
        for process in (self.writer, self.runner):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.checker.halt.set()
        self.checker.join(10)

    def _drain(self) -> None:
        acks = _read_acks(self.acks_path) if self.acks_path.exists() else {}
        preload = self.preloaded

        def complete() -> bool:
            seen = self.checker.snapshot()
            events = {s.seq for s in seen if s.kind == "events"}
            loaded = {s.seq for s in seen if s.kind == "preload"}
            return events >= set(acks) and len(loaded) >= preload

        self.wait_for(complete, DRAIN_S, "every acknowledged write to be delivered")

    def _check(self) -> None:
        acks = _read_acks(self.acks_path) if self.acks_path.exists() else {}
        account(self.outcome, acks, self.checker.snapshot(), self.preloaded, self.faults)
        if self.outcome.recovery.count(None):
            self.outcome.notes.append(f"{self.name}: no event after a fault at all")
        self.outcome.recovery = [r for r in self.outcome.recovery if r is not None]


def account(out: Outcome, acks: dict[int, float], seen: list[Seen], preloaded: int,
            faults: list[tuple[float, float]]) -> Outcome:
    """Adds to `out` what the read_committed consumer saw against what was acknowledged (and preloaded)."""
    out.writes += len(acks) + preloaded
    events = [s for s in seen if s.kind == "events"]
    out.lost += len(set(acks) - {s.seq for s in events})
    # a write may be read by a snapshot ("r") and also streamed ("c"); each kind at most once
    out.duplicated += sum(n - 1 for n in Counter((s.op, s.seq) for s in events).values() if n > 1)
    loaded = Counter(s.seq for s in seen if s.kind == "preload" and s.op == "r")
    out.lost += sum(1 for i in range(preloaded) if i not in loaded)
    out.duplicated += sum(n - 1 for n in loaded.values() if n > 1)
    highest: dict[int, int] = {}
    first_seen: set[int] = set()
    for s in events:  # in the order the consumer received them, per partition
        if s.op != "c" or s.seq in first_seen:
            continue
        first_seen.add(s.seq)
        if s.seq < highest.get(s.partition, -1):
            out.reordered += 1
        highest[s.partition] = max(highest.get(s.partition, -1), s.seq)
    for start, end in faults:
        # the first event after the fault that it held back: a write acknowledged since the fault began, or a
        # snapshot row (rows committed before it are consumed within milliseconds, before it ends)
        after = [s.at for s in seen if s.at >= end and (s.kind == "preload" or acks.get(s.seq, 0) >= start)]
        out.recovery.append(min(after) - end if after else None)
    return out


class Campaign:
    def __init__(self, kafka: PrivateKafka, rs, workdir: Path, rng: random.Random, freeze_s: float,
                 rate: float = WRITE_RATE):
        self.kafka, self.rs, self.dir, self.rng, self.freeze_s, self.rate = kafka, rs, workdir, rng, freeze_s, rate

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
        """A session whose connector starts with a snapshot of PRELOAD documents, chunk reads slowed by 100 ms."""
        import pymongo

        properties = {"snapshot.chunk.size": CHUNK, "snapshot.fetch.size": CHUNK, "snapshot.max.threads": 2}
        session = Session(self, label, hooked, **properties)
        database = pymongo.MongoClient(self.rs.uri)[session.name]
        for start in range(0, PRELOAD, 5000):
            database.preload.insert_many([{"_id": i, "pad": "x" * 100} for i in range(start, start + 5000)])
        session.preloaded = PRELOAD
        self.rs.set_delay(100, commands=["find"])  # slow chunk reads: the snapshot lasts seconds, not less
        return session

    def _kill_one_snapshot(self) -> Outcome:
        session = self._preloaded_session("kn")
        rows = session.checker.count
        try:
            with session:
                session.start_writer()
                at_least = self.rng.randint(4, PRELOAD // CHUNK // 2) * CHUNK
                if session.wait_for(lambda: rows("preload") >= at_least, 120, f"{at_least} snapshot rows"):
                    # hold every further chunk read (the final chunk's too) so the kill lands mid-snapshot
                    self.rs.set_delay(600_000, commands=["find"])
                    started = time.monotonic()
                    session.kill_runner()
                    self.rs.set_delay(100, commands=["find"])
                    if " completed: " in session.log_text():
                        session.outcome.notes.append(f"{session.name}: the snapshot ended before the kill")
                    session.start_runner()
                    session.fault(started)
                session.wait_for(lambda: rows("preload") >= PRELOAD, 180, "the snapshot")
                session.wait_streaming()
        finally:
            self.rs.set_delay(0)
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

    def _freeze_at_commit(self, session: Session) -> bool:
        """Arms the hook, freezes the broker as the next commit goes out, thaws it 35-45 s later."""
        hook = session.commit_hook
        hook.arm()
        if not session.wait_for(hook.at_commit.exists, 60, "a commit to freeze the broker at"):
            hook.disarm()
            return False
        started = time.monotonic()
        self.kafka.freeze()
        hook.frozen.touch()
        try:
            session.wait(self.rng.uniform(self.freeze_s, self.freeze_s + 10))
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
                at_least = self.rng.randint(2, PRELOAD // CHUNK // 4) * CHUNK
                if session.wait_for(lambda: rows("preload") >= at_least, 120, f"{at_least} snapshot rows"):
                    self._freeze_at_commit(session)  # a chunk's commit: at least 20 chunks are left to read
                session.wait_for(lambda: rows("preload") >= PRELOAD, 240, "the snapshot")
                session.wait_streaming()
        finally:
            self.rs.set_delay(0)
        return session.outcome

    def step_down(self, runs: int) -> Outcome:
        with Session(self, "sd") as session:
            session.wait_streaming()
            for _ in range(runs):
                session.wait(self.rng.uniform(0.5, 3.0))
                started = time.monotonic()
                self.rs.step_down(seconds=1)  # returns once another member is primary
                session.fault(started)
            session.wait(2)
        return session.outcome


# -- report -----------------------------------------------------------------------------------------------------------

def _recovery(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.1f} / {max(values):.1f}"


def report(results: dict[str, Outcome]) -> str:
    lines = [f"{'scenario':<22}{'runs':>6}{'writes checked':>16}{'lost':>7}{'duplicated':>12}{'reordered':>11}"
             f"{'recovery s (median / max)':>28}{'runner exits':>14}"]
    for scenario, o in results.items():
        lines.append(f"{scenario:<22}{o.faults:>6}{o.writes:>16}{o.lost:>7}{o.duplicated:>12}{o.reordered:>11}"
                     f"{_recovery(o.recovery):>28}{o.unplanned_exits:>14}")
    for scenario, o in results.items():
        lines += [f"  {scenario}: {note}" for note in o.notes]
    return "\n".join(lines)


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["writer"]:
        return writer_main(argv[1:])
    if argv[:1] == ["runner"]:
        return runner_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--short", action="store_true", help="a few-minute version (fewer faults per scenario)")
    parser.add_argument("--runs", type=int, help="faults per scenario (default: per scenario, fewer with --short)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated, of {', '.join(SCENARIOS)}")
    parser.add_argument("--freeze", type=float, default=35.0,
                        help="seconds the broker stays stopped at least (broker-stop; up to 10 s more)")
    parser.add_argument("--rate", type=float, default=WRITE_RATE, help="the writer's inserts per second")
    parser.add_argument("--seed", type=int, default=None, help="random seed of the fault timing")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, acks) afterwards")
    args = parser.parse_args(argv)
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}; choose from {', '.join(SCENARIOS)}")
    if args.runs is not None and args.runs < 1:
        parser.error("--runs must be at least 1")
    seed = args.seed if args.seed is not None else random.randrange(10**6)

    from devstack.mongo import start_replica_set

    signal.signal(signal.SIGTERM, _terminated)  # so that a stopped campaign still stops its broker and processes
    workdir = Path(tempfile.mkdtemp(prefix="cdc-faults-"))
    kafka = PrivateKafka(workdir / "stack")
    rs = None
    results: dict[str, Outcome] = {}
    try:
        print(f"work directory {workdir} (seed {seed}); starting a private Kafka broker...", flush=True)
        kafka.start()
        rs = start_replica_set(members=3, election_timeout=0.3, stepdown_election_delay=0.05, noop_interval=0.5)
        print(f"Kafka {kafka.bootstrap} (pid {kafka.pid}), replica set {rs.uri}", flush=True)
        campaign = Campaign(kafka, rs, workdir, random.Random(seed), args.freeze, args.rate)
        for scenario in scenarios:
            runs = args.runs or (SHORT_RUNS if args.short else FULL_RUNS)[scenario]
            started = time.monotonic()
            print(f"{scenario}: {runs} fault(s)...", flush=True)
            try:
                results[scenario] = getattr(campaign, scenario.replace("-", "_"))(runs)
            except CampaignAborted as error:
                results[scenario] = Outcome(notes=[f"aborted: {error}"], aborted=True)
            print(f"{scenario}: done in {time.monotonic() - started:.0f}s", flush=True)
    finally:
        if rs is not None:
            rs.stop()
        kafka.stop()
        if not args.keep and results and not any(o.failed for o in results.values()):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs and acknowledged writes kept in {workdir}")
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps({s: {"runs": o.faults, "writes": o.writes, "lost": o.lost,
                                             "duplicated": o.duplicated, "reordered": o.reordered,
                                             "recovery_s": o.recovery, "runner_exits": o.unplanned_exits,
                                             "aborted": o.aborted, "notes": o.notes}
                                         for s, o in results.items()}, indent=2))
    return 1 if any(o.failed for o in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
