"""`python -m bench.faults`: the command line (see the package's docstring)."""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import bench.faults as package
from bench.faults.campaign import Campaign, CampaignAborted
from bench.faults.hook import runner_main
from bench.faults.netproxy import FaultProxy
from bench.faults.report import Outcome, report
from bench.faults.source_kinds import SOURCES
from bench.faults.workload import WORKLOAD_RATE, workload_main
from devstack.private_kafka import PrivateKafka, free_ports
from devstack.process import StackError

SHORT_RUNS = {"kill-streaming": 3, "kill-snapshot": 2, "broker-stop": 1, "broker-stop-commit": 1,
              "broker-stop-snapshot": 1, "step-down": 2, "source-restart": 2,
              "source-crash": 2, "broker-kill": 1, "source-network": 3, "broker-network": 3, "commit-stall": 1,
              "zombie-worker": 1}
FULL_RUNS = {"kill-streaming": 10, "kill-snapshot": 5, "broker-stop": 3, "broker-stop-commit": 3,
             "broker-stop-snapshot": 2, "step-down": 6, "source-restart": 5,
             "source-crash": 5, "broker-kill": 3, "source-network": 6, "broker-network": 6, "commit-stall": 2,
             "zombie-worker": 2}

# Of the broker's consumer offsets and transaction state topics (Kafka's default: 50 each): a broker killed -9
# (broker-kill) recovers every partition's log before it answers again
INTERNAL_PARTITIONS = 5


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


def _broker_answers(bootstrap: str) -> bool:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=10)
    except KafkaException:
        return False
    return True


def port_range(text: str) -> range:
    """`--ports LOW-HIGH` (inclusive)."""
    low, _, high = text.partition("-")
    try:
        ports = range(int(low), int(high) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOW-HIGH, e.g. 58000-58500, not {text!r}") from None
    if not ports or ports.start < 1024 or ports.stop > 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a range of ports between 1024 and 65535")
    return ports


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["workload"]:
        return workload_main(argv[1:])
    if argv[:1] == ["runner"]:
        return runner_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=package.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--short", action="store_true", help="a few-minute version (fewer faults per scenario)")
    parser.add_argument("--runs", type=int, help="faults per scenario (default: per scenario, fewer with --short)")
    parser.add_argument("--source", choices=sorted(SOURCES), default="mongodb",
                        help="the database under test, a private instance of it (default mongodb)")
    parser.add_argument("--scenarios", help="comma-separated (default: all of the source's); mongodb: "
                        f"{', '.join(SOURCES['mongodb'].scenarios)}; postgres, mariadb: "
                        f"{', '.join(SOURCES['postgres'].scenarios)}")
    parser.add_argument("--freeze", type=float, default=35.0,
                        help="seconds the broker stays stopped at least (broker-stop; up to 10 s more)")
    parser.add_argument("--rate", type=float, default=WORKLOAD_RATE, help="the writer's transactions per second")
    parser.add_argument("--seed", type=int, default=None, help="random seed of the fault timing")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--ports", type=port_range,
                        help="LOW-HIGH: the private broker and database listen on free ports in this range "
                        "(default: any free ports)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, acks) afterwards")
    args = parser.parse_args(argv)
    source = SOURCES[args.source]()
    scenarios = ([s.strip() for s in args.scenarios.split(",") if s.strip()] if args.scenarios
                 else list(source.default_scenarios))
    unknown = sorted(set(scenarios) - set(source.scenarios))
    if unknown:
        parser.error(f"unknown scenario(s) {unknown} for --source {args.source}; choose from "
                     f"{', '.join(source.scenarios)}")
    if args.runs is not None and args.runs < 1:
        parser.error("--runs must be at least 1")
    seed = args.seed if args.seed is not None else random.randrange(10**6)

    signal.signal(signal.SIGTERM, _terminated)  # so that a stopped campaign still stops its broker and processes
    workdir = Path(tempfile.mkdtemp(prefix="cdc-faults-"))
    kafka = PrivateKafka(workdir / "stack", args.ports)
    kafka.env["DEVSTACK_KAFKA_INTERNAL_PARTITIONS"] = str(INTERNAL_PARTITIONS)
    kafka_proxy = None
    if "broker-network" in scenarios:
        listen, shown = (free_ports(2, range(kafka.port + 2, args.ports.stop)) if args.ports is not None
                         else free_ports(2))
        kafka_proxy = FaultProxy("127.0.0.1", listen, shown)  # bound now: nothing started later takes its port
        kafka.env["DEVSTACK_KAFKA_PROXIED_LISTENER"] = f"{listen}:{shown}"
    source_started = False
    results: dict[str, Outcome] = {}
    try:
        print(f"work directory {workdir} (seed {seed}); starting a private Kafka broker...", flush=True)
        kafka.start()
        source_started = True
        described = source.start(workdir, args.ports)
        print(f"Kafka {kafka.bootstrap} (pid {kafka.pid}), {described}", flush=True)
        campaign = Campaign(kafka, source, workdir, random.Random(seed), args.freeze, args.rate, args.ports,
                            kafka_proxy)
        broker_gone = None
        for scenario in scenarios:
            if broker_gone is not None:  # what follows would count every write as lost
                results[scenario] = Outcome(notes=[f"not run: {broker_gone}"], aborted=True)
                continue
            runs = args.runs or (SHORT_RUNS if args.short else FULL_RUNS)[scenario]
            started = time.monotonic()
            print(f"{scenario}: {runs} fault(s)...", flush=True)
            try:
                results[scenario] = getattr(campaign, scenario.replace("-", "_"))(runs)
            except (CampaignAborted, StackError) as error:  # StackError: the private server did not restart
                results[scenario] = Outcome(notes=[f"aborted: {error}"], aborted=True)
                if not _broker_answers(kafka.bootstrap):
                    broker_gone = f"the private Kafka broker did not come back after {scenario}"
            print(f"{scenario}: done in {time.monotonic() - started:.0f}s", flush=True)
    finally:
        if kafka_proxy is not None:
            kafka_proxy.close()
        if source_started:
            source.stop()
        kafka.stop()
        if not args.keep and results and not any(o.failed for o in results.values()):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs and the writers' logs kept in {workdir}")
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps({s: o.figures() for s, o in results.items()}, indent=2))
    return 1 if any(o.failed for o in results.values()) else 0
