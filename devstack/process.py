"""Start, find and stop the background processes of the local stack, by pid file.

`down` must stop only what `up` started, so every process is recorded with its pid and the
start time the kernel reports for it; a pid that was reused by an unrelated process is never killed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from devstack.settings import STATE_DIR


class StackError(RuntimeError):
    """A problem the user can fix; printed without a traceback."""


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 (starttime); the command name in field 2 may contain spaces, so split after ')'.
    return stat.rsplit(")", 1)[1].split()[19]


def recorded_pid(pid_file: Path) -> int | None:
    """The pid a pid file records if that very process is still alive (same start time), else None."""
    try:
        pid_text, started = pid_file.read_text().split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return None
    if _start_time(pid) != started:
        return None
    return pid


def private_directory(path: Path) -> None:
    """Creates `path` readable by its owner only (0700), and tightens it if it exists: logs quote requests."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)


def open_private_log(path: Path):
    """`path` opened for appending, created 0600 (an existing log is tightened to 0600)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(descriptor, 0o600)
    return os.fdopen(descriptor, "ab")


@dataclass
class ManagedProcess:
    name: str

    @property
    def pid_file(self) -> Path:
        return STATE_DIR / "run" / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return STATE_DIR / "logs" / f"{self.name}.log"

    def pid(self) -> int | None:
        """The recorded pid if that very process is still alive, else None."""
        return recorded_pid(self.pid_file)

    def uptime(self) -> float | None:
        """Seconds since the recorded process started, None when it is not running."""
        pid = self.pid()
        started = _start_time(pid) if pid is not None else None
        if started is None:
            return None
        booted_seconds = float(Path("/proc/uptime").read_text().split()[0])
        return booted_seconds - int(started) / os.sysconf("SC_CLK_TCK")

    def is_running(self) -> bool:
        return self.pid() is not None

    def start(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> int:
        private_directory(self.log_file.parent)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        with open_private_log(self.log_file) as log:
            log.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {' '.join(argv)}\n".encode())
            log.flush()
            proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,  # survives the terminal that ran `up`; stopped by `down`
            )
        started = None
        for _ in range(50):
            started = _start_time(proc.pid)
            if started:
                break
            time.sleep(0.01)
        self.pid_file.write_text(f"{proc.pid} {started}\n")
        return proc.pid

    def exited_early(self) -> bool:
        return self.pid_file.exists() and not self.is_running()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 20.0) -> bool:
        """Stop the process group we started; True when something was stopped."""
        pid = self.pid()
        self.pid_file.unlink(missing_ok=True) if pid is None else None
        if pid is None:
            return False
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _start_time(pid) is not None:
            _reap(pid)
            time.sleep(0.1)
        if _start_time(pid) is not None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            time.sleep(0.2)
            _reap(pid)
        self.pid_file.unlink(missing_ok=True)
        return True


def _reap(pid: int) -> None:
    """Collect a child that `up` started in this same Python process (tests do that)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def wait_until(predicate, timeout: float, what: str, process: ManagedProcess | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if process is not None and process.exited_early():
            raise StackError(f"{process.name} exited while starting; last log lines:\n{process.log_tail()}")
        time.sleep(0.2)
    tail = f"\nlast log lines of {process.name}:\n{process.log_tail()}" if process else ""
    raise StackError(f"timed out after {timeout:.0f}s waiting for {what}{tail}")
