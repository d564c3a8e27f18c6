"""One replica set's pipeline as a managed service: held under a Redis lease, told to stop through Redis within
a second, and reporting its metrics once a second.

Django-free on purpose: the Celery task (workers/streaming.py) supplies the configuration and a `report`
callback that stores observed state and feeds the dashboard.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import redis

from connectors.config import ConnectorConfig
from connectors.errors import ConnectorError
from connectors.mongodb.topology import ReplicaSet
from connectors.pipeline import ReplicaSetPipeline
from connectors.snapshots import ChunkExecutorFactory
from workers.leases import Lease, LeaseKeeper, lease_key

log = logging.getLogger(__name__)

STOPPING_COMMANDS = {"pause", "stop", "restart", "delete"}


def control_channel(connector: str) -> str:
    return f"cdc:control:{connector}"


@dataclass
class Outcome:
    status: str  # "busy" (another worker holds the lease) | "stopped" | "snapshot-done" | "failed" | "lost-lease"
    reason: str = ""
    error: str | None = None


@dataclass
class ManagedPipeline:
    config: ConnectorConfig
    replica_set: ReplicaSet
    bootstrap_servers: str
    redis_client: redis.Redis
    worker: str
    report: Callable[[dict], None] = lambda state: None
    lease_ttl_ms: int = 10_000
    report_interval: float = 1.0
    chunk_executor: ChunkExecutorFactory | None = None  # who reads snapshot chunks (default: threads)
    stop: threading.Event = field(default_factory=threading.Event)
    stop_reason: str = ""

    def request_stop(self, reason: str) -> None:
        if not self.stop.is_set():
            self.stop_reason = reason
            self.stop.set()

    def run(self) -> Outcome:
        lease = Lease(self.redis_client, lease_key(self.config.name, self.replica_set.name), self.worker,
                      self.lease_ttl_ms)
        if not lease.acquire():
            return Outcome("busy", "another worker holds the lease")
        keeper = LeaseKeeper(lease, lambda: self.request_stop("lost-lease"))
        keeper.start()
        pipeline = ReplicaSetPipeline(self.config, self.replica_set, self.bootstrap_servers, stop=self.stop,
                                      chunk_executor=self.chunk_executor)
        self.pipeline = pipeline
        listener = threading.Thread(target=self._listen, name=f"control-{self.config.name}", daemon=True)
        reporter = threading.Thread(target=self._report_loop, args=(pipeline,), daemon=True)
        listener.start()
        reporter.start()
        try:
            status = pipeline.run()
            outcome = Outcome(status if not self.stop_reason == "lost-lease" else "lost-lease", self.stop_reason)
        except ConnectorError as error:
            outcome = Outcome("failed", self.stop_reason, str(error))
        except Exception as error:  # a bug: report it, never leave the lease hanging
            log.exception("pipeline %s/%s crashed", self.config.name, self.replica_set.name)
            outcome = Outcome("failed", self.stop_reason, f"{type(error).__name__}: {error}")
        finally:
            self.stop.set()
            keeper.stop()
            reporter.join(5)
            listener.join(2)
            self._send_report(pipeline, final=True)
            lease.release()
        return outcome

    def _listen(self) -> None:
        pubsub = self.redis_client.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(control_channel(self.config.name))
        try:
            while not self.stop.is_set():
                message = pubsub.get_message(timeout=0.2)
                if message is None:
                    continue
                try:
                    command = json.loads(message["data"])
                except (TypeError, ValueError):
                    continue
                self._handle(command)
        except redis.RedisError as error:
            log.warning("control channel of %s lost: %s", self.config.name, error)
        finally:
            pubsub.close()

    def _handle(self, command: dict) -> None:
        name = command.get("command")
        if command.get("replica_set") not in (None, self.replica_set.name):
            return
        if name in STOPPING_COMMANDS:
            self.request_stop(name)
        elif name == "snapshot":
            trigger = getattr(self.pipeline, "request_incremental_snapshot", None)
            if trigger is None:
                log.warning("incremental snapshots are not available in this build")
                return
            payload = command.get("payload") or {}
            trigger(payload.get("collections") or [], payload.get("filter"))

    def _report_loop(self, pipeline: ReplicaSetPipeline) -> None:
        while not self.stop.wait(self.report_interval):
            self._send_report(pipeline)

    def _send_report(self, pipeline: ReplicaSetPipeline, final: bool = False) -> None:
        state = {
            "connector": self.config.name,
            "replica_set": self.replica_set.name,
            "worker": self.worker,
            "final": final,
            "metrics": pipeline.metrics.snapshot(),
            "sink": pipeline.sink.stats.snapshot(),
        }
        snapshot_metrics = getattr(pipeline, "snapshot_metrics", None)
        if snapshot_metrics is not None:
            state["snapshot"] = snapshot_metrics.snapshot()
        try:
            self.report(state)
        except Exception:  # reporting must never stop the data path
            log.exception("reporting metrics of %s/%s failed", self.config.name, self.replica_set.name)
