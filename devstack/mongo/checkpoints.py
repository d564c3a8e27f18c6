"""Checkpoints that do not stall the emulator: a forked child writes the data directory from its copy-on-write
snapshot of the replica set while the parent goes on serving.

persistence.save encodes every document and oplog entry. Done on the event loop it stopped every reply for as long
as that took (0.5-2.5 s at a few hundred thousand documents, every 5 s while writes went on), which showed as
write and change-stream stalls in the benches and tests. A forked child sees the state as it was at the fork, so
what it writes is one consistent point in time, as before. Where forking is unsafe (the emulator runs on a thread
of a process with other threads, as tests run it in-process) the checkpoint is written on the loop as before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time

from devstack.mongo import persistence

log = logging.getLogger("devstack.mongo")

# Checkpoints take at most about this share of the emulator's time: the next one waits that much longer.
MAX_SHARE = 0.1


def can_fork() -> bool:
    return hasattr(os, "fork") and threading.active_count() == 1


class Checkpointer:
    """Writes one replica set's checkpoints, one at a time."""

    def __init__(self, rs):
        self.rs = rs
        self.child: int | None = None
        self.last_seconds = 0.0

    def next_wait(self) -> float:
        return max(self.rs.config.checkpoint_interval, self.last_seconds * (1 - MAX_SHARE) / MAX_SHARE)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.next_wait())
            if self.rs.dirty:
                try:
                    await self.checkpoint()
                except Exception:
                    log.exception("checkpoint of %s failed", self.rs.name)

    async def checkpoint(self) -> None:
        started = time.monotonic()
        if not can_fork():
            persistence.save(self.rs)
        else:
            self.rs.dirty = False  # changes from the fork on belong to the next checkpoint
            self.child = self._fork()
            try:
                while not self._reaped(os.WNOHANG):
                    await asyncio.sleep(0.05)
            except BaseException:
                self.rs.dirty = True
                raise
        self.last_seconds = time.monotonic() - started

    def wait(self) -> None:
        """Blocks until a checkpoint being written has been (the final one must not race it)."""
        if self.child is not None:
            self._reaped(0)

    def _fork(self) -> int:
        pid = os.fork()
        if pid == 0:  # the child: write, and leave without running anything of the parent's
            code = 1
            try:
                signal.set_wakeup_fd(-1)
                # The client connections' sockets: a copy held here would keep a connection the parent closes
                # (a step-down, a cut) open for the client until this child exits.
                os.closerange(3, os.sysconf("SC_OPEN_MAX"))
                for number in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(number, signal.SIG_DFL)
                persistence.save(self.rs)
                code = 0
            except BaseException:
                log.exception("checkpoint of %s failed", self.rs.name)
            finally:
                os._exit(code)
        return pid

    def _reaped(self, options: int) -> bool:
        pid, status = os.waitpid(self.child, options)
        if pid == 0:
            return False
        self.child = None
        if os.waitstatus_to_exitcode(status) != 0:
            self.rs.dirty = True
            raise RuntimeError(f"the checkpoint of {self.rs.name} exited with status {status}")
        return True
