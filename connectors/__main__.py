"""`python -m connectors run CONFIG.json` — run one connector in the foreground, without Django.

Ctrl-C (or SIGTERM) stops gracefully: the batch in flight is committed with its offset, nothing else is.
`python -m connectors validate CONFIG.json` prints every problem of a configuration at once.
`python -m connectors verify CONFIG.json` compares the connector's topics with its source, row by row (docs/verify.md):
exit status 0 when they are equal, 1 when rows differ, 2 when it could not compare.
`python -m connectors preflight --timeout-ms N` is the child process of a connectivity check
(connectors/config/preflight_process.py).
`python -m connectors tables --timeout-ms N` is the child process of a table preview
(connectors/config/table_preview.py).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading

from connectors import ConnectorError, UnknownConnectorClass
from connectors.config.types import ConfigError
from connectors.sources import engine_config, validate


def _load(path: str) -> dict:
    try:
        with open(path) as handle:
            data = json.load(handle)
    except OSError as error:
        raise SystemExit(f"cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise SystemExit(f"{path} is not valid JSON: {error}") from None
    # Kafka Connect's {"name": ..., "config": {...}} wrapping is accepted as is.
    if isinstance(data, dict) and isinstance(data.get("config"), dict):
        data = {**data["config"], "name": data["config"].get("name", data.get("name"))}
    return data


def _validate(args) -> int:
    problems = validate(_load(args.config))
    for problem in problems:
        named = not problem.property or problem.message.startswith(problem.property)
        print(problem.message if named else f"{problem.property}: {problem.message}")
    return 1 if problems else 0


def _run(args) -> int:
    from connectors.runner import ConnectorRunner

    try:
        _, config = engine_config(_load(args.config))
    except UnknownConnectorClass as error:
        print(f"invalid configuration: {error}", file=sys.stderr)
        return 2
    except ConfigError as error:
        print(f"invalid configuration:\n{error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    runner = ConnectorRunner(config, args.bootstrap_servers, stop)
    try:
        outcomes = runner.run()
    except ConnectorError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for partition, outcome in outcomes.items():
        error = runner.errors.get(partition)
        reason = (str(error) or type(error).__name__) if error is not None else None  # a bare TimeoutError too
        print(f"{config.name}/{partition}: {outcome}" + (f" ({reason})" if reason is not None else ""))
    return 1 if runner.errors else 0


def _verify(args) -> int:
    from connectors.core.verify import VerifyOptions
    from connectors.sources import verify_connector

    try:
        _, config = engine_config(_load(args.config))
    except (UnknownConnectorClass, ConfigError) as error:
        print(f"invalid configuration:\n{error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    options = VerifyOptions(chunk_size=args.chunk_size or config.snapshot_chunk_size,
                            chunk_max_bytes=config.snapshot_chunk_max_bytes, max_keys=args.max_keys,
                            wait_seconds=args.wait_seconds)
    try:
        report = verify_connector(config, args.bootstrap_servers, options, stop)
    except ConnectorError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_json(), indent=2, default=str))
    else:
        print(report.summary())
        for mismatch in report.mismatches:
            detail = f" {json.dumps(mismatch.fields, default=str)}" if mismatch.fields else ""
            print(f"  {mismatch.kind:9} {mismatch.table} {mismatch.key}{detail}")
    return 1 if report.mismatched else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m connectors", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a connector in the foreground")
    run.add_argument("config")
    run.add_argument("--bootstrap-servers", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    check = sub.add_parser("validate", help="print every problem of a configuration")
    check.add_argument("config")
    verify = sub.add_parser("verify", help="compare the connector's topics with its source, row by row")
    verify.add_argument("config")
    verify.add_argument("--bootstrap-servers", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    verify.add_argument("--chunk-size", type=int, default=0, help="rows per chunk (default: snapshot.chunk.size)")
    verify.add_argument("--max-keys", type=int, default=20, help="mismatches listed (all are counted)")
    verify.add_argument("--wait-seconds", type=float, default=120.0,
                        help="how long the connector may take to capture up to where the source was read")
    verify.add_argument("--json", action="store_true", help="print the whole report as JSON")
    child = sub.add_parser("preflight", help="check a configuration's source (properties as JSON on stdin)")
    child.add_argument("--timeout-ms", type=int, required=True)
    tables = sub.add_parser("tables", help="list a configuration's source tables and which it captures "
                                           "(properties as JSON on stdin)")
    tables.add_argument("--timeout-ms", type=int, required=True)
    args = parser.parse_args(argv)
    if args.command == "tables":
        from connectors.config.table_preview import serve as serve_tables

        return serve_tables(args.timeout_ms)
    if args.command == "preflight":
        from connectors.config.preflight_process import serve

        return serve(args.timeout_ms)
    logging.basicConfig(
        level=os.environ.get("LOG_LEVEL", "INFO"), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return {"run": _run, "validate": _validate, "verify": _verify}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
