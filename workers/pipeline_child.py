"""`python -m workers.pipeline_child <parent pid> <connector> <partition> <worker>`: one partition's pipeline in a
process of its own (workers.pipeline_process starts it). Dies with the worker thread that started it (Linux
PR_SET_PDEATHSIG); SIGTERM stops it as a pause would, and if that stop has not finished within STOP_GRACE_S the
process ends anyway (Kafka fences what it left open)."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import threading

from workers.pipeline_process import RESULT_PREFIX

PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 60.0


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the signal was armed
        os._exit(137)


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    parent, connector, partition, worker = int(argv[0]), argv[1], argv[2], argv[3]
    _die_with_parent(parent)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcplatform.settings")
    import django

    django.setup()
    from workers.streaming import run_partition

    running = []

    def on_sigterm(signum, frame) -> None:
        for managed in running:
            managed.request_stop("the worker is shutting down")
        deadline = threading.Timer(STOP_GRACE_S, os._exit, args=(143,))
        deadline.daemon = True
        deadline.start()

    signal.signal(signal.SIGTERM, on_sigterm)
    outcome = run_partition(connector, partition, worker, started=running.append)
    print(RESULT_PREFIX + json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
