"""Runs one connector: discovers its replica sets and runs one pipeline per replica set, in threads.

Used by `python -m connectors run CONFIG.json` and, unchanged, by the Celery workers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from connectors.config import ConnectorConfig
from connectors.errors import ConnectorError
from connectors.metrics import StreamingMetrics
from connectors.mongodb.topology import ReplicaSet, discover
from connectors.pipeline import ReplicaSetPipeline
from connectors.snapshots import ChunkExecutorFactory

log = logging.getLogger(__name__)


class ConnectorRunner:
    def __init__(self, config: ConnectorConfig, bootstrap_servers: str, stop: threading.Event | None = None,
                 chunk_executor: ChunkExecutorFactory | None = None):
        self.config = config
        self.chunk_executor = chunk_executor
        self.bootstrap_servers = bootstrap_servers
        self.stop = stop or threading.Event()
        self.pipelines: dict[str, ReplicaSetPipeline] = {}
        self.errors: dict[str, BaseException] = {}

    def replica_sets(self) -> tuple[ReplicaSet, ...]:
        return discover(self.config.mongo_client_options()).replica_sets

    def pipeline(self, replica_set: ReplicaSet, on_phase: Callable[[str], None] | None = None) -> ReplicaSetPipeline:
        metrics = StreamingMetrics(self.config.name, replica_set.name)
        pipeline = ReplicaSetPipeline(
            self.config, replica_set, self.bootstrap_servers, stop=self.stop, metrics=metrics, on_phase=on_phase,
            chunk_executor=self.chunk_executor,
        )
        self.pipelines[replica_set.name] = pipeline
        return pipeline

    def run(self) -> dict[str, str]:
        """Runs every replica set's pipeline until stopped; returns how each ended."""
        outcomes: dict[str, str] = {}
        threads = []
        for replica_set in self.replica_sets():
            pipeline = self.pipeline(replica_set)

            def _run(rs=replica_set.name, p=pipeline):
                try:
                    outcomes[rs] = p.run()
                except ConnectorError as error:
                    log.error("pipeline %s/%s failed: %s", self.config.name, rs, error)
                    self.errors[rs] = error
                    outcomes[rs] = "failed"
                except Exception as error:
                    log.exception("pipeline %s/%s crashed", self.config.name, rs)
                    self.errors[rs] = error
                    outcomes[rs] = "failed"

            thread = threading.Thread(target=_run, name=f"pipeline-{replica_set.name}", daemon=True)
            thread.start()
            threads.append(thread)
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)
        return outcomes

    def metrics(self) -> dict[str, dict]:
        return {
            name: {**p.metrics.snapshot(), "sink": p.sink.stats.snapshot(), "snapshot": p.snapshot_metrics.snapshot()}
            for name, p in self.pipelines.items()
        }
