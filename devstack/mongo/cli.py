"""`python -m devstack.mongo` (and `python -m devstack mongo`): run the emulator in the foreground.

Prints one `mongodb://` connection string per replica set (with --standalone: of the one server) on stdout,
then serves until SIGTERM/SIGINT, when it shuts down cleanly (writing a last checkpoint when --data-dir is given).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys

from devstack.mongo.config import DEFAULT_OPLOG_MAX_BYTES, EmulatorConfig
from devstack.mongo.emulator import Emulator
from devstack.mongo.sharded import ShardedEmulator


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m devstack.mongo",
                                description="MongoDB 7.0 replica-set emulator (wire protocol, change streams, "
                                            "elections, fault hooks)")
    p.add_argument("--members", type=int, default=3, help="members per replica set (default 3)")
    p.add_argument("--port", type=int, default=27017, help="port of the first member; members use consecutive "
                                                           "ports (0 picks free ports)")
    p.add_argument("--replset", default="rs0", help="replica set name (with --replsets N: prefix + index)")
    p.add_argument("--replsets", type=int, default=1, help="number of independent replica sets to serve")
    p.add_argument("--host", default="127.0.0.1", help="host name members advertise")
    p.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    p.add_argument("--data-dir", help="persist data and oplog here (checkpoints + at shutdown)")
    p.add_argument("--oplog-max-entries", type=int, help="cap the oplog at this many entries")
    p.add_argument("--oplog-max-bytes", type=int, default=DEFAULT_OPLOG_MAX_BYTES,
                   help=f"cap the oplog at about this many bytes (default {DEFAULT_OPLOG_MAX_BYTES})")
    p.add_argument("--election-timeout", type=float, default=1.0, help="seconds before a lost primary is replaced")
    p.add_argument("--noop-interval", type=float, default=10.0, help="periodic no-op writer interval (seconds)")
    p.add_argument("--standalone", action="store_true",
                   help="serve one mongod that is not a replica set member (no oplog, no change streams)")
    p.add_argument("--shards", type=int, default=0,
                   help="serve a sharded cluster: a mongos (on --port), a config server replica set and this many "
                        "shard replica sets of --members members each (ports follow the mongos port)")
    p.add_argument("--keep-cursors-on-stepdown", action="store_true",
                   help="do not interrupt open cursors when a primary steps down")
    p.add_argument("--log-level", default="WARNING")
    return p


def configs_from(args) -> list[EmulatorConfig]:
    configs = []
    for i in range(args.replsets):
        name = args.replset if args.replsets == 1 else f"{args.replset.rstrip('0123456789') or 'rs'}{i}"
        if args.replsets > 1 and i == 0 and args.replset[-1:].isdigit():
            name = args.replset
        configs.append(EmulatorConfig(
            members=args.members, port=(args.port + i * args.members) if args.port else 0, host=args.host,
            bind=args.bind, replset=name, oplog_max_entries=args.oplog_max_entries,
            oplog_max_bytes=args.oplog_max_bytes, election_timeout=args.election_timeout,
            noop_interval=args.noop_interval, kill_cursors_on_stepdown=not args.keep_cursors_on_stepdown,
            data_dir=args.data_dir, standalone=args.standalone))
    return configs


async def _gc_freezer():
    """The emulator keeps millions of long-lived objects (documents, oplog): move them out of the cyclic
    collector's way so full collections do not stall replies."""
    while True:
        await asyncio.sleep(5)
        gc.freeze()


async def _serve(configs, emulator: Emulator | None = None) -> int:
    gc.set_threshold(50_000, 20, 20)
    emulator = emulator or Emulator(configs)
    try:
        await emulator.start()
    except OSError as exc:
        print(f"error: cannot start the emulator: {exc}", file=sys.stderr)
        return 1
    if isinstance(emulator, ShardedEmulator):
        print(emulator.mongos_uri)
    else:
        for rs in emulator.replica_sets:
            print(emulator.uri(rs))
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    freezer = loop.create_task(_gc_freezer())
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    freezer.cancel()
    await emulator.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.standalone:
        given = set(argv if argv is not None else sys.argv[1:])
        if given & {"--members", "--replset", "--replsets"} or any(
                a.startswith(("--members=", "--replset=", "--replsets=")) for a in given):
            print("error: --standalone serves one server: --members, --replset and --replsets do not apply",
                  file=sys.stderr)
            return 2
        args.members = 1
        args.replsets = 1
    if args.members < 1:
        print("error: --members must be at least 1", file=sys.stderr)
        return 2
    logging.basicConfig(level=getattr(logging, args.log_level.upper(), logging.WARNING),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if args.shards:
        problem = _sharded_conflict(args)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        base = configs_from(args)[0]
        return asyncio.run(_serve([], ShardedEmulator(args.shards, args.members, args.port, base)))
    return asyncio.run(_serve(configs_from(args)))


def _sharded_conflict(args) -> str | None:
    if args.shards < 1:
        return "--shards must be at least 1"
    if args.standalone or args.replsets != 1:
        return "--shards serves a sharded cluster: --standalone and --replsets do not apply"
    if args.data_dir:
        return "--data-dir is not supported for a sharded cluster (its data lives as long as the process)"
    return None


if __name__ == "__main__":
    sys.exit(main())
