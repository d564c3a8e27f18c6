"""The unprivileged OS user Spark jobs run as, so that a job cannot read what the platform keeps secret.

A launcher running as root starts every job as ``SPARK_JOB_USER`` (default ``cdc-spark``; scripts/install.sh
creates it) with ``setpriv``: the job then cannot read the platform's encryption key file, its SQLite database
or the worker's environment (``/proc/<pid>/environ``), which belong to root with mode 0600. A launcher that is not
root runs jobs as its own user (it cannot switch); the job then only loses the secret environment variables.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sparkjobs.errors import JobError

DEFAULT_USER = "cdc-spark"


@dataclass(frozen=True)
class JobUser:
    name: str
    uid: int
    gid: int
    home: str

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run as this user: no supplementary groups of the launcher, no capabilities, and the parent-death
        signal the launcher may have set kept (a change of user clears it)."""
        setpriv = shutil.which("setpriv")
        if not setpriv:
            raise JobError("setpriv (util-linux) is needed to run Spark jobs as SPARK_JOB_USER: install util-linux")
        return [setpriv, f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--pdeathsig=keep", "--", *argv]

    def writable(self, path: Path) -> bool:
        """Whether the mode bits let this user write in ``path``."""
        info = path.stat()
        if info.st_uid == self.uid:
            return bool(info.st_mode & stat.S_IWUSR)
        if info.st_gid in os.getgrouplist(self.name, self.gid):
            return bool(info.st_mode & stat.S_IWGRP)
        return bool(info.st_mode & stat.S_IWOTH)

    def check_can_run(self, python: str, code_root: str) -> None:
        """Raises JobError unless this user can start ``python`` and import pyspark and our code from ``code_root``
        (a private folder on the way, such as a pyenv under /root, would stop the job with Java's "Cannot run
        program")."""
        probe = subprocess.run(self.wrap([python, "-c", "import pyspark, sparkjobs.run"]),  # noqa: S603
                               env={"PYTHONPATH": code_root, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                               capture_output=True, text=True, timeout=120, check=False)
        if probe.returncode != 0:
            detail = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
            raise JobError(f"the Spark job user {self.name} cannot run {python} with pyspark and {code_root} "
                           f"({detail}): scripts/install.sh lets it through the private folders on the way")

    def own_file(self, path: Path) -> None:
        """Creates ``path`` (empty, mode 0600) for the job to write; refuses a file someone else owns."""
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            if path.lstat().st_uid != self.uid:
                raise JobError(f"{path} exists and does not belong to the Spark job user {self.name}") from None
            return
        except OSError as error:
            raise JobError(f"cannot create {path} for the Spark job: {error}") from None
        try:
            os.fchown(descriptor, self.uid, self.gid)
        finally:
            os.close(descriptor)

    def writable_folder(self, folder: Path, *, purpose: str) -> None:
        """Makes sure the job can write in ``folder``: the missing folders up to it are created for the job's user;
        an existing one must already be writable by it (it is not taken over: it may be anyone's)."""
        missing = []
        while not folder.exists():
            missing.append(folder)
            if folder.parent == folder:
                break
            folder = folder.parent
        for created in reversed(missing):
            try:
                created.mkdir(mode=0o755)
            except FileExistsError:
                pass
            except OSError as error:
                raise JobError(f"cannot create {created} for {purpose}: {error}") from None
            os.chown(created, self.uid, self.gid)
        target = missing[0] if missing else folder
        if not target.is_dir() or not self.writable(target):
            raise JobError(f"{target} (for {purpose}) is not writable by the Spark job user {self.name}: give it "
                           f"to that user (chown {self.name}) or choose another place")


def job_user() -> JobUser | None:
    """The user jobs run as, or None to run them as the launcher's own (non-root) user."""
    requested = os.environ.get("SPARK_JOB_USER", "").strip()
    name = requested or DEFAULT_USER
    if os.geteuid() != 0:
        if requested and requested != pwd.getpwuid(os.geteuid()).pw_name:
            raise JobError(f"SPARK_JOB_USER={requested}: only a launcher running as root can start jobs as "
                           "another user")
        return None
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise JobError(f"the Spark job user {name} does not exist: run scripts/install.sh (it creates it) or set "
                       "SPARK_JOB_USER to an unprivileged user") from None
    if entry.pw_uid == 0:
        raise JobError(f"SPARK_JOB_USER={name} is root: Spark jobs must run as an unprivileged user")
    return JobUser(name=name, uid=entry.pw_uid, gid=entry.pw_gid, home=entry.pw_dir)
