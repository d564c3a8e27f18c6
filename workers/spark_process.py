"""One spark-submit process, followed: its `CDCJOB` lines and log lines as they come, cancelling, and cleanup.

No Django here: `workers.spark` records what this yields. The process runs in a session (process group) of its own,
so cancelling reaches spark-submit, the Python driver and anything they started; on Linux it also gets SIGTERM when
the worker thread that started it dies (PR_SET_PDEATHSIG), so a killed worker does not leave a job running on.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from sparkjobs.output import PREFIX

CANCEL_KILL_AFTER_S = 30.0  # docs/spark.md: SIGKILL the group if it is still alive 30 s after the SIGTERM

# Sets PR_SET_PDEATHSIG, checks the parent did not die before that, then becomes the real command.
_PDEATHSIG = (
    "import ctypes,os,signal,sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)\n"
    "os.getppid() == int(sys.argv[1]) or sys.exit(143)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)

log = logging.getLogger(__name__)


@dataclass
class Line:
    stream: str  # "event" (a CDCJOB object in `event`) or "stderr"
    text: str
    event: dict | None = None


class SparkProcess:
    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: str | None = None):
        argv = list(argv)
        if sys.platform.startswith("linux"):
            argv = [sys.executable, "-c", _PDEATHSIG, str(os.getpid()), *argv]
        self.process = subprocess.Popen(argv, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, errors="replace", bufsize=1,
                                        start_new_session=True)
        self.pid = self.process.pid  # = its process group
        self.driver_pid: int | None = None
        self.final: dict | None = None
        self.cancel_sent_at: float | None = None
        self._lines: queue.Queue[Line | None] = queue.Queue()
        self._closed = 0
        self._readers = [threading.Thread(target=self._read, args=(pipe, name), daemon=True, name=f"spark-{name}")
                         for pipe, name in ((self.process.stdout, "stdout"), (self.process.stderr, "stderr"))]
        for reader in self._readers:
            reader.start()

    def _read(self, pipe, name: str) -> None:
        try:
            for raw in pipe:
                text = raw.rstrip("\n")
                if name == "stdout" and text.startswith(PREFIX):
                    try:
                        event = json.loads(text[len(PREFIX):])
                    except ValueError:
                        self._lines.put(Line("stderr", text))
                        continue
                    if event.get("event") == "started" and isinstance(event.get("pid"), int):
                        self.driver_pid = event["pid"]
                    if "status" in event:
                        self.final = event
                    self._lines.put(Line("event", text[len(PREFIX):], event))
                elif text:
                    self._lines.put(Line("stderr", text))
        finally:
            self._lines.put(None)

    def lines(self, timeout: float) -> Iterator[Line]:
        """The lines that arrive within `timeout` seconds (returns early once both pipes are closed)."""
        deadline = time.monotonic() + timeout
        if self.output_closed:  # nothing more will come: wait a little for the exit status instead of spinning
            time.sleep(min(timeout, 0.1))
            return
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.output_closed:
                return
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                return
            if line is None:
                self._closed += 1
                continue
            yield line

    @property
    def output_closed(self) -> bool:
        return self._closed >= len(self._readers) and self._lines.empty()

    def poll(self) -> int | None:
        return self.process.poll()

    def cancel(self) -> None:
        """SIGTERM to the driver (it reports `cancelled`); to the whole group while there is no driver yet."""
        if self.cancel_sent_at is None:
            self.cancel_sent_at = time.monotonic()
            target = self.driver_pid
            try:
                if target is not None:
                    os.kill(target, signal.SIGTERM)
                else:
                    os.killpg(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        elif time.monotonic() - self.cancel_sent_at > CANCEL_KILL_AFTER_S:
            self.kill()

    def kill(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def finish(self, timeout: float = 30) -> int:
        """Waits for the exit status, then removes whatever is left in the group (a daemon the job started)."""
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.wait(10)
        self.kill()
        self._wait_group_gone(10)
        for reader in self._readers:
            reader.join(5)
        return code

    def _wait_group_gone(self, timeout: float) -> None:
        """SIGKILL is delivered asynchronously: the run ends only once nothing of its group is left."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(self.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)
        log.warning("spark-submit group %s still has processes %.0f s after SIGKILL", self.pid, timeout)
