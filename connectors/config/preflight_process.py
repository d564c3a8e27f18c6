"""Running a connectivity check in a child process that cannot outlive its deadline.

A check connects wherever a configuration points, and the far end may be hostile: a port that accepts and never
answers, a MongoDB seed list of thousands of hosts, a `hello` naming thousands of members (the driver starts
threads per host), a server that trickles bytes. Drivers bound some of that and not all of it. In a child process
every check is bounded from outside: it is killed (with every thread it started) at the deadline, its address
space and CPU time are capped, and it inherits no environment of the caller (no platform secret reaches it; the
configuration, password included, travels on its standard input).

`python -m connectors preflight --timeout-ms N` is the child: a property map as JSON on stdin, a JSON list of
[property, message] on stdout.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connectors.config.types import Problem

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STARTUP_ALLOWANCE_S = 4.0  # the interpreter and the drivers' imports, on a loaded machine
ADDRESS_SPACE_BYTES = 2 << 30
THREAD_STACK_BYTES = 256 << 10
# Variables a driver may need to find certificates and the interpreter its modules; nothing else is passed on.
INHERITED = ("PATH", "LANG", "LC_ALL", "SSL_CERT_FILE", "SSL_CERT_DIR", "TZ")


def run(properties: Mapping[str, Any], timeout_ms: int) -> list[Problem]:
    """The preflight problems of `properties`, found in a child process killed after `timeout_ms` plus the time
    it takes to start."""
    environment = {name: os.environ[name] for name in INHERITED if name in os.environ}
    environment["PYTHONPATH"] = str(PROJECT_ROOT)
    limit_s = timeout_ms / 1000 + STARTUP_ALLOWANCE_S
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
        [sys.executable, "-m", "connectors", "preflight", "--timeout-ms", str(int(timeout_ms))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=PROJECT_ROOT,
        env=environment, start_new_session=True, preexec_fn=lambda: limit_child(limit_s),  # noqa: PLW1509
    )
    try:
        output, _ = child.communicate(json.dumps(dict(properties), default=str).encode(), timeout=limit_s)
    except subprocess.TimeoutExpired:
        kill(child)
        return [Problem("", f"the connection check did not finish within {timeout_ms / 1000:g} s: the source is "
                            "slow to answer, or the address is not the source's")]
    try:
        return [Problem(prop, message) for prop, message in json.loads(output)]
    except (ValueError, TypeError):
        return [Problem("", "the connection check failed before it could tell why (the check process ended "
                            f"with status {child.returncode}); try again, and see the web server's resources")]


def limit_child(limit_s: float) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))
    cpu = int(limit_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))


def kill(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def serve(timeout_ms: int) -> int:
    """The child's side: read the properties, check, write the problems."""
    import threading

    threading.stack_size(THREAD_STACK_BYTES)
    from connectors.sources import preflight

    properties = json.load(sys.stdin)
    problems = preflight(properties, timeout_ms) if isinstance(properties, dict) else []
    json.dump([[problem.property, problem.message] for problem in problems], sys.stdout)
    sys.stdout.flush()
    os._exit(0)  # drivers' monitor threads may still be waiting on a socket: do not wait for them
