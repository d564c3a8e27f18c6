"""`keep_freed_memory`: a batch's worth of messages allocated again after the last batch's were freed takes no new
pages from the kernel (no page faults), where glibc's defaults take them all again. Each case runs in a process of
its own, since the setting is process-wide."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

_CYCLES = """
import resource, sys
from connectors.core.allocator import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
faults = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    batch = [bytes(3000) + i.to_bytes(4, "little") for i in range(4096)]  # ~12 MB, as a batch of events
    del batch
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(faults[-1])
"""


def _faults_of_a_later_batch(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", _CYCLES, mode], capture_output=True, text=True, timeout=60,
                          check=True)
    return int(done.stdout)


def test_a_later_batch_takes_no_new_pages_once_freed_memory_is_kept():
    if getattr(ctypes.CDLL(None), "mallopt", None) is None:
        pytest.skip("the C library has no mallopt (not glibc)")
    pages = 4096 * 3004 // 4096
    assert _faults_of_a_later_batch("default") > pages // 2  # the allocator gave the batch's memory back
    assert _faults_of_a_later_batch("keep") < pages // 20
