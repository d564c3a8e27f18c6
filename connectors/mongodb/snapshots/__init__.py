"""MongoDB's snapshots: `_id`-range chunks, chunk reads and self-committing chunk tasks, and incremental (ad-hoc)
snapshots merged with the live stream. The coordination is the core's (connectors.core.snapshot). Design and
guarantees: docs/snapshots.md."""

from connectors.core.snapshot.executors import (
    ChunkExecutor,
    ChunkExecutorFactory,
    ChunkResult,
    PolledChunkExecutor,
    ThreadPoolChunkExecutor,
)
from connectors.core.snapshot.incremental import IncrementalSnapshots
from connectors.core.snapshot.markers import ChunkMarkers
from connectors.core.snapshot.metrics import SnapshotMetrics
from connectors.mongodb.snapshots.chunks import Chunk, plan_collection, range_query
from connectors.mongodb.snapshots.executors import (
    ChunkTask,
    ProcessPoolChunkExecutor,
    SnapshotContext,
    run_chunk_task,
    run_chunk_task_json,
)
from connectors.mongodb.snapshots.progress import CollectionProgress, SnapshotProgress

__all__ = [
    "Chunk",
    "ChunkExecutor",
    "ChunkExecutorFactory",
    "ChunkMarkers",
    "ChunkResult",
    "ChunkTask",
    "CollectionProgress",
    "IncrementalSnapshots",
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
