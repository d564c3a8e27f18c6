"""`python -m devstack up|down|status|logs|mongo` — the local stack of the CDC platform."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from devstack import stack
from devstack.process import StackError


def _status(_args) -> int:
    from devstack import platform

    rows = [(s.name, s.module.process, s.endpoint) for s in stack.services() if s.long_running]
    rows += [(p.name, p, "") for p in reversed(platform.PROCESSES)]
    for name, process, endpoint in rows:
        pid = process.pid()
        state = f"running (pid {pid})" if pid else "stopped"
        print(f"{name:<15} {state:<22} {endpoint}")
    return 0


def _logs(args) -> int:
    names = [args.service] if args.service else [s.name for s in stack.services() if s.long_running]
    files = [str(stack.select([n])[0].module.process.log_file) for n in names]
    if args.follow:
        return subprocess.call(["tail", "-n", str(args.lines), "-F", *files])
    for name, path in zip(names, files, strict=True):
        print(f"==> {name} ({path})")
        print(stack.select([name])[0].module.process.log_tail(args.lines))
    return 0


def _mongo(args) -> int:
    from devstack.mongo.cli import main as emulator_main

    return emulator_main(args.emulator_args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start Redis, Kafka, the MongoDB emulator and PostgreSQL and fetch Spark's Kafka "
                                   "jars; MariaDB, a sharded MongoDB and Spark only when named")
    up.add_argument(
        "services", nargs="*",
        help="only these (redis, kafka, mongo, mongo-sharded, postgres, mariadb, spark-jars, spark); mariadb, "
             "mongo-sharded (an emulated sharded cluster behind a mongos) and spark (a standalone master and two "
             "workers) only when named",
    )
    up.add_argument("--brokers", type=int, help="Kafka as a KRaft cluster of this many brokers (as "
                    "DEVSTACK_KAFKA_BROKERS; default 1)")
    down = sub.add_parser("down", help="stop what `up` started")
    down.add_argument("services", nargs="*")
    down.add_argument("--all", action="store_true", help="also stop the platform processes `demo` started")
    sub.add_parser("demo", help="the stack with MariaDB plus the platform (web, worker, beat) and three demo "
                                "connectors: demo (MongoDB), demo-pg (PostgreSQL), demo-mariadb (MariaDB)")
    sub.add_parser("status", help="what runs, with pids and endpoints")
    logs = sub.add_parser("logs", help="show (or follow) service logs")
    logs.add_argument("service", nargs="?")
    logs.add_argument("-n", "--lines", type=int, default=40)
    logs.add_argument("-f", "--follow", action="store_true")
    mongo = sub.add_parser("mongo", help="run the MongoDB replica-set emulator in the foreground", add_help=False)
    mongo.add_argument("emulator_args", nargs=argparse.REMAINDER)
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["mongo"]:
        # argparse's REMAINDER drops arguments that start with "--" (`mongo --standalone`): hand them over as they are
        return _mongo(argparse.Namespace(emulator_args=given[1:]))
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            if args.brokers is not None:
                os.environ["DEVSTACK_KAFKA_BROKERS"] = str(args.brokers)
            stack.up(args.services)
            return 0
        if args.command == "demo":
            from devstack import platform

            platform.up()
            return 0
        if args.command == "down":
            if args.all or not args.services:
                from devstack import platform

                platform.down()
            stack.down(args.services)
            return 0
        return {"status": _status, "logs": _logs, "mongo": _mongo}[args.command](args)
    except StackError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
