"""One replica set's pipeline: the core pipeline (connectors.core.pipeline) reading a MongoDB replica set."""

from __future__ import annotations

import threading
from collections.abc import Callable

from connectors.core.metrics import StreamingMetrics
from connectors.core.pipeline import Pipeline
from connectors.core.snapshot.executors import ChunkExecutorFactory
from connectors.core.snapshot.metrics import SnapshotMetrics
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.source import ReplicaSetSource
from connectors.mongodb.topology import ReplicaSet


class ReplicaSetPipeline(Pipeline):
    def __init__(
        self,
        config: ConnectorConfig,
        replica_set: ReplicaSet,
        bootstrap_servers: str,
        *,
        stop: threading.Event | None = None,
        metrics: StreamingMetrics | None = None,
        on_phase: Callable[[str], None] | None = None,
        snapshot_metrics: SnapshotMetrics | None = None,
        chunk_executor: ChunkExecutorFactory | None = None,
    ):
        self.replica_set = replica_set
        super().__init__(config, ReplicaSetSource(config, replica_set), bootstrap_servers, stop=stop,
                         metrics=metrics, on_phase=on_phase, snapshot_metrics=snapshot_metrics,
                         chunk_executor=chunk_executor)
