"""Each pipeline in a process of its own, so pipelines use every core instead of sharing one interpreter lock.

The Celery task (a thread of the worker) starts `python -m workers.pipeline_child` for its partition and follows it
to its end: the child runs the same `workers.streaming.run_partition` a thread would (lease, control listener,
reports, exactly-once commits), prints its outcome as one `CDCPIPELINE {json}` line on standard output, and logs on
standard error (the worker's log). On Linux the child gets SIGKILL when the thread that started it dies
(PR_SET_PDEATHSIG), so a worker killed with -9 takes its pipelines with it, as it did when they were threads: their
leases expire and the supervisor starts them elsewhere, where Kafka's transactional id fences any leftover. A warm
shutdown of the worker (`stop_all`) asks every child to stop as a pause would: final commit, lease released.

No Django here: workers.streaming decides when to use it (settings.CDC_PIPELINE_PROCESSES).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

RESULT_PREFIX = "CDCPIPELINE "
ROOT = Path(__file__).resolve().parents[1]

log = logging.getLogger(__name__)
_children: set[subprocess.Popen] = set()
_children_lock = threading.Lock()


def run_in_process(connector: str, partition: str, worker: str) -> dict:
    """Runs the partition's pipeline in a child process until it ends; its outcome (run_partition's dict)."""
    argv = [sys.executable, "-m", "workers.pipeline_child", str(os.getpid()), connector, partition, worker]
    child = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                             errors="replace", bufsize=1)
    with _children_lock:
        _children.add(child)
    log.info("pipeline %s/%s runs in process %d", connector, partition, child.pid)
    outcome = None
    try:
        for line in child.stdout:
            if line.startswith(RESULT_PREFIX):
                outcome = json.loads(line[len(RESULT_PREFIX):])
            else:
                sys.stdout.write(line)  # a stray print of the child's: kept in the worker's output
        code = child.wait()
    finally:
        with _children_lock:
            _children.discard(child)
    if outcome is not None:
        return outcome
    return {"status": "failed", "replica_set": partition, "reason": "",
            "error": f"the pipeline's process {child.pid} {describe_exit(code)} before it reported an outcome; "
                     "its lease expires and the supervisor starts it again"}


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def stop_all() -> int:
    """SIGTERM to every running child (each stops as a pause would); how many were asked."""
    with _children_lock:
        children = [child for child in _children if child.poll() is None]
    for child in children:
        try:
            child.terminate()
        except ProcessLookupError:
            pass
    return len(children)
