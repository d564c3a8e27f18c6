"""Test helper: the `delta_sync` job run as the platform runs it (spark-submit from `sparkjobs.submit.command`, as the
job user), followed line by line, killed with SIGKILL on demand; and the Delta table it keeps, read back."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from sparkjobs.delta_sync import table_path
from sparkjobs.output import PREFIX
from sparkjobs.submit import command

START_TIMEOUT_S = 1800.0  # spark-submit starting a JVM and merging on a loaded 2-core machine


def job_folder() -> Path:
    """A folder of the job's user (pytest's own tmp_path is private to root): its tables and checkpoint go inside."""
    from sparkjobs.jobuser import job_user

    folder = Path(tempfile.mkdtemp(prefix="cdc-delta-sync-"))
    folder.chmod(0o755)
    user = job_user()
    if user is not None:
        os.chown(folder, user.uid, user.gid)
    return folder


def remove_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


class SyncProcess:
    """One spark-submit of the `delta_sync` template; `lines` are its CDCJOB objects as they come."""

    def __init__(self, args: dict, *, master: str = "local[2]", cwd: Path | None = None):
        argv, env = command("delta_sync", args, master=master)
        self.process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,  # noqa: S603
                                        stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.lines: list[dict] = []
        self.stderr: list[str] = []
        self._new: queue.Queue[dict | None] = queue.Queue()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        for text in self.process.stdout:
            if text.startswith(PREFIX):
                line = json.loads(text[len(PREFIX):])
                self.lines.append(line)
                self._new.put(line)
        self._new.put(None)

    def _read_stderr(self) -> None:
        for text in self.process.stderr:
            self.stderr = [*self.stderr[-200:], text.rstrip("\n")]

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float = START_TIMEOUT_S) -> dict:
        """The first line (from now on) that ``predicate`` accepts; fails if the job ends or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._new.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"the sync ended first: {self.lines[-1:]}\n" + "\n".join(self.stderr[-40:]))
            if predicate(line):
                return line
        raise AssertionError(f"no such line within {timeout:.0f}s: {self.lines[-3:]}")

    def kill9(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(60)

    def finish(self, timeout: float = START_TIMEOUT_S) -> dict:
        """The final line of a job that ends by itself (trigger available_now)."""
        if not any("status" in line for line in self.lines):
            self.wait_for(lambda line: "status" in line, timeout=timeout)
        self.process.wait(60)
        final = self.lines[-1]
        assert final.get("status") == "succeeded", (final, "\n".join(self.stderr[-40:]))
        return final


def sync_to_end(args: dict, *, master: str = "local[2]") -> dict:
    return SyncProcess({**args, "trigger": "available_now"}, master=master).finish()


def kill_mid_merge(args: dict, write_more: Callable[[], None], *, master: str = "local[2]") -> None:
    """Starts a continuous sync, waits until it merged a first batch, lets ``write_more`` change the source, and
    kills the job (SIGKILL to its process group) as it starts merging a later batch."""
    running = SyncProcess({**args, "trigger": "1 second"}, master=master)
    try:
        first = running.wait_for(lambda line: line.get("event") == "batch")
        write_more()
        running.wait_for(lambda line: line.get("event") == "step" and "merge into" in line.get("name", "")
                         and int(line["name"].split()[1].rstrip(":")) > first["batch_id"])
    finally:
        running.kill9()


def delta_rows(spark, output_path: str, topic: str, key: str) -> dict:
    """The table of ``topic`` as ``{key value: row dict}``."""
    frame = spark.read.format("delta").load(table_path(output_path, topic))
    rows = [row.asDict() for row in frame.collect()]
    by_key = {row[key]: row for row in rows}
    assert len(by_key) == len(rows), "a key appears twice in the Delta table"
    return by_key
