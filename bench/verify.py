"""Verify's speed beside the connector's own snapshot of the same table, on the devstack's server and Kafka.

    python -m bench.verify [--source postgres|mariadb|mongodb] [--rows 200000] [--chunk-size 20000]

The connector snapshots a fresh table (collection) `hot (id, v, note)` of `--rows` rows (bench/verify_under_load.py
creates it) and streams on; its snapshot rate is the rows over the time from its start to its streaming phase (the
snapshot written and committed). Verify then compares the table with the topic while the connector runs: it reads
the topic once and the table once, in chunks of `--chunk-size` rows. The target is Verify ≥ 0.5× the snapshot's
rows/s.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.topics import delete_topics  # noqa: E402
from bench.verify_under_load import SOURCES, connector_config, snapshot_done  # noqa: E402
from connectors.core.verify import VerifyOptions  # noqa: E402
from connectors.runner import ConnectorRunner  # noqa: E402
from connectors.sources import verify_connector  # noqa: E402
from devstack import stack as devstack  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=sorted(SOURCES), default="postgres")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--chunk-size", type=int, default=20_000)
    args = parser.parse_args()
    devstack.up(["kafka", SOURCES[args.source].service], echo=lambda line: None)
    bootstrap = devstack.endpoints().kafka_bootstrap
    name = f"benchv{args.source[:2]}{uuid.uuid4().hex[:6]}"
    source = SOURCES[args.source](name, args.rows)
    stop = threading.Event()
    thread = None
    try:
        connector = connector_config(source, name, args.chunk_size)
        runner = ConnectorRunner(connector, bootstrap, stop)
        thread = threading.Thread(target=runner.run, daemon=True)
        started = time.monotonic()
        thread.start()
        snapshot_s = snapshot_done(runner, thread) - started
        report = verify_connector(connector, bootstrap, VerifyOptions(chunk_size=args.chunk_size))
        if report.mismatched or report.rows != args.rows:
            raise SystemExit(f"Verify found a difference on a quiet table: {report.summary()}")
        snapshot_rate, verify_rate = args.rows / snapshot_s, report.rows / report.seconds
        print(f"{args.source}: snapshot {args.rows} rows: {snapshot_rate:,.0f} rows/s ({snapshot_s:.1f}s, start-up "
              "included)")
        print(f"{args.source}: verify   {report.rows} rows in {report.chunks} chunks: {verify_rate:,.0f} rows/s "
              f"({report.seconds:.1f}s: {report.waited:.1f}s waiting for the connector's offset, "
              f"{report.topic_seconds:.1f}s reading the topic, {report.source_seconds:.1f}s reading the table and "
              f"comparing); verify / snapshot {verify_rate / snapshot_rate:.2f} (target >= 0.5)")
    finally:
        stop.set()
        if thread is not None:
            thread.join(60)
        delete_topics(bootstrap, name)
        source.drop()


if __name__ == "__main__":
    main()
