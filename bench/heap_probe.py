"""What a pipeline process's RSS is made of over a run, sampled in the process itself: the Python objects' blocks
(`sys.getallocatedblocks`) and, on glibc, the bytes malloc hands out and the bytes its arenas hold (`mallinfo2`,
summed over the arenas; blocks malloc maps on their own, as a 1 MB value's, counted in both). Live memory that comes
back to where it started while RSS stays up is memory the allocator keeps (connectors/core/allocator.py keeps up to
32 MiB freed per arena), not a leak.

    probe = HeapProbe(); probe.start(); ...; print(probe.summary())
"""

from __future__ import annotations

import ctypes
import sys
import threading

SAMPLE_S = 0.25


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mallinfo2():
    """glibc's mallinfo2 (None elsewhere)."""
    function = getattr(ctypes.CDLL(None), "mallinfo2", None)
    if function is not None:
        function.restype = _Mallinfo2
    return function


class HeapProbe:
    """Samples (Python blocks, malloc in use MB, malloc arenas MB) every SAMPLE_S in a daemon thread."""

    def __init__(self) -> None:
        self.samples: list[tuple[int, float, float]] = []
        self._mallinfo = _mallinfo2()
        self._stop = threading.Event()

    def sample(self) -> None:
        used = arenas = float("nan")
        if self._mallinfo is not None:
            info = self._mallinfo()
            used, arenas = (info.uordblks + info.hblkhd) / 1e6, (info.arena + info.hblkhd) / 1e6
        self.samples.append((sys.getallocatedblocks(), used, arenas))

    def start(self) -> None:
        self.sample()

        def run() -> None:
            while not self._stop.wait(SAMPLE_S):
                self.sample()
        threading.Thread(target=run, name="heap-probe", daemon=True).start()

    def summary(self) -> str:
        """Start, peak and end of each figure (the end sampled now)."""
        self._stop.set()
        self.sample()
        first, last = self.samples[0], self.samples[-1]
        peaks = [max(sample[i] for sample in self.samples) for i in range(3)]
        return (f"Python blocks {first[0]:,} / peak {peaks[0]:,} / end {last[0]:,}; malloc in use {first[1]:.1f} / "
                f"peak {peaks[1]:.1f} / end {last[1]:.1f} MB; malloc arenas {first[2]:.1f} / peak {peaks[2]:.1f} / "
                f"end {last[2]:.1f} MB")
