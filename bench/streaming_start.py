"""When a connector started by a bench begins to stream: catch-up figures are timed from there, as `watch()` or a
plain read alone is timed from its first read. Start-up (Kafka transactions, offsets, topics, the source's
connection) is a one-time cost each bench prints apart."""

from __future__ import annotations

import threading
import time

from connectors.runner import ConnectorRunner


def wait_until_streaming(runner: ConnectorRunner, thread: threading.Thread, timeout: float = 120) -> float:
    """The monotonic time at which the runner's (only) pipeline reported its source connected."""
    deadline = time.monotonic() + timeout
    while not (runner.pipelines and next(iter(runner.pipelines.values())).metrics.connected):
        if not thread.is_alive() or time.monotonic() > deadline:
            raise SystemExit(f"the pipeline did not start streaming: {runner.errors or 'timed out'}")
        time.sleep(0.001)
    return time.monotonic()
