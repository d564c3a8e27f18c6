"""Runs one connector: discovers its source's partitions and runs one pipeline per partition, in threads.

Used by `python -m connectors run CONFIG.json` and, unchanged, by the Celery workers. The source comes from the
connector's `connector.class` (connectors.sources); MongoDB's partitions are its replica sets (or shards).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from connectors import ConnectorError
from connectors.core.metrics import StreamingMetrics
from connectors.core.pipeline import Pipeline
from connectors.core.snapshot.executors import ChunkExecutorFactory
from connectors.core.source import Partition, Source
from connectors.sources import open_source

log = logging.getLogger(__name__)


class ConnectorRunner:
    def __init__(self, config, bootstrap_servers: str, stop: threading.Event | None = None,
                 chunk_executor: ChunkExecutorFactory | None = None, source: Source | None = None):
        self.config = config
        self.chunk_executor = chunk_executor
        self.bootstrap_servers = bootstrap_servers
        self.stop = stop or threading.Event()
        self.source = source if source is not None else open_source(config)
        self.pipelines: dict[str, Pipeline] = {}
        self.errors: dict[str, BaseException] = {}

    def partitions(self) -> Sequence[Partition]:
        return self.source.partitions()

    def pipeline(self, partition: Partition, on_phase: Callable[[str], None] | None = None) -> Pipeline:
        metrics = StreamingMetrics(self.config.name, partition.name)
        pipeline = Pipeline(
            self.config, self.source.open(partition), self.bootstrap_servers, stop=self.stop, metrics=metrics,
            on_phase=on_phase, chunk_executor=self.chunk_executor,
        )
        self.pipelines[partition.name] = pipeline
        return pipeline

    def run(self) -> dict[str, str]:
        """Runs every partition's pipeline until stopped; returns how each ended."""
        outcomes: dict[str, str] = {}
        threads = []
        for partition in self.partitions():
            pipeline = self.pipeline(partition)

            def _run(name=partition.name, p=pipeline):
                try:
                    outcomes[name] = p.run()
                except ConnectorError as error:
                    log.error("pipeline %s/%s failed: %s", self.config.name, name, error)
                    self.errors[name] = error
                    outcomes[name] = "failed"
                except Exception as error:
                    log.exception("pipeline %s/%s crashed", self.config.name, name)
                    self.errors[name] = error
                    outcomes[name] = "failed"

            thread = threading.Thread(target=_run, name=f"pipeline-{partition.name}", daemon=True)
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
