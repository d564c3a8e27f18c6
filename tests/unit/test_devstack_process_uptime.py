"""`ManagedProcess.uptime()`: how long the recorded process has run (bench.streaming prints the broker's), None once
it is stopped or was never started."""

from __future__ import annotations

import time

from devstack import process


def test_uptime_of_a_started_process_and_none_once_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(process, "STATE_DIR", tmp_path)
    managed = process.ManagedProcess("uptime-test")
    assert managed.uptime() is None
    before = time.monotonic()
    managed.start(["sleep", "60"])
    try:
        time.sleep(0.3)
        uptime = managed.uptime()
        assert uptime is not None and 0.2 <= uptime <= time.monotonic() - before + 0.05
    finally:
        managed.stop()
    assert managed.uptime() is None
