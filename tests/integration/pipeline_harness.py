"""Test helper: run a connector's pipeline in a thread against the real Kafka and a replica set, and read
back what a read_committed consumer sees."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient

from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.snapshots import ChunkExecutorFactory
from connectors.runner import ConnectorRunner
from tests.integration.kafka_reading import Record, read_topic


def connector_config(name: str, uri: str, **props) -> ConnectorConfig:
    base = {
        "name": name,
        "topic.prefix": name,
        "mongodb.connection.string": uri,
        "offset.storage.topic": f"{name}.offsets",
        "poll.interval.ms": 100,
        "max.batch.size": 500,
    }
    base.update({key.replace("__", "."): value for key, value in props.items()})
    return ConnectorConfig.from_properties(base)


# Connectors started and not yet finished; a test that fails before its finish() leaves its pipeline running, and
# its threads (and their garbage-collector policy, its Kafka producers) would outlive it into later tests.
_unfinished: set[RunningConnector] = set()


def stop_unfinished(timeout: float = 30) -> list[str]:
    """Stops every connector a test started and did not finish; the names of those it stopped."""
    stopped = []
    for running in list(_unfinished):
        running.stop.set()
        running.thread.join(timeout)
        _unfinished.discard(running)
        stopped.append(running.config.name)
    return stopped


@dataclass(eq=False)
class RunningConnector:
    config: ConnectorConfig
    bootstrap: str
    stop: threading.Event = field(default_factory=threading.Event)
    runner: ConnectorRunner | None = None
    thread: threading.Thread | None = None
    outcome: dict | None = None
    error: BaseException | None = None
    chunk_executor: ChunkExecutorFactory | None = None  # who reads initial-snapshot chunks (tests gate them)

    def start(self) -> RunningConnector:
        self.runner = ConnectorRunner(self.config, self.bootstrap, self.stop, chunk_executor=self.chunk_executor)

        def _run():
            try:
                self.outcome = self.runner.run()
            except BaseException as error:  # noqa: BLE001 - surfaced by the test
                self.error = error

        self.thread = threading.Thread(target=_run, daemon=True)
        self.thread.start()
        _unfinished.add(self)
        return self

    def pipeline(self, timeout: float = 20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.runner and self.runner.pipelines:
                return next(iter(self.runner.pipelines.values()))
            assert self.error is None, self.error
            time.sleep(0.05)
        raise AssertionError("pipeline did not start")

    def wait_phase(self, phase: str, timeout: float = 30) -> None:
        pipeline = self.pipeline()
        deadline = time.monotonic() + timeout
        while pipeline.metrics.phase != phase:
            assert self.error is None, self.error
            assert pipeline.metrics.phase != "failed", pipeline.metrics.last_error
            assert time.monotonic() < deadline, f"phase is {pipeline.metrics.phase}, expected {phase}"
            time.sleep(0.05)

    def wait_streaming(self, timeout: float = 30) -> None:
        """Streaming, and the change stream is open (so later writes are seen)."""
        self.wait_phase("streaming", timeout)
        pipeline = self.pipeline()
        deadline = time.monotonic() + timeout
        while not pipeline.metrics.connected:
            assert time.monotonic() < deadline, "change stream never connected"
            time.sleep(0.05)

    def finish(self, timeout: float = 30) -> dict:
        self.stop.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "pipeline did not stop"
        _unfinished.discard(self)
        if self.error:
            raise self.error
        return self.outcome


def topic_exists(bootstrap: str, topic: str) -> bool:
    return topic in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics


def wait_for_events(bootstrap: str, topic: str, count: int, timeout: float = 30) -> list[Record]:
    """At least `count` non-tombstone records committed on `topic`."""
    deadline = time.monotonic() + timeout
    records: list[Record] = []
    while time.monotonic() < deadline:
        if topic_exists(bootstrap, topic):
            records = read_topic(bootstrap, topic)
            if sum(1 for r in records if r.value is not None) >= count:
                return records
        time.sleep(0.2)
    raise AssertionError(f"{topic}: expected {count} events, have {sum(1 for r in records if r.value)}")


def values(records: list[Record]) -> list[dict]:
    return [json.loads(r.value) for r in records if r.value is not None]
