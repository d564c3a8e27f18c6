"""The snapshot coordinator commits the chunks that finished while it was busy in one transaction, in plan order,
with the progress that marks exactly those chunks done; a chunk that finishes alone is committed alone, and the final
chunk last, with the completion (connectors/core/snapshot/coordinator.py). Committing each chunk by itself (the
coordinator before) fails it."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from types import SimpleNamespace

from connectors.core.snapshot.chunks import Plan
from connectors.core.snapshot.coordinator import InitialSnapshot
from connectors.core.snapshot.executors import ChunkResult
from connectors.core.snapshot.metrics import SnapshotMetrics
from connectors.core.snapshot.progress import SnapshotProgress, SnapshotStart
from connectors.core.stream import Backoff

BOUNDS = [0, 10, 20, 30, 40, 50, 60]  # six chunks: five read by the executor, the final one by the coordinator


def rows_of(number: int) -> list[str]:
    return [f"chunk {number} row {i}" for i in range(3)]


class Reader:
    def capture_start(self) -> SnapshotStart:
        return SnapshotStart(position=0)

    def collections(self) -> list[str]:
        return ["db.t"]

    def plan(self, namespace: str, chunk_size: int) -> Plan:
        return Plan(list(BOUNDS), 60, "test")

    def read_chunk(self, builder, chunk, read_at, filter, mark_last, stop):  # noqa: A002 - the protocol's name
        return rows_of(chunk.number), 3

    def where_read(self, chunk) -> None:
        return None

    def chunk_failure(self, error, chunk, remote):
        return error


class PairedExecutor:
    """Reads nothing: a submitted chunk finishes once another is waiting beside it (both at once), or alone after
    `alone_after` seconds."""

    commits_itself = False
    capacity = 2

    def __init__(self, context, alone_after: float = 0.3):
        self.pending: list[tuple[float, object, Future]] = []
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.alone_after = alone_after
        threading.Thread(target=self._finish_late, daemon=True).start()

    def submit(self, task) -> Future:
        future: Future = Future()
        future.set_running_or_notify_cancel()
        with self.lock:
            self.pending.append((time.monotonic(), task, future))
            if len(self.pending) == self.capacity:
                self._finish_all()
        return future

    def _finish_all(self) -> None:
        pending, self.pending = self.pending, []
        for _, task, future in pending:
            future.set_result(ChunkResult(task, 3, rows_of(task.chunk.number)))

    def _finish_late(self) -> None:
        while not self.closed.wait(0.02):
            with self.lock:
                if self.pending and time.monotonic() - self.pending[0][0] > self.alone_after:
                    self._finish_all()

    def shutdown(self, cancel_pending: bool = True) -> None:
        self.closed.set()


class Host:
    def __init__(self) -> None:
        self.config = SimpleNamespace(name="c", offset_storage_topic="c.offsets", snapshot_delay_ms=0,
                                      snapshot_chunk_size=10, snapshot_chunk_max_bytes=0, snapshot_max_threads=2,
                                      snapshot_filter=lambda namespace: None)
        self.stop = threading.Event()
        self.snapshot_metrics = SnapshotMetrics("c", "p")
        self.bootstrap_servers = "localhost:1"  # never asked: no chunk goes to a self-committing worker
        self.backoff = Backoff()
        self.builder = object()
        self.commits: list[tuple[list, str, bool]] = []

    def commit_snapshot(self, messages: list, progress: SnapshotProgress, completed: bool) -> None:
        done = progress.to_json()["collections"][0]["done"] if progress.collections else ""
        self.commits.append((list(messages), done, completed))

    def snapshot_context(self, reader):
        return SimpleNamespace()

    def self_committing_executor(self, context):
        raise AssertionError("no chunk went to a self-committing worker")


def test_chunks_finished_together_commit_in_one_transaction_with_their_progress():
    host = Host()
    snapshot = InitialSnapshot(host, Reader(), SnapshotProgress(), executor_factory=PairedExecutor, partition="p")
    assert snapshot.run()
    assert host.commits == [
        ([], "000000", False),  # the plan
        (rows_of(0) + rows_of(1), "110000", False),  # finished together: one transaction
        (rows_of(2) + rows_of(3), "111100", False),
        (rows_of(4), "111110", False),  # finished alone
        (rows_of(5), "111111", True),  # the final chunk, with the completion
    ]
    assert (host.snapshot_metrics.chunks_committed, host.snapshot_metrics.rows_this_run) == (6, 18)
