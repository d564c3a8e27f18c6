"""Snapshots: the chunked, parallel, resumable initial snapshot and incremental (ad-hoc) snapshots merged with
the live stream. Design and guarantees: docs/snapshots.md."""

from connectors.snapshots.chunks import Chunk, plan_collection, range_query
from connectors.snapshots.executors import (
    ChunkExecutor,
    ChunkExecutorFactory,
    ChunkResult,
    ChunkTask,
    PolledChunkExecutor,
    ProcessPoolChunkExecutor,
    SnapshotContext,
    ThreadPoolChunkExecutor,
    run_chunk_task,
    run_chunk_task_json,
)
from connectors.snapshots.incremental import IncrementalSnapshots
from connectors.snapshots.initial import InitialSnapshot
from connectors.snapshots.markers import ChunkMarkers
from connectors.snapshots.metrics import SnapshotMetrics
from connectors.snapshots.progress import CollectionProgress, SnapshotProgress

__all__ = [
    "Chunk",
    "ChunkExecutor",
    "ChunkExecutorFactory",
    "ChunkMarkers",
    "ChunkResult",
    "ChunkTask",
    "CollectionProgress",
    "IncrementalSnapshots",
    "InitialSnapshot",
    "PolledChunkExecutor",
    "ProcessPoolChunkExecutor",
    "SnapshotContext",
    "SnapshotMetrics",
    "SnapshotProgress",
    "ThreadPoolChunkExecutor",
    "plan_collection",
    "range_query",
    "run_chunk_task",
    "run_chunk_task_json",
]
