"""A source made for the tests: a table computed in memory, run through the real core (connectors.core), Kafka
transactions and offsets. It proves the seam: the core drives it exactly as it drives MongoDB.

The "database" is deterministic, so a process killed with -9 finds the same data when it starts again:

- table `t`: rows 0..ROWS-1, each `{"id": i, "v": 0}` before any change;
- change log: change `seq` (1, 2, …) sets `v = seq` on row `seq * 7 % ROWS`. Only the changes up to the *head*
  exist; the head is a number in a file the test writes (a database whose writes the test makes).

A position is the seq of the last change read (an int). The offset record is this source's own layout (not
MongoDB's): key `["<connector>",{"partition":"p0"}]`, value `{"seq": …, "snapshot": …, …}` as JSON.

`python -m tests.faults.memory_source CONFIG.json BOOTSTRAP` runs a connector of it in the foreground (SIGTERM
stops it). With CDC_TEST_HOLD_COMMIT=K the K-th transaction of the process is held open once its messages are
produced: the process writes CDC_TEST_HOLD_MARK and waits there, for the test to kill it inside a transaction.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import sys
import threading
from dataclasses import dataclass
from typing import Any

from connectors import ConnectorError
from connectors.config.types import CleanupPolicy, MessageTooLargePolicy
from connectors.core.snapshot.chunks import Chunk, Plan
from connectors.core.snapshot.executors import ChunkInterrupted, ChunkTask, SnapshotContext
from connectors.core.snapshot.progress import SnapshotProgress, SnapshotStart
from connectors.core.source import ChangeSummary, Start, StoredOffset
from connectors.core.stream import Backoff, ChangeQueue, Idle, ReaderFailed
from connectors.kafka.sink import OutMessage
from connectors.runner import ConnectorRunner

ROWS = 1000
TABLE = "t"
PARTITION = "p0"


def row_of(seq: int) -> int:
    return seq * 7 % ROWS


@dataclass
class MemoryConfig:
    """The core's configuration protocol (connectors.core.config.EngineConfig) and the head file."""

    name: str
    head_file: str
    offset_storage_topic: str
    snapshot_mode: str = "initial"
    max_batch_size: int = 64
    max_queue_size: int = 1000
    max_queue_size_in_bytes: int = 0
    poll_interval_ms: int = 50
    heartbeat_interval_ms: int = 0
    connect_backoff_initial_delay_ms: int = 100
    connect_backoff_max_delay_ms: int = 2000
    connect_max_attempts: int = 8
    offset_storage_partitions: int = 1
    topic_creation_partitions: int = 1
    topic_creation_replication_factor: int = -1
    topic_creation_max_message_bytes: int = -1
    producer_max_request_size: int = 1_000_000
    snapshot_delay_ms: int = 0
    snapshot_chunk_size: int = 100
    snapshot_chunk_max_bytes: int = 0
    snapshot_fetch_size: int = 0
    snapshot_max_threads: int = 2
    message_too_large_policy: MessageTooLargePolicy = MessageTooLargePolicy.FAIL
    topic_creation_cleanup_policy: CleanupPolicy = CleanupPolicy.DELETE

    @property
    def errors_topic_name(self) -> str:
        return f"{self.name}.errors"

    @property
    def topic(self) -> str:
        return f"{self.name}.{TABLE}"

    def snapshot_filter(self, collection: str) -> Any:
        return None

    @classmethod
    def from_json(cls, value: dict) -> MemoryConfig:
        return cls(**value)


def read_head(path: str) -> int:
    try:
        with open(path) as handle:
            return int(handle.read().strip() or 0)
    except FileNotFoundError:
        return 0


class MemoryBuilder:
    """EventBuilder: a change or a snapshot row → one JSON message keyed by the row id."""

    def __init__(self, config: MemoryConfig):
        self.topic = config.topic

    def message(self, op: str, row: int, value: int, seq: int, snapshot: str | None = None) -> OutMessage:
        event = {"op": op, "after": {"id": row, "v": value}, "source": {"seq": seq, "snapshot": snapshot}}
        return OutMessage(self.topic, json.dumps({"id": row}).encode(), json.dumps(event).encode())

    def build(self, change: dict):
        return "u", [self.message("u", change["row"], change["seq"], change["seq"])]

    def describe(self, change: dict) -> ChangeSummary:
        return ChangeSummary(None, None, {"seq": change["seq"]}, {"op": "u", "row": change["row"]})

    def idle(self) -> list:
        return []

    def heartbeat(self) -> list:
        return []

    def transaction_state(self) -> dict | None:
        return None


class MemoryReader(threading.Thread):
    """The change reader: changes after `position` up to the head, then Idle markers while waiting for more."""

    def __init__(self, config: MemoryConfig, position: int, changes: ChangeQueue, stop: threading.Event):
        super().__init__(name="memory-reader", daemon=True)
        self.config, self.position, self.queue, self.stop = config, position, changes, stop

    def _put(self, item) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.2)
                return True
            except queue.Full:  # the pipeline is behind: wait for it
                continue
        return False

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                head = read_head(self.config.head_file)
                if self.position < head:
                    self.position += 1
                    if not self._put({"seq": self.position, "row": row_of(self.position)}):
                        return
                    continue
                if not self._put(Idle(self.position)):
                    return
                self.stop.wait(0.05)
        except BaseException as error:  # noqa: BLE001 - handed to the pipeline
            self._put(ReaderFailed(error))


class MemorySnapshotReader:
    def __init__(self, config: MemoryConfig):
        self.config = config

    def capture_start(self) -> SnapshotStart:
        # The table's rows are its state before change 1: streaming after the snapshot starts at seq 0.
        return SnapshotStart(0, 0, {"position": 0})

    def collections(self) -> list[str]:
        return [TABLE]

    def plan(self, collection: str, chunk_size: int) -> Plan:
        bounds = list(range(0, ROWS, chunk_size)) + [ROWS - 1]
        return Plan(bounds, ROWS, "ids")

    def read_chunk(self, builder: MemoryBuilder, chunk: Chunk, read_at, filter, mark_last: bool,  # noqa: A002
                   stop) -> tuple[list, int]:
        upper = chunk.upper + 1 if chunk.upper_inclusive else chunk.upper
        rows = list(range(chunk.lower, upper))
        messages = []
        for row in rows:
            if stop is not None and stop.is_set():
                raise ChunkInterrupted(chunk.label)
            last = mark_last and row == rows[-1]
            messages.append(builder.message("r", row, 0, read_at, "last" if last else "true"))
        return messages, len(rows)

    def resume(self, progress) -> None:
        pass

    def where_read(self, chunk: Chunk) -> None:
        return None

    def chunk_failure(self, error: BaseException, chunk: Chunk, remote: bool) -> BaseException | None:
        return error


@dataclass(frozen=True)
class MemoryPartition:
    name: str


class MemoryPartitionSource:
    progress_type = SnapshotProgress  # the core's: the start fields are plain JSON ({"position": seq})
    chunk_task_type = ChunkTask  # the core's: plain JSON bounds

    def __init__(self, config: MemoryConfig, partition: MemoryPartition):
        self.config = config
        self.name = partition.name

    def offset_key(self) -> bytes:
        return json.dumps([self.config.name, {"partition": self.name}], separators=(",", ":")).encode()

    def decode_offset(self, value: bytes) -> StoredOffset:
        document = json.loads(value)
        return StoredOffset(document.get("seq"), document.get("snapshot"), document.get("startup"),
                            document.get("transaction"), document.get("incremental_snapshot"))

    def offset_record(self, position, *, snapshot=None, startup=None, extra=None):
        return MemoryOffset(self.offset_key(), {"seq": position, "snapshot": snapshot, "startup": startup,
                                                **(extra or {})})

    def connect(self, metrics, stop=None) -> None:
        metrics.record_connected()

    def close(self) -> None:
        pass

    def resume_start(self, position: int) -> Start:
        return Start(position, f"resuming after seq {position}")

    def start_from_startup(self, startup: dict) -> Start | None:
        return None

    def start_from_config(self) -> Start | None:
        return None

    def event_builder(self, transaction_state=None) -> MemoryBuilder:
        return MemoryBuilder(self.config)

    def open_reader(self, position, changes: ChangeQueue, metrics, backoff: Backoff, stop) -> MemoryReader:
        return MemoryReader(self.config, position or 0, changes, stop)

    @staticmethod
    def position_after(item, previous):
        if isinstance(item, Idle):
            return item.position if item.position is not None else previous
        return item["seq"]

    def snapshot_reader(self) -> MemorySnapshotReader:
        return MemorySnapshotReader(self.config)

    def snapshot_context(self, config, bootstrap_servers, reader, stop, metrics) -> SnapshotContext:
        return SnapshotContext(config, MemoryPartition(self.name), bootstrap_servers, reader, stop, metrics,
                               lambda: MemoryBuilder(self.config))

    def self_committing_executor(self, context):
        raise ConnectorError("the memory source hands no chunk to other workers")

    def incremental(self, pipeline, metrics):
        return None


@dataclass(frozen=True)
class MemoryOffset:
    key: bytes
    document: dict

    def to_value(self) -> bytes:
        return json.dumps(self.document, separators=(",", ":")).encode()


class MemorySource:
    def __init__(self, config: MemoryConfig):
        self.config = config

    def partitions(self) -> list[MemoryPartition]:
        return [MemoryPartition(PARTITION)]

    def open(self, partition: MemoryPartition) -> MemoryPartitionSource:
        return MemoryPartitionSource(self.config, partition)


class HoldingRunner(ConnectorRunner):
    """Holds the `hold`-th transaction of this process open once its messages are produced (0: none), writing
    `mark` then, and waits there until killed."""

    def __init__(self, *args, hold: int = 0, mark: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.hold, self.mark, self.commits = hold, mark, 0

    def pipeline(self, partition, on_phase=None):
        pipeline = super().pipeline(partition, on_phase)
        if self.hold:
            pipeline.sink.before_commit = self._before_commit
        return pipeline

    def _before_commit(self) -> None:
        self.commits += 1
        if self.commits == self.hold:
            with open(self.mark, "w") as handle:
                handle.write(str(self.commits))
            threading.Event().wait()


def main(argv: list[str]) -> int:
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with open(argv[0]) as handle:
        config = MemoryConfig.from_json(json.load(handle))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runner = HoldingRunner(config, argv[1], stop, source=MemorySource(config),
                           hold=int(os.environ.get("CDC_TEST_HOLD_COMMIT") or 0),
                           mark=os.environ.get("CDC_TEST_HOLD_MARK", ""))
    outcomes = runner.run()
    print(json.dumps({"outcomes": outcomes, "errors": {k: str(v) for k, v in runner.errors.items()}}), flush=True)
    return 1 if runner.errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
