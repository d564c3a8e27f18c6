"""Where a killed runner's restart spends its time: `python -m bench.faults.restart_stages --source S --kills N`.

A private broker and database (as the campaign's), one connector under the writer; the runner is killed -9 N times,
each kill once the previous restart streams again. Each runner is `python -m connectors run` started through
`python -m bench.faults.restart_stages runner ...`, which notes the seconds since its spawn and its own CPU seconds
as it reaches each stage: the interpreter up, the runner's modules imported, the pipeline built (the source's
modules imported, its configuration checked), the producers' init_transactions done (fencing the killed runner's
producers aborts their open transactions), the sink open, the offset read, the source connected and the first batch
committed. The table lists each stage's median and maximum over the restarts, and the recovery the campaign's
checker measures (to the first event a read_committed consumer receives of a write made since the kill).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STAGES = ("interpreter", "imports", "pipeline built", "init_transactions", "sink open", "offset read",
          "source connected", "first batch committed")


class StageLog:
    """In the runner's process: appends {stage, wall, cpu} lines to STAGE_LOG (wall: seconds since STAGE_T0)."""

    def __init__(self):
        self.spawned = float(os.environ["STAGE_T0"])
        self.path = Path(os.environ["STAGE_LOG"])
        self.seen: set[str] = set()

    def mark(self, stage: str) -> None:
        if stage in self.seen:
            return
        self.seen.add(stage)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        with self.path.open("a") as log:
            log.write(json.dumps({"pid": os.getpid(), "stage": stage, "wall": time.time() - self.spawned,
                                  "cpu": usage.ru_utime + usage.ru_stime}) + "\n")

    def after(self, owner, name: str, stage: str) -> None:
        """Marks `stage` when `owner.name` first returns."""
        original = getattr(owner, name)
        log = self

        def marked(*args, **kwargs):
            result = original(*args, **kwargs)
            log.mark(stage)
            return result

        setattr(owner, name, marked)


def runner_main(argv: list[str]) -> int:
    stages = StageLog()
    stages.mark("interpreter")
    import confluent_kafka

    from connectors import runner
    from connectors.__main__ import main as connectors_main
    from connectors.kafka import offsets, sink

    stages.mark("imports")

    class StagedProducer(confluent_kafka.Producer):
        def init_transactions(self, *args):
            result = super().init_transactions(*args)
            stages.mark("init_transactions")
            return result

    sink.Producer = StagedProducer
    stages.after(runner.ConnectorRunner, "pipeline", "pipeline built")
    stages.after(sink.TransactionalSink, "open", "sink open")
    stages.after(offsets.OffsetStore, "read_value", "offset read")
    stages.after(sink.TransactionalSink, "write_batch", "first batch committed")
    original_pipeline = runner.ConnectorRunner.pipeline

    def pipeline(self, partition, on_phase=None):
        built = original_pipeline(self, partition, on_phase)
        stages.after(built.source, "connect", "source connected")
        return built

    runner.ConnectorRunner.pipeline = pipeline
    return connectors_main(["run", *argv])


def summary(lines: list[dict], recoveries: list[float]) -> str:
    by_pid: dict[int, dict[str, dict]] = {}
    for line in lines:
        by_pid.setdefault(line["pid"], {})[line["stage"]] = line
    restarts = list(by_pid.values())[1:]  # the first runner starts a snapshot, not a restart
    out = [f"{'stage (seconds since the restart)':36} {'p50':>6} {'max':>6} {'cpu p50':>8}"]
    for stage in STAGES:
        walls = [r[stage]["wall"] for r in restarts if stage in r]
        cpus = [r[stage]["cpu"] for r in restarts if stage in r]
        if walls:
            out.append(f"{stage:36} {statistics.median(walls):6.2f} {max(walls):6.2f} {statistics.median(cpus):8.2f}")
    if recoveries:
        out.append(f"{'recovery (the checker)':36} {statistics.median(recoveries):6.2f} {max(recoveries):6.2f}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["runner"]:
        return runner_main(argv[1:])
    from bench.faults.campaign import RECOVERY_WAIT_S, Campaign, Session
    from bench.faults.cli import port_range
    from bench.faults.source_kinds import SOURCES
    from devstack import settings
    from devstack.private_kafka import PrivateKafka

    parser = argparse.ArgumentParser(prog="python -m bench.faults.restart_stages", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=sorted(SOURCES), default="mariadb")
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--ports", type=port_range, help="LOW-HIGH: the private broker and database's ports")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="cdc-restart-stages-"))
    stage_log = workdir / "stages.jsonl"

    class StagedSession(Session):
        def start_runner(self) -> None:
            with open(self.dir / "runner.log", "ab") as log:
                self.runner = subprocess.Popen(
                    [sys.executable, "-m", "bench.faults.restart_stages", "runner", str(self.config_path),
                     "--bootstrap-servers", self.bootstrap], stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, cwd=settings.PROJECT_ROOT,
                    env={**os.environ, "STAGE_T0": repr(time.time()), "STAGE_LOG": str(stage_log)})
            self.runner_starts += 1

    kafka = PrivateKafka(workdir / "stack", args.ports)
    source = SOURCES[args.source]()
    try:
        kafka.start()
        source.start(workdir, args.ports)
        campaign = Campaign(kafka, source, workdir, random.Random(0), 35.0, ports=args.ports)
        with StagedSession(campaign, "rs").setup() as session:
            session.wait_streaming()
            for _ in range(args.kills):
                session.wait(1.0)
                started = time.monotonic()
                session.kill_runner()
                session.start_runner()
                session.fault(started)
                session.wait_recovered(RECOVERY_WAIT_S)
    finally:
        source.stop()
        kafka.stop()
    lines = [json.loads(line) for line in stage_log.read_text().splitlines()]
    print(summary(lines, session.outcome.recovery))
    print(f"(stage log and runner logs in {workdir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
