"""One partition's pipeline (a MongoDB replica set, a PostgreSQL slot, a MySQL/MariaDB server) as a managed
service: held under a Redis lease, told to stop through Redis within a second, and reporting its metrics once a
second.

The control listener must outlive anything a command does: each command is handled under its own try, a lost Redis
connection is reopened, and while it listens it renews `cdc:listening:<connector>:<replica set>` (the supervisor
revokes the lease of a pipeline that holds one but stopped listening). Should the listener thread still end, the
pipeline stops itself (the supervisor starts it again). Every command carrying a `request_id` is answered through
`acknowledge(kind, request_id, status, reason)`: stop commands once the pipeline stopped (after its final commit),
snapshots when taken up, done or refused.

Django-free on purpose: the Celery task (workers/streaming.py) supplies the configuration and the `report` and
`acknowledge` callbacks that store observed state and request outcomes.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis

from connectors import ConnectorError
from connectors.core.pipeline import Pipeline
from connectors.core.snapshot.executors import ChunkExecutorFactory
from connectors.core.source import Partition, Source
from connectors.sources import open_source
from web.connectors.connect import loggers
from workers.control import control_channel, listener_key
from workers.leases import Lease, LeaseKeeper, lease_key
from workers.snapshot_requests import SnapshotTracker

log = logging.getLogger(__name__)

STOPPING_COMMANDS = {"pause", "stop", "restart", "delete"}
PIPELINE_LOGGERS = ("connectors", "workers")  # what a pipeline logs under: the log-level command sets these
SNAPSHOT_SIGNALS = ("snapshot-stop", "snapshot-pause", "snapshot-resume")
SOURCE_STATUS_SECONDS = 10.0  # how often the source database is asked about the partition (a query each time)
LISTENER_DIED = "control-listener-died"
Acknowledge = Callable[[str, int, str, str], None]  # (kind "control" | "snapshot", request id, status, reason)


@dataclass
class Outcome:
    status: str  # "busy" (another worker holds the lease) | "stopped" | "snapshot-done" | "failed" | "lost-lease"
    reason: str = ""
    error: str | None = None


@dataclass
class ManagedPipeline:
    config: object  # the source's configuration (connectors.sources.engine_config)
    partition: Partition
    bootstrap_servers: str
    redis_client: redis.Redis
    worker: str
    report: Callable[[dict], None] = lambda state: None
    lease_ttl_ms: int = 10_000
    lease: Lease | None = None  # the lease it runs under (its value goes with its reports); default: a new one
    report_interval: float = 1.0
    chunk_executor: ChunkExecutorFactory | None = None  # who reads snapshot chunks (default: threads)
    acknowledge: Acknowledge = lambda kind, request_id, status, reason: None
    pending_snapshots: list[dict] = field(default_factory=list)  # stored requests: {"request_id", …, "status"}
    config_version: str | None = None  # web.connectors.definitions.config_version of the configuration it runs
    stop: threading.Event = field(default_factory=threading.Event)
    stop_reason: str = ""
    stop_requests: list[tuple[int, str]] = field(default_factory=list)  # (request id, command) answered at the end
    source: Source | None = None  # default: the one the configuration names
    _status_at: float = field(default=float("-inf"), init=False, repr=False)
    _last_status: dict | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.lease is None:
            self.lease = Lease(self.redis_client, lease_key(self.config.name, self.partition.name), self.worker,
                               self.lease_ttl_ms)

    def request_stop(self, reason: str) -> None:
        if not self.stop.is_set():
            self.stop_reason = reason
            self.stop.set()

    def run(self) -> Outcome:
        lease = self.lease
        if not lease.acquire():
            return Outcome("busy", "another worker holds the lease")
        self._listening = listener_key(self.config.name, self.partition.name)
        self._mark_listening()  # before the supervisor can see the lease without it
        keeper = LeaseKeeper(lease, lambda: self.request_stop("lost-lease"))
        keeper.start()
        source = self.source if self.source is not None else open_source(self.config)
        pipeline = Pipeline(self.config, source.open(self.partition), self.bootstrap_servers, stop=self.stop,
                            chunk_executor=self.chunk_executor)
        self.pipeline = pipeline
        self.snapshots = SnapshotTracker()
        self._handled_snapshots: set[int] = set()
        for request in self.pending_snapshots:
            self._take_snapshot(request, adopt=request.get("status") == "running")
        listener = threading.Thread(target=self._listen, name=f"control-{self.config.name}", daemon=True)
        reporter = threading.Thread(target=self._report_loop, args=(pipeline, listener), daemon=True)
        listener.start()
        reporter.start()
        outcome: Outcome | None = None
        try:
            status = pipeline.run()
            outcome = Outcome(status if not self.stop_reason == "lost-lease" else "lost-lease", self.stop_reason)
        except ConnectorError as error:
            outcome = Outcome("failed", self.stop_reason, str(error))
        except Exception as error:  # a bug: report it, never leave the lease hanging
            log.exception("pipeline %s/%s crashed", self.config.name, self.partition.name)
            outcome = Outcome("failed", self.stop_reason, f"{type(error).__name__}: {error}")
        finally:
            self.stop.set()
            keeper.stop()
            reporter.join(5)
            listener.join(2)
            self._send_report(pipeline, final=True)
            self._forget_listening()
            lease.release()
            self._answer_stop_requests(outcome)
        return outcome

    # -- the control listener ---------------------------------------------------------------------------------

    def _listen(self) -> None:
        """Until the pipeline stops: reconnects after Redis errors; no command can end it."""
        failures = 0
        while not self.stop.is_set():
            try:
                self._listen_once()
                failures = 0
            except redis.RedisError as error:
                failures += 1
                delay = min(5.0, 0.2 * 2 ** failures)
                log.warning("control channel of %s lost (%s); listening again in %.1fs", self.config.name, error,
                            delay)
                self.stop.wait(delay)
            except Exception:  # a bug in the loop itself: keep listening
                log.exception("control listener of %s/%s failed; listening again", self.config.name,
                              self.partition.name)
                self.stop.wait(0.5)

    def _listen_once(self) -> None:
        pubsub = self.redis_client.pubsub(ignore_subscribe_messages=True)
        try:
            pubsub.subscribe(control_channel(self.config.name))
            marked = 0.0
            while not self.stop.is_set():
                if time.monotonic() - marked >= self.report_interval:
                    self._mark_listening()
                    marked = time.monotonic()
                message = pubsub.get_message(timeout=0.2)
                if message is not None:
                    self._dispatch(message.get("data"))
        finally:
            pubsub.close()

    def _dispatch(self, data) -> None:
        try:
            command = json.loads(data)
            if not isinstance(command, dict):
                raise ValueError("not a JSON object")
        except (TypeError, ValueError) as error:
            log.warning("ignoring an unreadable control message for %s: %s", self.config.name, error)
            return
        try:
            self._handle(command)
        except Exception as error:  # noqa: BLE001 - one bad command must never stop the listener
            log.exception("control command %s for %s/%s failed", command.get("command"), self.config.name,
                          self.partition.name)
            payload = command.get("payload") if isinstance(command.get("payload"), dict) else {}
            kind = "snapshot" if command.get("command") == "snapshot" else "control"
            self._ack(kind, payload.get("request_id"), "failed", _reason(error))

    def _handle(self, command: dict) -> None:
        name = command.get("command")
        if command.get("replica_set") not in (None, self.partition.name):
            return
        payload = command.get("payload") if isinstance(command.get("payload"), dict) else {}
        if name in STOPPING_COMMANDS:
            if isinstance(payload.get("request_id"), int):
                self.stop_requests.append((payload["request_id"], name))
            self.request_stop(name)
        elif name == "snapshot":
            self._take_snapshot(payload)
        elif name in SNAPSHOT_SIGNALS:
            self._signal_snapshot(name, payload)
        elif name == "log-level":
            self._set_log_level(payload)

    def _take_snapshot(self, payload: dict, adopt: bool = False) -> None:
        request_id = payload.get("request_id")
        if request_id in self._handled_snapshots:
            return  # heard on the channel and loaded from the database
        wanted = payload.get("config_version")
        if wanted and self.config_version and wanted != self.config_version:
            # asked of a newer configuration: this pipeline is about to restart and its successor takes it up
            log.info("snapshot request %s is for another configuration of %s; left to the restarted pipeline",
                     request_id, self.config.name)
            return
        if request_id is not None:
            self._handled_snapshots.add(request_id)
        collections = [str(c) for c in payload.get("collections") or []]
        if adopt:
            self.snapshots.follow(request_id, collections, self.pipeline, adopted=True)
            return
        try:
            self.pipeline.request_incremental_snapshot(collections, payload.get("filter"))
        except Exception as error:  # noqa: BLE001 - refused by the engine: say why, keep listening
            log.warning("snapshot request %s for %s/%s refused: %s", request_id, self.config.name,
                        self.partition.name, error)
            self._ack("snapshot", request_id, "failed", _reason(error))
            return
        if request_id is not None:
            self.snapshots.follow(request_id, collections, self.pipeline)
        self._ack("snapshot", request_id, "running", f"taken up by {self.partition.name} on {self.worker}")

    def _signal_snapshot(self, name: str, payload: dict) -> None:
        """Debezium's stop-snapshot, pause-snapshot and resume-snapshot, asked through the control plane."""
        request_id = payload.get("request_id")
        incremental = getattr(self.pipeline, "incremental", None)
        state = getattr(incremental, "state", None)
        if state is None:
            verb = name.removeprefix("snapshot-")
            self._ack("control", request_id, "failed",
                      f"{self.partition.name} has no incremental snapshot running: nothing to {verb}")
            return
        if name == "snapshot-stop":
            collections = [str(c) for c in payload.get("collections") or []] or None
            self.pipeline.stop_incremental_snapshot(collections)
            what = f"stopping the incremental snapshot of {', '.join(collections)}" if collections else \
                "stopping its incremental snapshot"
        elif name == "snapshot-pause":
            self.pipeline.pause_incremental_snapshot()
            what = "pausing its incremental snapshot (streaming goes on)"
        else:
            self.pipeline.resume_incremental_snapshot()
            what = "resuming its incremental snapshot"
        self._ack("control", request_id, "done", f"{self.partition.name} on {self.worker}: {what}")

    def _set_log_level(self, payload: dict) -> None:
        """The pipeline's loggers in this process: the pipeline's own with CDC_PIPELINE_PROCESSES (the default),
        else every pipeline of the worker."""
        request_id = payload.get("request_id")
        try:
            level = loggers.parse_level(payload.get("level"))
        except loggers.UnknownLevel as error:
            self._ack("control", request_id, "failed", str(error))
            return
        for name in PIPELINE_LOGGERS:
            loggers.set_level(name, level)
        self._ack("control", request_id, "done", f"{self.partition.name} on {self.worker} logs "
                                                  f"{' and '.join(PIPELINE_LOGGERS)} at {loggers.level_name(level)}")

    def _ack(self, kind: str, request_id, status: str, reason: str) -> None:
        if not isinstance(request_id, int):
            return
        try:
            self.acknowledge(kind, request_id, status, reason)
        except Exception:  # noqa: BLE001 - storing the outcome must never stop the pipeline
            log.exception("could not store the outcome of %s request %s", kind, request_id)

    def _answer_stop_requests(self, outcome: Outcome | None) -> None:
        for request_id, command in self.stop_requests:
            if outcome is None or outcome.status == "failed":
                error = outcome.error if outcome is not None else "the pipeline crashed"
                self._ack("control", request_id, "failed", f"{self.partition.name} failed while stopping: {error}")
            else:
                then = " (the supervisor starts it again)" if command == "restart" else ""
                self._ack("control", request_id, "done",
                          f"{self.partition.name} stopped after committing its position{then}")

    def _mark_listening(self) -> None:
        try:
            self.redis_client.set(self._listening, self.worker, px=self.lease.ttl_ms)
        except redis.RedisError as error:
            log.debug("listening mark of %s not written: %s", self.config.name, error)

    def _forget_listening(self) -> None:
        try:
            self.redis_client.delete(self._listening)
        except redis.RedisError:
            pass  # it expires

    # -- reports ----------------------------------------------------------------------------------------------

    def _report_loop(self, pipeline: Pipeline, listener: threading.Thread) -> None:
        while not self.stop.wait(self.report_interval):
            if not listener.is_alive():
                log.error("the control listener of %s/%s ended; stopping so that the supervisor restarts it",
                          self.config.name, self.partition.name)
                self.request_stop(LISTENER_DIED)
            self._send_report(pipeline)
            self._check_snapshots(pipeline)

    def _check_snapshots(self, pipeline: Pipeline) -> None:
        try:
            streaming = pipeline.metrics.snapshot().get("phase") == "streaming"
            for request_id, status, reason in self.snapshots.check(pipeline, streaming):
                self._ack("snapshot", request_id, status, reason)
        except Exception:  # noqa: BLE001 - following requests must never stop the data path
            log.exception("following snapshot requests of %s/%s failed", self.config.name, self.partition.name)

    def _send_report(self, pipeline: Pipeline, final: bool = False) -> None:
        state = {
            "connector": self.config.name,
            "replica_set": self.partition.name,
            "worker": self.worker,
            "final": final,
            "metrics": pipeline.metrics.snapshot(),
            "sink": pipeline.sink.stats.snapshot(),
            "log_level": loggers.level_name(logging.getLogger(PIPELINE_LOGGERS[0]).getEffectiveLevel()),
        }
        snapshot_metrics = getattr(pipeline, "snapshot_metrics", None)
        if snapshot_metrics is not None:
            state["snapshot"] = snapshot_metrics.snapshot()
        source_status = self._source_status(pipeline, refresh=not final)
        if source_status is not None:
            state["source"] = source_status
        try:
            self.report(state)
        except Exception:  # reporting must never stop the data path
            log.exception("reporting metrics of %s/%s failed", self.config.name, self.partition.name)


    def _source_status(self, pipeline: Pipeline, refresh: bool) -> dict | None:
        """The partition's own state from its database (PartitionSource.status, e.g. a PostgreSQL slot's retained
        WAL), asked at most every SOURCE_STATUS_SECONDS; the last answer otherwise."""
        status_of = getattr(pipeline.source, "status", None)
        if status_of is None:
            return None
        now = time.monotonic()
        if refresh and now - self._status_at >= SOURCE_STATUS_SECONDS:
            self._status_at = now
            try:
                self._last_status = status_of()
            except ConnectorError as error:
                self._last_status = {"error": str(error)}
        return self._last_status


def _reason(error: BaseException) -> str:
    if isinstance(error, ConnectorError | ValueError):
        return str(error)
    return f"{type(error).__name__}: {error}"
