"""python -m bench.compat --source postgres|mariadb|mongodb [--schemas on|off|both] [--mode M] [--keep] [--fetch]

Runs the source's workload with Debezium (the pinned release, on Kafka Connect) and ours side by side on the
devstack's server and Kafka, then prints per topic: events, byte-identical, differences by category with one
example, records on one side only, and the masks applied. Exits 1 when any topic differs.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

from bench.compat import debezium, run
from bench.compat.debezium import DebeziumUnavailable
from devstack import stack as devstack

# --source -> (module, class): each module holds one source's workload, properties and masks
SOURCES = {
    "postgres": ("bench.compat.postgres", "PostgresCompat"),
    "mariadb": ("bench.compat.mariadb", "MariadbCompat"),
    "mongodb": ("bench.compat.mongodb", "MongodbCompat"),
}


def source_class(name: str):
    module_name, class_name = SOURCES[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        raise SystemExit(f"bench.compat has no workload for {name} yet ({module_name} is missing)") from None
    return getattr(module, class_name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compat", description=__doc__.splitlines()[2])
    parser.add_argument("--source", required=True, choices=sorted(SOURCES))
    parser.add_argument("--schemas", choices=("on", "off", "both"), default="both",
                        help="JsonConverter schemas.enable on both sides (default: both, one run each)")
    parser.add_argument("--mode", help="mongodb: one capture.mode (default: each of the four, one run each)")
    parser.add_argument("--keep", action="store_true", help="keep the database and topics of each run")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for each step")
    parser.add_argument("--fetch", action="store_true",
                        help="only fetch the source's Debezium and Kafka Connect jars (scripts/install.sh)")
    args = parser.parse_args(argv)
    if args.fetch:
        try:
            cls = source_class(args.source)
            debezium.jars(cls.connector_artifact, getattr(cls, "debezium_version", debezium.DEBEZIUM_VERSION))
        except DebeziumUnavailable as error:
            print(f"cannot fetch Debezium: {error}", file=sys.stderr)
            return 2
        return 0
    # a terminated run still stops Debezium's JVM and our connector (run.run's cleanup)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cls = source_class(args.source)
    devstack.up(["kafka"], echo=lambda line: None)
    bootstrap = devstack.endpoints().kafka_bootstrap
    clean = True
    for schemas in {"on": (True,), "off": (False,), "both": (True, False)}[args.schemas]:
        # a source with variants (MongoDB's capture modes) runs once per variant
        for source in cls.variants(args.mode) if hasattr(cls, "variants") else [cls()]:
            try:
                outcome = run.run(source, bootstrap, schemas, timeout=args.timeout, keep=args.keep)
            except DebeziumUnavailable as error:
                print(f"cannot run Debezium: {error}", file=sys.stderr)
                return 2
            print(run.render(outcome), flush=True)
            clean = clean and outcome.clean
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
